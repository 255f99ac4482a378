// Dtype names, sizes (per element and per block) and the 16-bit float conversions.
#include "core/dtype.h"

#include <cstring>
#include <limits>
#include <string>

#include "core/errors.h"

namespace luminal {

namespace {

enum class Kind { Float, Half, Plain, Quantized };

struct DTypeFacts {
  const char* text;
  Kind kind;
  int64_t block_values, block_bytes;
};

const DTypeFacts& facts(DType dtype) {
  static const DTypeFacts table[] = {
#define LUMINAL_DTYPE(name, text, kind, values, bytes) {text, Kind::kind, values, bytes},
#include "core/dtypes.def"
#undef LUMINAL_DTYPE
  };
  const size_t i = static_cast<size_t>(dtype);
  if (i >= sizeof table / sizeof table[0]) throw InternalError("unknown dtype");
  return table[i];
}

constexpr DType kAllDTypes[] = {
#define LUMINAL_DTYPE(name, ...) DType::name,
#include "core/dtypes.def"
#undef LUMINAL_DTYPE
};

}  // namespace

const char* dtype_name(DType dtype) { return facts(dtype).text; }

DType dtype_from_name(const std::string& name) {
  std::string expected;
  for (DType d : kAllDTypes) {
    if (name == dtype_name(d)) return d;
    expected += std::string(expected.empty() ? "" : ", ") + dtype_name(d);
  }
  throw DTypeError("unknown dtype '" + name + "' (expected one of " + expected + ")");
}

size_t dtype_size(DType dtype) {
  if (facts(dtype).block_values != 1) {
    throw DTypeError(std::string("dtype ") + dtype_name(dtype) +
                     " is stored in blocks and has no per-element size (see storage_bytes)");
  }
  return static_cast<size_t>(facts(dtype).block_bytes);
}

bool is_quantized(DType dtype) { return facts(dtype).kind == Kind::Quantized; }

int64_t block_values(DType dtype) { return facts(dtype).block_values; }

int64_t block_bytes(DType dtype) { return facts(dtype).block_bytes; }

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

bool is_float(DType dtype) { return facts(dtype).kind == Kind::Float || is_half(dtype); }

bool is_half(DType dtype) { return facts(dtype).kind == Kind::Half; }

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
