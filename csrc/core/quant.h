// GGUF's quantized blocks read back as floats: the executable definition of a Cast from
// Q8_0, Q4_0, Q4_K, Q5_K or Q6_K, bit-identical to the `gguf` package's quants.dequantize (every
// product in f32, in its order). Block sizes live in core/dtype.h. Not here: quantizing
// (python/luminal/weights/gguf_write.py) or the kernels that read blocks (codegen/c_quant).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace luminal {

// Element `i` of quantized storage `data` of dtype `dtype` (i counts from the first value of
// the first block). InternalError for a dtype that is not quantized.
float dequantize_element(DType dtype, const uint8_t* data, int64_t i);

// The 6-bit scale and minimum of sub-block `sub` (< 8) of Q4_K or Q5_K block `block` (GGUF's
// get_scale_min_k4).
void k_quant_scale_min(const uint8_t* block, int64_t sub, int* sc, int* m);

}  // namespace luminal
