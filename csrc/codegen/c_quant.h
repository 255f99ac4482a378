// Quantized weights (GGUF blocks, core/quant.h) in C-family kernels: the element reader each
// generated kernel calls where it loads a quantized buffer (lm_q8_0_at(p, i), a rendering of
// dequantize_element, checked against the interpreter), and the C renderer's GEMV path for a
// weight stored in blocks (CRenderer::emit_quant_gemv in c_quant.cc). Not the block layouts
// themselves (core/dtype.h, core/quant.h) nor the f32 GEMV (c_gemv.cc).
#pragma once

#include <string>

#include "kernel/kernel.h"

namespace luminal {

// The element readers of the quantized dtypes among `program`'s buffers, each declared with
// `qualifiers` ("static inline", "__device__ inline"); "" when it has none.
std::string quant_readers(const Program& program, const std::string& qualifiers);

// The expression reading element `index` of quantized buffer `buffer` as a float.
std::string quant_load(DType dtype, const std::string& buffer, const std::string& index);

// Whether the C renderer runs matmul kernel `k` by its quantized GEMV path: an f32 matmul
// whose B is a quantized buffer widened by a Cast (a Linear's weight W(N, K) in blocks), read
// in whole blocks along k (b_k == 1, K, b_n and B's offset multiples of the block), A f32 and
// contiguous along k, and a vector width dividing 16. It runs every M.
bool renders_quant_gemv(const Kernel& k);

}  // namespace luminal
