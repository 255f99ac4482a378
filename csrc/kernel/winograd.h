// Winograd convolution: a window matmul (kernel/window.h) that is a 3x3, stride-1, undilated
// convolution of one group, with constant sizes, can run as Winograd's F(2x2, 3x3): each 4x4
// tile of the input transformed (B^T d B), multiplied per channel pair with the transformed
// 3x3 filter (G g G^T) as 16 GEMMs over the channels, and each product's tile transformed back
// into 2x2 outputs (A^T m A): 16 multiplies for 4 outputs where the GEMM takes 36. Schedule
// kWinogradParam (ir/graph.h; the CPU's rules offer it beside window 1, timing decides).
// This file: the convolution's geometry, read from the window load's index and mask and checked
// at every output position and every step of k. Not the rendering (codegen/c/winograd.cc).
#pragma once

#include <cstdint>
#include <optional>

namespace luminal {

struct Kernel;
struct MatmulInfo;

// The input, out[m, n] = sum over (c, kh, kw) of w[m, c, kh, kw] * x[b, c, oh + kh - pad_h,
// ow + kw - pad_w] (zero outside rows [0, rows) and columns [0, cols)), with n = (b * out_rows
// + oh) * out_cols + ow and k = c * 9 + kh * 3 + kw. x[b, c, ih, iw] lies at origin + b *
// image_stride + c * channel_stride + ih * row_stride + iw * col_stride of B's buffer. Rows and
// columns past the last the convolution reads count as padding (rows, cols: one past it).
struct WinogradConv {
  int64_t images = 0, channels = 0, out_rows = 0, out_cols = 0;
  int64_t rows = 0, cols = 0, pad_h = 0, pad_w = 0;
  int64_t origin = 0, image_stride = 0, channel_stride = 0, row_stride = 0, col_stride = 0;
  // 2x2 output tiles: images * ceil(out_rows / 2) * ceil(out_cols / 2)
  int64_t tiles() const { return images * ((out_rows + 1) / 2) * ((out_cols + 1) / 2); }
};

// The geometry of matmul kernel `k` matched as `mm` (a window B, MatmulInfo::b_window; its
// loops but m and n of one iteration, every size constant, C stored row-major m by n), or
// nullopt where it is not such a convolution.
std::optional<WinogradConv> winograd_conv(const Kernel& k, const MatmulInfo& mm);

}  // namespace luminal
