// The C renderer's attention kernels (kernel/attention.h): OpenMP over the outer loops and
// tiles of kAttnRows query rows; per tile the queries are gathered once, then each tile of
// kAttnKeys keys is gathered transposed, its scores computed as a small matmul (vectorized
// along the keys), and folded into each row's running max, sum and output by the online
// softmax (vectorized along the value features). Not the choice of what runs here (lowering).
#include <set>

#include "codegen/c.h"
#include "kernel/attention.h"

namespace luminal {

namespace {
constexpr int kAttnRows = 16;  // query rows sharing each tile of keys
constexpr int kAttnKeys = 64;  // keys per tile
}  // namespace

void CRenderer::emit_attention_cone(const Kernel& k, ValueId from,
                                    const std::set<ValueId>& stops, CodeWriter& w) const {
  std::set<std::string> bound;
  for (ValueId i : attention_cone(k, from, stops)) emit_value(k, i, bound, w);
}

bool CRenderer::render_attention(const Program& program, const Kernel& k, CodeWriter& w) const {
  (void)program;
  const AttentionInfo& a = k.attention;
  const Loop& ql = k.loops[a.query_loop];
  const Loop& dl = k.loops[a.value_loop];
  const Loop& keys = k.reduce[a.key_reduce];
  const Loop& dot = k.reduce[a.dot_reduce];
  const std::string nd = dot.extent.to_c();    // q/k features
  const std::string nv = dl.extent.to_c();     // v features
  const std::string rows = std::to_string(kAttnRows);
  const std::string tile = std::to_string(kAttnKeys);
  const std::string c = value_expr(k, a.scale);
  auto name = [](ValueId v) { return value_name(v); };
  auto loop = [&](const std::string& var, const std::string& from, const std::string& to) {
    w.open("for (int64_t " + var + " = " + from + "; " + var + " < " + to + "; " + var + "++)");
  };
  // The shift g of a running max held in `m`, into `g`.
  auto shift_of = [&](const std::string& m, const std::string& g) {
    w.open("");
    if (a.max >= 0) w.line("const float " + name(a.max) + " = " + m + ";");
    emit_attention_cone(k, a.shift, {a.max}, w);
    w.line(g + " = " + name(a.shift) + ";");
    w.close();
  };
  std::vector<Loop> outer;
  for (size_t i = 0; i < k.loops.size(); ++i) {
    if (int(i) != a.query_loop && int(i) != a.value_loop) outer.push_back(k.loops[i]);
  }
  outer.push_back(Loop{"lm_qt", (ql.extent + Expr(kAttnRows - 1)) / Expr(kAttnRows)});
  Expr work = ql.extent * keys.extent * (dot.extent + dl.extent);
  for (size_t i = 0; i + 1 < outer.size(); ++i) work = work * outer[i].extent;
  std::string team = omp_team(k, work.to_c());
  if (!team.empty()) {
    w.line("#pragma omp parallel for" + team + " schedule(dynamic) collapse(" +
           std::to_string(outer.size()) + ")");
  }
  for (const Loop& l : outer) loop(l.var, "0", l.extent.to_c());
  w.line("const int64_t lm_q0 = lm_qt * " + rows + ";");
  w.line("const int64_t lm_nq = " + ql.extent.to_c() + " - lm_q0 < " + rows + " ? " +
         ql.extent.to_c() + " - lm_q0 : " + rows + ";");
  w.line("float lm_q[" + rows + "][" + nd + "], lm_o[" + rows + "][" + nv + "];");
  w.line("float lm_m[" + rows + "], lm_l[" + rows + "];");
  w.line("float lm_kt[" + nd + "][" + tile + "], lm_s[" + rows + "][" + tile + "];");
  // The tile's queries, and each row's state: max -inf, sum 0, output 0.
  loop("lm_r", "0", "lm_nq");
  w.line("const int64_t " + ql.var + " = lm_q0 + lm_r;");
  loop(dot.var, "0", nd);
  emit_attention_cone(k, a.q, {}, w);
  w.line("lm_q[lm_r][" + dot.var + "] = " + name(a.q) + ";");
  w.close();
  w.line("lm_m[lm_r] = (-1.0f / 0.0f);");
  w.line("lm_l[lm_r] = 0.0f;");
  w.line("for (int64_t lm_d = 0; lm_d < " + nv + "; lm_d++) lm_o[lm_r][lm_d] = 0.0f;");
  w.close();
  // A row's shift from elsewhere (no max here) is the same for every key tile.
  w.open("for (int64_t lm_j0 = 0; lm_j0 < " + keys.extent.to_c() + "; lm_j0 += " + tile + ")");
  w.line("const int64_t lm_nk = " + keys.extent.to_c() + " - lm_j0 < " + tile + " ? " +
         keys.extent.to_c() + " - lm_j0 : " + tile + ";");
  loop("lm_jj", "0", "lm_nk");
  w.line("const int64_t " + keys.var + " = lm_j0 + lm_jj;");
  loop(dot.var, "0", nd);
  emit_attention_cone(k, a.k, {}, w);
  w.line("lm_kt[" + dot.var + "][lm_jj] = " + name(a.k) + ";");
  w.close();
  w.close();
  w.line("for (int64_t lm_jj = lm_nk; lm_jj < " + tile + "; lm_jj++) for (int64_t lm_e = 0; "
         "lm_e < " + nd + "; lm_e++) lm_kt[lm_e][lm_jj] = 0.0f;");
  // scores: lm_s = lm_q . lm_kt, vectorized along the keys
  loop("lm_r", "0", "lm_nq");
  w.line("float lm_acc[" + tile + "];");
  w.line("for (int lm_u = 0; lm_u < " + tile + "; lm_u++) lm_acc[lm_u] = 0.0f;");
  w.open("for (int64_t lm_e = 0; lm_e < " + nd + "; lm_e++)");
  w.line("const float lm_qe = lm_q[lm_r][lm_e];");
  w.line("#pragma omp simd");
  w.line("for (int lm_u = 0; lm_u < " + tile + "; lm_u++) lm_acc[lm_u] += lm_qe * "
         "lm_kt[lm_e][lm_u];");
  w.close();
  w.line("const int64_t " + ql.var + " = lm_q0 + lm_r;");
  // the scores' values (scale, masks) on each dot, and the tile's max
  w.line("float lm_bmax = (-1.0f / 0.0f);");
  loop("lm_jj", "0", "lm_nk");
  w.line("const int64_t " + keys.var + " = lm_j0 + lm_jj;");
  w.line("const float " + name(a.dot) + " = lm_acc[lm_jj];");
  emit_attention_cone(k, a.score, {a.dot}, w);
  w.line("lm_s[lm_r][lm_jj] = " + name(a.score) + ";");
  w.line("lm_bmax = lm_fmax_nan(lm_bmax, " + name(a.score) + ");");
  w.close();
  // the online softmax: new max and shift, old state rescaled by exp2(c * (g_old - g_new))
  w.line("const float lm_mnew = lm_fmax_nan(lm_m[lm_r], lm_bmax);");
  w.line("float lm_gold, lm_gnew;");
  shift_of("lm_m[lm_r]", "lm_gold");
  shift_of("lm_mnew", "lm_gnew");
  w.line("const float lm_alpha = " + online_weight(c, "lm_gold", "lm_gnew") + ";");
  w.line("float lm_psum = 0.0f;");
  loop("lm_jj", "0", "lm_nk");
  w.line("const float lm_p = " + online_weight(c, "lm_s[lm_r][lm_jj]", "lm_gnew") + ";");
  w.line("lm_s[lm_r][lm_jj] = lm_p;");
  w.line("lm_psum += lm_p;");
  w.close();
  w.line("lm_l[lm_r] = lm_l[lm_r] * lm_alpha + lm_psum;");
  w.line("lm_m[lm_r] = lm_mnew;");
  w.line("#pragma omp simd");
  w.line("for (int64_t lm_d = 0; lm_d < " + nv + "; lm_d++) lm_o[lm_r][lm_d] *= lm_alpha;");
  loop("lm_jj", "0", "lm_nk");
  w.line("const int64_t " + keys.var + " = lm_j0 + lm_jj;");
  w.line("const float lm_p = lm_s[lm_r][lm_jj];");
  w.line("#pragma omp simd");
  loop(dl.var, "0", nv);
  emit_attention_cone(k, a.value, {}, w);
  w.line("lm_o[lm_r][" + dl.var + "] += lm_p * " + name(a.value) + ";");
  w.close();
  w.close();
  w.close();  // rows
  w.close();  // key tiles
  // out = o * norm(sum), NaN where the final shift is not finite (as exp2(inf - inf) makes it)
  loop("lm_r", "0", "lm_nq");
  w.line("const int64_t " + ql.var + " = lm_q0 + lm_r;");
  w.line("float lm_g;");
  shift_of("lm_m[lm_r]", "lm_g");
  w.line("float lm_norm = 1.0f;");
  if (a.norm >= 0) {
    w.open("");
    if (a.sum >= 0) w.line("const float " + name(a.sum) + " = lm_l[lm_r];");
    if (a.max >= 0) w.line("const float " + name(a.max) + " = lm_m[lm_r];");
    std::set<ValueId> stops = {a.sum};
    if (a.max >= 0) stops.insert(a.max);
    emit_attention_cone(k, a.norm, stops, w);
    w.line("lm_norm = " + name(a.norm) + ";");
    w.close();
  }
  w.line("if (lm_g - lm_g != 0.0f) lm_norm = (0.0f / 0.0f);");
  loop(dl.var, "0", nv);
  w.line(buffer_name(k.out) + "[" + k.out_index.to_c() + "] = " +
         store_expr(k.values.back().dtype, "lm_o[lm_r][" + dl.var + "] * lm_norm") + ";");
  w.close();
  w.close();
  for (size_t i = 0; i < outer.size(); ++i) w.close();
  return true;
}

}  // namespace luminal
