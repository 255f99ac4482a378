// Typed errors thrown by the C++ core, one class per row of core/errors.def. The bindings map
// each to a Python class under luminal.LuminalError (see python/luminal/errors.py). Not for
// control flow.
#pragma once

#include <stdexcept>
#include <string>

namespace luminal {

class LuminalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // The class's name, the Python class the bindings raise ("ShapeError", ...).
  virtual const char* class_name() const noexcept { return "LuminalError"; }
};

#define LUMINAL_ERROR(name, status)                                       \
  class name : public LuminalError {                                      \
   public:                                                                \
    using LuminalError::LuminalError;                                     \
    const char* class_name() const noexcept override { return #name; } \
  };
#include "core/errors.def"
#undef LUMINAL_ERROR

}  // namespace luminal
