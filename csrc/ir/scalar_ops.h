// The scalar meaning of each elementwise primitive: what one element of a unary op, a binary op
// or a Cast computes, on values held in double. The one definition that the interpreter
// (runtime/native/native.cc), constant folding (egraph/analysis.cc) and the lowering's constants
// (kernel/lower.cc) call; the renderers' C prelude is tested against it
// (tests/test_scalar_semantics.py). Not here: bytes in buffers, reductions, index arithmetic.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "ir/op.h"

namespace luminal {

// Float -> Int: truncates toward zero, saturates to the i32 range, NaN gives 0.
int32_t float_to_int(double value);

// An integer as i32 arithmetic keeps it: modulo 2^32, two's complement.
int32_t wrap_to_i32(int64_t value);

// The value a store of `value` into `dtype` keeps: floats round to nearest even (f16 and bf16
// through f32), Int is float_to_int, Bool is 1 for anything nonzero (NaN included) and 0 for
// zero. A Cast gives round_to_dtype of its operand's value.
double round_to_dtype(double value, DType dtype);

// A unary op (float operands only) in double: log2, exp2, sin, sqrt, 1 / x. The result is then
// rounded to the operand's dtype.
double unary_eval(OpKind op, double x);

// A binary op on float operands in double: a + b, a * b, fmod(a, b), a < b (1 or 0).
double binary_float(OpKind op, double a, double b);

// A binary op on Int or Bool operands (i32 values, or 0 and 1). Int: + and * wrap like i32,
// Mod is the truncated remainder with x % 0 == 0, LessThan gives 1 or 0. Bool: Add is or, Mul
// is and.
int32_t binary_int(OpKind op, int64_t a, int64_t b, DType operand);

// binary_float or binary_int by the operands' dtype, before rounding to the result's dtype
// (the operands' dtype, or Bool for LessThan).
double binary_eval(OpKind op, DType operand, double a, double b);

}  // namespace luminal
