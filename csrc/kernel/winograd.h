// Winograd convolution: a window matmul (kernel/window.h) that is a 3x3, stride-1, undilated
// convolution of one group, with constant sizes, can run as Winograd's F(m x m, 3x3), m = 2 or
// 4: each (m + 2)^2 tile of the input transformed (B^T d B), multiplied per channel pair with
// the transformed 3x3 filter (G g G^T) as (m + 2)^2 GEMMs over the channels, and each product's
// tile transformed back into m x m outputs (A^T p A): 16 multiplies for 4 outputs (m = 2) or
// 36 for 16 (m = 4) where the GEMM takes 9 an output. Schedule kWinogradParam m (ir/graph.h;
// the CPU's rules offer both beside window 1, timing decides).
// This file: the convolution's geometry, read from the window load's index and mask and checked
// at every output position and every step of k. Not the rendering (codegen/c/winograd.cc).
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"

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
  int64_t tile = 2;  // outputs a tile's side: F(tile x tile, 3x3), 2 or 4 (the schedule's)
  // output tiles: images * ceil(out_rows / tile) * ceil(out_cols / tile)
  int64_t tiles() const {
    return images * ((out_rows + tile - 1) / tile) * ((out_cols + tile - 1) / tile);
  }
};

// The tile `schedule` asks for (its kWinogradParam, where 2 or 4), or nullopt: no Winograd.
std::optional<int64_t> winograd_tile(const ScheduleParams& schedule);

// The geometry of matmul kernel `k` matched as `mm` (a window B, MatmulInfo::b_window; its
// loops but m and n of one iteration, every size constant, C stored row-major m by n), or
// nullopt where it is not such a convolution.
std::optional<WinogradConv> winograd_conv(const Kernel& k, const MatmulInfo& mm);

}  // namespace luminal
