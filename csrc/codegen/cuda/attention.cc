// The CUDA renderer's attention kernels (kernel/attention.h): a warp per query row, grid-stride
// over the rows. For each key the lanes split the dot product q . k over the features (then a
// butterfly sum: every lane holds the score), every lane runs the online softmax on it, and
// each lane keeps the output features lane, lane + 32, ... of the row. Not the fastest layout
// (no tiles shared through shared memory); not the choice of what fuses.
#include <set>

#include "codegen/cuda/renderer.h"
#include "kernel/attention.h"

namespace luminal {

namespace {
constexpr int kWarp = 32;
}  // namespace

std::string CudaRenderer::render_attention_kernel(const Program& program, const Kernel& k,
                                                  gpu::KernelLaunch& launch) const {
  const AttentionInfo& a = k.attention;
  const Loop& dl = k.loops[a.value_loop];
  const Loop& keys = k.reduce[a.key_reduce];
  const Loop& dot = k.reduce[a.dot_reduce];
  const int64_t per_lane = (*dl.extent.try_const() + kWarp - 1) / kWarp;
  const std::string slots = std::to_string(per_lane);
  const std::string c = value_expr(k, a.scale);
  auto name = [](ValueId v) { return value_name(v); };
  CodeWriter w;
  auto emit_cone = [&](ValueId from, const std::set<ValueId>& stops) {
    CLikeRenderer::emit_cone(k, attention_cone(k, from, stops), w);
  };
  open_warp_per_row(program, k, a.rows, "attention, a warp per query row", launch, w);
  w.line("float lm_o[" + slots + "];");
  w.line("for (int lm_t = 0; lm_t < " + slots + "; lm_t++) lm_o[lm_t] = 0.0f;");
  w.line("float lm_m = (-1.0f / 0.0f), lm_l = 0.0f;");
  w.open("for (int64_t " + keys.var + " = 0; " + keys.var + " < " + keys.extent.to_c() + "; " +
         keys.var + "++)");
  // the dot, split over the lanes, then summed across the warp
  w.line("float lm_dot = 0.0f;");
  w.open("for (int64_t " + dot.var + " = lm_lane; " + dot.var + " < " + dot.extent.to_c() +
         "; " + dot.var + " += 32)");
  emit_cone(a.q, {});
  emit_cone(a.k, {});
  w.line("lm_dot += " + name(a.q) + " * " + name(a.k) + ";");
  w.close();
  w.line("const float " + name(a.dot) + " = lm_warp_sum(lm_dot);");
  emit_cone(a.score, {a.dot});
  w.line("const float lm_x = " + name(a.score) + ";");
  w.line("const float lm_mnew = lm_fmax_nan(lm_m, lm_x);");
  w.line("float lm_gold, lm_gnew;");
  emit_attention_shift(k, "lm_m", "lm_gold", w);
  emit_attention_shift(k, "lm_mnew", "lm_gnew", w);
  w.line("const float lm_alpha = " + online_weight(c, "lm_gold", "lm_gnew") + ";");
  w.line("const float lm_p = " + online_weight(c, "lm_x", "lm_gnew") + ";");
  w.line("lm_l = lm_l * lm_alpha + lm_p;");
  w.line("lm_m = lm_mnew;");
  w.open("for (int lm_t = 0; lm_t < " + slots + "; lm_t++)");
  w.line("const int64_t " + dl.var + " = lm_lane + 32 * lm_t;");
  w.line("float lm_v = 0.0f;");
  w.open("if (" + dl.var + " < " + dl.extent.to_c() + ")");
  emit_cone(a.value, {});
  w.line("lm_v = " + name(a.value) + ";");
  w.close();
  w.line("lm_o[lm_t] = lm_o[lm_t] * lm_alpha + lm_p * lm_v;");
  w.close();
  w.close();  // keys
  // out = o * norm(sum), NaN where the final shift is not finite
  emit_attention_finish(k, "lm_m", "lm_l", w);
  w.open("for (int lm_t = 0; lm_t < " + slots + "; lm_t++)");
  w.line("const int64_t " + dl.var + " = lm_lane + 32 * lm_t;");
  w.open("if (" + dl.var + " < " + dl.extent.to_c() + ")");
  w.line(buffer_name(k.out) + "[" + k.out_index.to_c() + "] = " +
         store_expr(k.values.back().dtype, "lm_o[lm_t] * lm_norm") + ";");
  w.close();
  w.close();
  w.close();
  w.close();
  return w.str();
}

}  // namespace luminal
