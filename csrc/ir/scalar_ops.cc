// The per-op scalar semantics of ir/scalar_ops.h: the float meanings are ops.def's (like
// tinygrad's exec_alu), the integer and Bool ones a switch here. Every reader of an op's
// arithmetic calls these; none keeps a copy.
#include "ir/scalar_ops.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/errors.h"

namespace luminal {

int32_t float_to_int(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 2147483647.0) return std::numeric_limits<int32_t>::max();
  if (value <= -2147483648.0) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(value);
}

int32_t wrap_to_i32(int64_t value) { return static_cast<int32_t>(static_cast<uint32_t>(value)); }

double round_to_dtype(double value, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return static_cast<float>(value);
    case DType::F16:
      return f16_to_f32(f32_to_f16(static_cast<float>(value)));
    case DType::BF16:
      return bf16_to_f32(f32_to_bf16(static_cast<float>(value)));
    case DType::Int:
      return float_to_int(value);
    case DType::Bool:
      return (value != 0 || std::isnan(value)) ? 1.0 : 0.0;
    default:
      break;  // quantized: no value is rounded to a block dtype
  }
  throw InternalError("round_to_dtype: unknown dtype");
}

double unary_eval(OpKind op, double x) {
  if (!is_unary(op)) {
    throw InternalError(std::string("unary_eval: ") + op_name(op) + " is not a unary op");
  }
  return op_float_eval(op, x);
}

double binary_float(OpKind op, double a, double b) {
  if (!is_binary(op)) {
    throw InternalError(std::string("binary_float: ") + op_name(op) + " is not a binary op");
  }
  return op_float_eval(op, a, b);
}

int32_t binary_int(OpKind op, int64_t a, int64_t b, DType operand) {
  bool boolean = operand == DType::Bool;
  switch (op) {
    case OpKind::Add:
      return boolean ? (a || b) : wrap_to_i32(a + b);
    case OpKind::Mul:
      return boolean ? (a && b) : wrap_to_i32(a * b);
    case OpKind::Mod:
      return b == 0 ? 0 : wrap_to_i32(a % b);
    case OpKind::LessThan:
      return a < b ? 1 : 0;
    default:
      throw InternalError(std::string("binary_int: ") + op_name(op) + " is not a binary op");
  }
}

double binary_eval(OpKind op, DType operand, double a, double b) {
  if (is_float(operand)) return binary_float(op, a, b);
  return binary_int(op, static_cast<int64_t>(a), static_cast<int64_t>(b), operand);
}

}  // namespace luminal
