// Bindings of the per-op scalar semantics (ir/scalar_ops.h), so tests can hold the table
// against numpy and torch and against what each runtime computes. Plain numbers cross.
#include <nanobind/nanobind.h>

#include "ir/scalar_ops.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

void init_scalar(nb::module_& m) {
  m.def("float_to_int", &float_to_int, "value"_a);
  m.def("wrap_to_i32", &wrap_to_i32, "value"_a);
  m.def("round_to_dtype", &round_to_dtype, "value"_a, "dtype"_a);
  m.def("unary_eval", &unary_eval, "op"_a, "x"_a);
  m.def("binary_eval", &binary_eval, "op"_a, "operand"_a, "a"_a, "b"_a);
}

}  // namespace luminal
