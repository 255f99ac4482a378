// The CUDA renderer's row kernels (kernel/row_kernel.h): a warp per row, grid-stride over the
// rows. Each reduction is a loop of the lanes over the row and a butterfly shuffle (every
// lane gets the result), the row-scope values are computed by every lane, and the row's
// outputs are written by the lanes in one strided loop. Not the choice of what fuses.
#include <set>

#include "codegen/cuda/renderer.h"
#include "kernel/row_kernel.h"

namespace luminal {

void CudaRenderer::open_warp_per_row(const Program& program, const Kernel& k,
                                     const std::vector<int>& rows, const std::string& what,
                                     gpu::KernelLaunch& launch, CodeWriter& w) const {
  std::vector<Loop> outer;
  std::vector<Expr> extents;
  for (int i : rows) {
    outer.push_back(k.loops[i]);
    extents.push_back(k.loops[i].extent);
  }
  launch.mode = gpu::LaunchMode::kWarpPerItem;
  launch.items = product(extents);
  w.line("/* " + k.name + ": writes " + buffer_name(k.out) + "; " + what + " */");
  open_kernel(program, k, launch.block, w);
  w.line("const int lm_lane = threadIdx.x & 31;");
  w.open("for (int64_t lm_w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; lm_w < " +
         launch.items.to_c() + "; lm_w += ((int64_t)gridDim.x * blockDim.x) >> 5)");
  emit_unravel(outer, "lm_w", w);
}

std::string CudaRenderer::render_row_kernel(const Program& program, const Kernel& k,
                                            gpu::KernelLaunch& launch) const {
  const RowInfo& row = k.row;
  CodeWriter w;
  open_warp_per_row(program, k, row.rows,
                    "a warp per row, " + std::to_string(row.reductions.size()) + " reductions",
                    launch, w);
  std::set<std::string> bound;  // run-time symbols of the row scope
  int steps = static_cast<int>(row.reductions.size());
  for (int s = 0; s < steps; ++s) {
    for (ValueId i : row_values_before(k, s)) emit_value(k, i, bound, w);
    if (s == row.online) emit_online_loop(k, bound, w);
    bool merged = row.online >= 0 && (s == row.online || s == row.online + 1);
    if (merged) continue;  // the sum ran with the max
    const Value& red = k.values[row.reductions[s]];
    const Loop& loop = k.reduce[s];
    const std::string acc = value_name(row.reductions[s]);
    w.line(compute_type(red.dtype) + " " + acc + " = " + reduce_init(red) + ";");
    w.open("for (int64_t " + loop.var + " = lm_lane; " + loop.var + " < " + loop.extent.to_c() +
           "; " + loop.var + " += 32)");
    std::set<std::string> inner = bound;
    for (ValueId i : values_in(k, s)) emit_value(k, i, inner, w);
    w.line(acc + " = " + reduce_combine(red, acc, value_name(red.args[0])) + ";");
    w.close();
    w.line(acc + " = " + warp_reduce_fn(red) + "(" + acc + ");");
    if (red.dtype == DType::F16 || red.dtype == DType::BF16) {
      w.line(acc + " = " + round_to(red.dtype, acc) + ";");
    }
  }
  for (ValueId i : row_values_before(k, steps)) emit_value(k, i, bound, w);
  if (row.row_loop >= 0) {
    const Loop& l = k.loops[row.row_loop];
    w.open("for (int64_t " + l.var + " = lm_lane; " + l.var + " < " + l.extent.to_c() + "; " +
           l.var + " += 32)");
    std::set<std::string> inner = bound;
    for (ValueId i : values_in(k, steps)) emit_value(k, i, inner, w);
    w.line(store_statement(k));
    w.close();
  } else {
    w.open("if (lm_lane == 0)");
    w.line(store_statement(k));
    w.close();
  }
  w.close();
  w.close();
  return w.str();
}

void CudaRenderer::emit_online_loop(const Kernel& k, const std::set<std::string>& bound,
                                    CodeWriter& w) const {
  const OnlineNames o = online_names(k);
  const Loop& loop = k.reduce[k.row.online];
  emit_online_start(o, w);
  w.open("for (int64_t " + loop.var + " = lm_lane; " + loop.var + " < " + loop.extent.to_c() +
         "; " + loop.var + " += 32)");
  std::set<std::string> inner = bound;
  for (ValueId i : values_in(k, k.row.online)) emit_value(k, i, inner, w);
  w.line("const float " + o.m + "_new = lm_fmax_nan(" + o.m + ", " + o.x + ");");
  w.line(o.sum + " = " + o.sum + " * " + online_weight(o.c, o.m, o.m + "_new") + " + " +
         online_weight(o.c, o.x, o.m + "_new") + ";");
  w.line(o.m + " = " + o.m + "_new;");
  w.close();
  w.line("const float " + o.m + "_all = lm_warp_max(" + o.m + ");");
  w.line(o.sum + " = lm_warp_sum(" + o.sum + " * " + online_weight(o.c, o.m, o.m + "_all") + ");");
  w.line(o.m + " = " + o.m + "_all;");
  emit_online_finish(o, w);
}

}  // namespace luminal
