// Dtype names, sizes (per element and per block) and the 16-bit float conversions.
#include "core/dtype.h"

#include <cstring>
#include <limits>
#include <string>

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
    case DType::Q8_0:
      return "q8_0";
    case DType::Q4_0:
      return "q4_0";
    case DType::Q4_K:
      return "q4_k";
    case DType::Q6_K:
      return "q6_k";
    case DType::Q5_K:
      return "q5_k";
  }
  throw InternalError("unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Int, DType::Bool, DType::Q8_0,
                  DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    if (name == dtype_name(d)) return d;
  }
  throw DTypeError("unknown dtype '" + name +
                   "' (expected f32, f16, bf16, int, bool, q8_0, q4_0, q4_k, q5_k or q6_k)");
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
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      break;
  }
  throw DTypeError(std::string("dtype ") + dtype_name(dtype) +
                   " is stored in blocks and has no per-element size (see storage_bytes)");
}

bool is_quantized(DType dtype) {
  return dtype == DType::Q8_0 || dtype == DType::Q4_0 || dtype == DType::Q4_K ||
         dtype == DType::Q5_K || dtype == DType::Q6_K;
}

// GGUF's block layouts (ggml-common.h): Q8_0 = f16 d, 32 x int8; Q4_0 = f16 d, 16 bytes of
// nibbles; Q4_K = f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles;
// Q5_K = Q4_K's head, 32 bytes of fifth bits, 128 bytes of nibbles;
// Q6_K = 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, f16 d.
int64_t block_values(DType dtype) {
  switch (dtype) {
    case DType::Q8_0:
    case DType::Q4_0:
      return 32;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return 256;
    default:
      return 1;
  }
}

int64_t block_bytes(DType dtype) {
  switch (dtype) {
    case DType::Q8_0:
      return 34;
    case DType::Q4_0:
      return 18;
    case DType::Q4_K:
      return 144;
    case DType::Q5_K:
      return 176;
    case DType::Q6_K:
      return 210;
    default:
      return static_cast<int64_t>(dtype_size(dtype));
  }
}

int64_t storage_bytes(DType dtype, int64_t count) {
  const int64_t values = block_values(dtype);
  if (count < 0 || count % values != 0) {
    throw ShapeError(std::to_string(count) + " elements of " + dtype_name(dtype) +
                     " are not a whole number of blocks of " + std::to_string(values));
  }
  const int64_t blocks = count / values;
  if (blocks > std::numeric_limits<int64_t>::max() / block_bytes(dtype)) {
    throw ShapeError(std::to_string(count) + " elements of " + dtype_name(dtype) +
                     " take more bytes than int64 holds");
  }
  return blocks * block_bytes(dtype);
}

int64_t elements_in(DType dtype, size_t itemsize, int64_t items) {
  if (!is_quantized(dtype)) {
    if (itemsize != dtype_size(dtype)) {
      throw DTypeError("set_data: elements of " + std::to_string(itemsize) +
                       " bytes cannot hold dtype " + dtype_name(dtype));
    }
    return items;
  }
  if (itemsize != 1 || items % block_bytes(dtype) != 0) {
    throw DTypeError(std::string("set_data: ") + dtype_name(dtype) +
                     " data must be raw bytes in whole blocks of " +
                     std::to_string(block_bytes(dtype)) + ", got " + std::to_string(items) +
                     " items of " + std::to_string(itemsize) + " bytes");
  }
  return items / block_bytes(dtype) * block_values(dtype);
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

bool is_half(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

bool is_narrow_storage(DType dtype) { return is_half(dtype) || is_quantized(dtype); }

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
