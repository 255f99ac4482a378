// Typed errors thrown by the C++ core. The bindings map each to a Python class under
// luminal.LuminalError (see python/luminal/errors.py). Not for control flow.
#pragma once

#include <stdexcept>
#include <string>

namespace luminal {

class LuminalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shapes that do not fit: mismatched dims, bad axes, wrong data length, unbound symbols.
class ShapeError : public LuminalError {
 public:
  using LuminalError::LuminalError;
};

// A dtype an op cannot take, or mixed dtypes where one is required.
class DTypeError : public LuminalError {
 public:
  using LuminalError::LuminalError;
};

// Generating or compiling a program failed.
class CompileError : public LuminalError {
 public:
  using LuminalError::LuminalError;
};

// A device or driver is missing or failed.
class DeviceError : public LuminalError {
 public:
  using LuminalError::LuminalError;
};

// A broken invariant inside luminal: a bug, never the user's fault.
class InternalError : public LuminalError {
 public:
  using LuminalError::LuminalError;
};

}  // namespace luminal
