// One element of a GGUF block, as gguf-py's numpy dequantize_blocks computes it. Built with
// -ffp-contract=off (CMakeLists.txt): a fused multiply-add would round differently.
#include "core/quant.h"

#include <cstring>

#include "core/errors.h"

namespace luminal {

namespace {

float f16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return f16_to_f32(bits);
}

// Q8_0: d * q.
float q8_0(const uint8_t* block, int64_t j) {
  return static_cast<float>(static_cast<int8_t>(block[2 + j])) * f16_at(block);
}

// Q4_0: element j < 16 is the low nibble of byte j, j >= 16 the high nibble of byte j - 16;
// d * (q - 8).
float q4_0(const uint8_t* block, int64_t j) {
  const uint8_t byte = block[2 + j % 16];
  const int q = ((j < 16 ? byte : byte >> 4) & 0x0F) - 8;
  return f16_at(block) * static_cast<float>(q);
}

}  // namespace

void k_quant_scale_min(const uint8_t* block, int64_t sub, int* sc, int* m) {
  const uint8_t* scales = block + 4;
  if (sub < 4) {
    *sc = scales[sub] & 0x3F;
    *m = scales[sub + 4] & 0x3F;
  } else {
    *sc = (scales[sub + 4] & 0x0F) | ((scales[sub - 4] >> 2) & 0x30);
    *m = (scales[sub + 4] >> 4) | ((scales[sub] >> 2) & 0x30);
  }
}

namespace {

// Q4_K and Q5_K: eight sub-blocks of 32 with 6-bit scale and min each (packed in 12 bytes);
// sub-blocks 2c and 2c + 1 are the low and high nibbles of bytes [32c, 32c + 32) of the
// nibbles (at byte 16 in Q4_K, 48 in Q5_K); Q5_K's fifth bit of element 32s + r is bit s of
// byte r of the 32 at byte 16. (d * sc) * q - dmin * m.
float k_quant(const uint8_t* block, int64_t j, bool fifth_bit) {
  const int64_t sub = j / 32;
  int sc, m;
  k_quant_scale_min(block, sub, &sc, &m);
  const uint8_t byte = block[(fifth_bit ? 48 : 16) + (sub / 2) * 32 + j % 32];
  int q = (sub % 2 == 0 ? byte : byte >> 4) & 0x0F;
  if (fifth_bit) q |= ((block[16 + j % 32] >> sub) & 1) << 4;
  const float scale = f16_at(block) * static_cast<float>(sc);
  const float shift = f16_at(block + 2) * static_cast<float>(m);
  return scale * static_cast<float>(q) - shift;
}

// Q6_K: halves of 128; in half h, element 64s + c (s < 2) takes the low (s = 0) or high nibble
// of ql[64h + c] and bits 2t..2t+1 of qh[32h + c % 32] for t = (64s + c) / 32; sixteen int8
// scales, one per 16 values. (d * scale) * (q - 32).
float q6_k(const uint8_t* block, int64_t j) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
  const int64_t half = j / 128;
  const int64_t r = j % 128;
  const int low = (ql[half * 64 + r % 64] >> (4 * (r / 64))) & 0x0F;
  const int high = (qh[half * 32 + r % 32] >> (2 * (r / 32))) & 0x03;
  const int q = static_cast<int8_t>(low | (high << 4)) - 32;
  const float scale = f16_at(block + 208) * static_cast<float>(scales[j / 16]);
  return scale * static_cast<float>(q);
}

}  // namespace

float dequantize_element(DType dtype, const uint8_t* data, int64_t i) {
  const int64_t values = block_values(dtype);
  const uint8_t* block = data + (i / values) * block_bytes(dtype);
  const int64_t j = i % values;
  switch (dtype) {
    case DType::Q8_0:
      return q8_0(block, j);
    case DType::Q4_0:
      return q4_0(block, j);
    case DType::Q4_K:
      return k_quant(block, j, false);
    case DType::Q5_K:
      return k_quant(block, j, true);
    case DType::Q6_K:
      return q6_k(block, j);
    default:
      break;
  }
  throw InternalError(std::string("dequantize_element: ") + dtype_name(dtype) +
                      " is not quantized");
}

}  // namespace luminal
