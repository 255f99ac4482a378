// winograd_conv: a window matmul's convolution geometry (kernel/winograd.h). The window load's
// index and mask split into a part of the output position n and a part of the step k
// (window_parts); both are tabulated over every n and every k and fitted to a 3x3 stride-1
// convolution's: k as (c, kh, kw), n as (b, oh, ow) for some factorization of N, the mask as
// 0 <= ih < rows and 0 <= iw < cols. A fit that holds at every (n, k) reads what the kernel
// reads, so the Winograd kernel computes the kernel's sums whatever the graph spelled.
#include "kernel/winograd.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/window.h"

namespace luminal {

namespace {

// Tiles of more positions or steps are not tabulated (a compile-time cost).
constexpr int64_t kMaxTabulated = int64_t{1} << 22;

std::vector<int64_t> tabulate(const Expr& e, const std::string& var, int64_t count) {
  std::vector<int64_t> out(static_cast<size_t>(count));
  DynMap env;
  for (int64_t i = 0; i < count; ++i) {
    env[var] = i;
    out[static_cast<size_t>(i)] = e.eval(env);
  }
  return out;
}

// The tabulated load of the window: per part (index first, then each condition) its values
// along n and along k.
struct Tables {
  std::vector<std::vector<int64_t>> along_n, along_k;
  bool valid(int64_t n, int64_t k) const {  // every condition first + second > 0
    for (size_t p = 1; p < along_n.size(); ++p) {
      if (along_n[p][static_cast<size_t>(n)] + along_k[p][static_cast<size_t>(k)] <= 0) {
        return false;
      }
    }
    return true;
  }
};

// The fit of n as (b, oh, ow) with out_cols `ow_n` and out_rows `oh_n`, the rest of g as
// fitted along k; true when it holds at every n and every k of one channel.
bool fit_positions(const Tables& t, int64_t n_count, int64_t oh_n, int64_t ow_n,
                   WinogradConv& g) {
  const std::vector<int64_t>& index = t.along_n[0];
  g.out_rows = oh_n;
  g.out_cols = ow_n;
  g.images = n_count / (oh_n * ow_n);
  g.image_stride = g.images > 1 ? index[static_cast<size_t>(oh_n * ow_n)] - index[0] : 0;
  // the padding: the first kernel row and column read at the first position
  g.pad_h = g.pad_w = 3;
  for (int64_t kh = 0; kh < 3; ++kh) {
    for (int64_t kw = 0; kw < 3; ++kw) {
      if (!t.valid(0, kh * 3 + kw)) continue;
      g.pad_h = std::min(g.pad_h, kh);
      g.pad_w = std::min(g.pad_w, kw);
    }
  }
  if (g.pad_h > 2 || g.pad_w > 2) return false;
  g.origin = index[0] + g.pad_h * g.row_stride + g.pad_w * g.col_stride;
  // the last row and column read, over every valid (n, k)
  int64_t last_h = -1, last_w = -1;
  for (int64_t n = 0; n < n_count; ++n) {
    const int64_t oh = n / ow_n % oh_n, ow = n % ow_n, b = n / (oh_n * ow_n);
    const int64_t at = g.origin + b * g.image_stride + (oh - g.pad_h) * g.row_stride +
                       (ow - g.pad_w) * g.col_stride;
    if (index[static_cast<size_t>(n)] != at) return false;
    for (int64_t k = 0; k < 9; ++k) {
      if (!t.valid(n, k)) continue;
      last_h = std::max(last_h, oh + k / 3 - g.pad_h);
      last_w = std::max(last_w, ow + k % 3 - g.pad_w);
    }
  }
  g.rows = last_h + 1;
  g.cols = last_w + 1;
  for (int64_t n = 0; n < n_count; ++n) {
    const int64_t oh = n / ow_n % oh_n, ow = n % ow_n;
    for (int64_t k = 0; k < 9; ++k) {
      const int64_t ih = oh + k / 3 - g.pad_h, iw = ow + k % 3 - g.pad_w;
      const bool inside = ih >= 0 && ih < g.rows && iw >= 0 && iw < g.cols;
      if (inside != t.valid(n, k)) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<int64_t> winograd_tile(const ScheduleParams& schedule) {
  const std::optional<int64_t> tile = schedule_param(schedule, kWinogradParam);
  if (tile && (*tile == 2 || *tile == 4)) return tile;
  return std::nullopt;
}

std::optional<WinogradConv> winograd_conv(const Kernel& k, const MatmulInfo& mm) {
  if (!mm.present || !mm.b_window || k.reduce.size() != 1) return std::nullopt;
  std::map<std::string, Expr> folded;
  for (int i = 0; i < static_cast<int>(k.loops.size()); ++i) {
    if (i == mm.m_loop || i == mm.n_loop) continue;
    if (!is_one(k.loops[i].extent)) return std::nullopt;  // groups, batches of matmuls
    folded[k.loops[i].var] = 0;
  }
  const std::string& m = k.loops[mm.m_loop].var;
  const std::string& n = k.loops[mm.n_loop].var;
  const std::string& r = k.reduce.back().var;
  const std::optional<int64_t> rows = k.loops[mm.m_loop].extent.try_const();
  const std::optional<int64_t> cols = k.loops[mm.n_loop].extent.try_const();
  const std::optional<int64_t> depth = k.reduce.back().extent.try_const();
  if (!rows || !cols || !depth || *depth % 9 != 0 || *depth == 0 || *cols == 0) {
    return std::nullopt;
  }
  if (*cols > kMaxTabulated || *depth > kMaxTabulated) return std::nullopt;
  // C row-major, m by n; A constant strides
  const std::optional<Expr> c_m = affine_stride(k.out_index, m);
  const std::optional<Expr> c_n = affine_stride(k.out_index, n);
  if (!c_m || !c_n || !is_const(*c_m, *cols) || !is_one(*c_n)) return std::nullopt;
  if (!mm.a_m.is_const() || !mm.a_k.is_const()) return std::nullopt;
  const Value& b = k.values[mm.b];
  std::optional<WindowParts> parts =
      window_parts(b.index.substitute(folded), b.valid.substitute(folded), n, r);
  if (!parts) return std::nullopt;
  Tables t;
  for (const auto& [along_n, along_k] : parts->parts) {
    // nothing but n in n's part and k in k's (no run-time symbol, no row)
    for (const std::string& s : along_k.symbols()) {
      if (s != r) return std::nullopt;
    }
    for (const std::string& s : along_n.symbols()) {
      if (s != n) return std::nullopt;
    }
    t.along_n.push_back(tabulate(along_n, n, *cols));
    t.along_k.push_back(tabulate(along_k, r, *depth));
  }
  // k as (c, kh, kw): the index's steps, and a mask of (kh, kw) alone
  WinogradConv g;
  g.channels = *depth / 9;
  const std::vector<int64_t>& step = t.along_k[0];
  g.col_stride = step[1] - step[0];
  g.row_stride = step[3] - step[0];
  g.channel_stride = g.channels > 1 ? step[9] - step[0] : 0;
  for (int64_t q = 0; q < *depth; ++q) {
    const int64_t at = step[0] + q / 9 * g.channel_stride + q / 3 % 3 * g.row_stride +
                       q % 3 * g.col_stride;
    if (step[static_cast<size_t>(q)] != at) return std::nullopt;
    for (size_t p = 1; p < t.along_k.size(); ++p) {
      if (t.along_k[p][static_cast<size_t>(q)] != t.along_k[p][static_cast<size_t>(q % 9)]) {
        return std::nullopt;
      }
    }
  }
  // fold k's first step into n's part: the index is then along_n[0][n] + (step - step[0])
  for (int64_t& v : t.along_n[0]) v += step[0];
  // n as (b, oh, ow): the first factorization that fits at every position
  for (int64_t ow = 1; ow <= *cols; ++ow) {
    if (*cols % ow != 0) continue;
    for (int64_t oh = 1; oh <= *cols / ow; ++oh) {
      if (*cols / ow % oh != 0) continue;
      if (fit_positions(t, *cols, oh, ow, g)) return g;
    }
  }
  return std::nullopt;
}

}  // namespace luminal
