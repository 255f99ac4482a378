// Dtype names, sizes and the 16-bit float conversions.
#include "core/dtype.h"

#include <cstring>

#include "core/errors.h"

namespace luminal {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::Int:
      return "int";
    case DType::Bool:
      return "bool";
  }
  throw InternalError("unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Int, DType::Bool}) {
    if (name == dtype_name(d)) return d;
  }
  throw DTypeError("unknown dtype '" + name + "' (expected f32, f16, bf16, int or bool)");
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::Int:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::Bool:
      return 1;
  }
  throw InternalError("unknown dtype");
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

bool is_half(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

static uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint16_t f32_to_bf16(float value) {
  uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_to_f32(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_f16(float value) {
  uint32_t bits = float_bits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in f16: add a magic number so the FPU rounds for us.
    float magic = bits_float(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(magic) - float_bits(0.5f)));
  }
  uint32_t mantissa_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float f16_to_f32(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    float value = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // 2^-24
    return sign ? -value : value;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace luminal
