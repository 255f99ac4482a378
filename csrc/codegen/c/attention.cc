// The C renderer's attention kernels (kernel/attention.h): OpenMP over the outer loops and
// tiles of kAttnRows query rows; per tile the queries are gathered once, then each tile of
// kAttnKeys keys, transposed, and its values, has its scores computed as a small matmul
// (vectorized along the keys) and folded into each row's running max, sum and output by the
// online softmax (vectorized along the value features). Where several tiles of query rows
// share the keys, each key tile is gathered once into a pack (groups of outer rows within
// kPackBytes: the pack stays in cache and is never a fresh allocation) instead of once per
// query tile. Not the choice of what runs here (lowering).
#include <set>

#include "codegen/c/renderer.h"
#include "codegen/c/schedule.h"
#include "kernel/attention.h"

namespace luminal {

namespace {
constexpr int kAttnRows = 64;  // query rows sharing each tile of keys (its gather)
constexpr int kAttnKeys = 64;  // keys per tile
constexpr int kAttnBlock = 16;  // columns of a register block (keys, value features)
// The pack of gathered key tiles of a group of outer rows, in bytes at most (one row's tiles
// at least).
constexpr int64_t kPackBytes = int64_t{8} << 20;

// The features of v rounded up to whole register blocks: the width of lm_o and lm_v.
int64_t padded_values(const Loop& value_loop) {
  return (*value_loop.extent.try_const() + kAttnBlock - 1) / kAttnBlock * kAttnBlock;
}

// "for (int64_t var = from; var < to; var++) {"
void open_loop(CodeWriter& w, const std::string& var, const std::string& from,
               const std::string& to) {
  w.open("for (int64_t " + var + " = " + from + "; " + var + " < " + to + "; " + var + "++)");
}
}  // namespace

void CRenderer::emit_attention_cone(const Kernel& k, ValueId from,
                                    const std::set<ValueId>& stops, CodeWriter& w) const {
  emit_cone(k, attention_cone(k, from, stops), w);
}

void CRenderer::emit_attention_bias(const Kernel& k, CodeWriter& w) const {
  const AttentionInfo& a = k.attention;
  const std::string rows = std::to_string(kAttnRows);
  const std::string tile = std::to_string(kAttnKeys);
  const std::string nd = k.reduce[a.dot_reduce].extent.to_c();
  w.line("/* the tile's bias (mask); where it is -inf throughout and q . k cannot overflow, every");
  w.line("   score of the tile is -inf: it adds nothing, and is skipped */");
  w.line("float lm_b[" + rows + "][" + tile + "];");
  w.line("int lm_live = 0;");
  w.open("for (int64_t lm_r = 0; lm_r < lm_nq; lm_r++)");
  w.line("const int64_t " + k.loops[a.query_loop].var + " = lm_q0 + lm_r;");
  w.line("#pragma omp simd reduction(|:lm_live)");
  w.open("for (int64_t lm_jj = 0; lm_jj < lm_nk; lm_jj++)");
  w.line("const int64_t " + k.reduce[a.key_reduce].var + " = lm_j0 + lm_jj;");
  emit_attention_cone(k, a.bias, {}, w);
  w.line("lm_b[lm_r][lm_jj] = " + value_name(a.bias) + ";");
  w.line("lm_live |= !(" + value_name(a.bias) + " == (-1.0f / 0.0f));");
  w.close();
  w.close();
  // the largest |k| of the tile, NaN if any is: where |q| * |k| * features * |scale| stays
  // below the f32 range, no score of the tile is anything but -inf
  w.open("if (!lm_live)");
  w.line("float lm_kmax = 0.0f;");
  w.line("int lm_knan = 0;");
  w.open("for (int64_t lm_jj = 0; lm_jj < lm_nk; lm_jj++)");
  w.line("const int64_t " + k.reduce[a.key_reduce].var + " = lm_j0 + lm_jj;");
  w.line("#pragma omp simd reduction(max:lm_kmax) reduction(|:lm_knan)");
  w.open("for (int64_t " + k.reduce[a.dot_reduce].var + " = 0; " + k.reduce[a.dot_reduce].var +
         " < " + nd + "; " + k.reduce[a.dot_reduce].var + "++)");
  emit_attention_cone(k, a.k, {}, w);
  w.line("const float lm_ka = " + value_name(a.k) + " < 0.0f ? -" + value_name(a.k) + " : " +
         value_name(a.k) + ";");
  w.line("lm_kmax = lm_ka > lm_kmax ? lm_ka : lm_kmax;");
  w.line("lm_knan |= lm_ka != lm_ka;");
  w.close();
  w.close();
  std::string c = a.dot_scale >= 0 ? value_expr(k, a.dot_scale) : "1.0f";
  w.line("const double lm_c = (double)" + c + ";");
  w.line("const double lm_bound = (double)lm_qmax * (double)lm_kmax * (double)" + nd +
         " * (lm_c < 0 ? -lm_c : lm_c);");
  w.line("if (!lm_knan && lm_bound < 1e38) continue;");
  w.close();
}

void CRenderer::emit_attention_gather(const Kernel& k, CodeWriter& w) const {
  const AttentionInfo& a = k.attention;
  const Loop& dl = k.loops[a.value_loop];
  const Loop& keys = k.reduce[a.key_reduce];
  const Loop& dot = k.reduce[a.dot_reduce];
  const std::string nd = dot.extent.to_c();  // q/k features
  const std::string tile = std::to_string(kAttnKeys);
  const std::string nvp = std::to_string(padded_values(dl));
  // The tile's keys, transposed (keys past the end 0).
  open_loop(w, "lm_jj", "0", "lm_nk");
  w.line("const int64_t " + keys.var + " = lm_j0 + lm_jj;");
  open_loop(w, dot.var, "0", nd);
  emit_attention_cone(k, a.k, {}, w);
  w.line("lm_kt[" + dot.var + "][lm_jj] = " + value_name(a.k) + ";");
  w.close();
  w.close();
  w.line("for (int64_t lm_jj = lm_nk; lm_jj < " + tile + "; lm_jj++) for (int64_t lm_e = 0; "
         "lm_e < " + nd + "; lm_e++) lm_kt[lm_e][lm_jj] = 0.0f;");
  // The tile's values (keys and features past the end 0).
  open_loop(w, "lm_jj", "0", tile);
  w.line("for (int64_t lm_d = 0; lm_d < " + nvp + "; lm_d++) lm_v[lm_jj][lm_d] = 0.0f;");
  w.close();
  open_loop(w, "lm_jj", "0", "lm_nk");
  w.line("const int64_t " + keys.var + " = lm_j0 + lm_jj;");
  w.line("#pragma omp simd");
  open_loop(w, dl.var, "0", dl.extent.to_c());
  emit_attention_cone(k, a.value, {}, w);
  w.line("lm_v[lm_jj][" + dl.var + "] = " + value_name(a.value) + ";");
  w.close();
  w.close();
}

void CRenderer::emit_attention_rows(const Kernel& k, CodeWriter& w) const {
  const AttentionInfo& a = k.attention;
  const std::string& query = k.loops[a.query_loop].var;
  const std::string& key = k.reduce[a.key_reduce].var;
  const std::string tile = std::to_string(kAttnKeys);
  const std::string nvp = std::to_string(padded_values(k.loops[a.value_loop]));
  const std::string c = value_expr(k, a.scale);
  open_loop(w, "lm_r", "0", "lm_nq");
  w.line("const int64_t " + query + " = lm_q0 + lm_r;");
  // the scores' values (scale, masks) on each dot, and the tile's max
  w.line("float lm_bmax = (-1.0f / 0.0f);");
  w.line("int lm_nan = 0;");
  w.line("#pragma omp simd reduction(max:lm_bmax) reduction(|:lm_nan)");
  open_loop(w, "lm_jj", "0", "lm_nk");
  w.line("const int64_t " + key + " = lm_j0 + lm_jj;");
  w.line("const float " + value_name(a.dot) + " = lm_s[lm_r][lm_jj];");
  std::set<ValueId> stops = {a.dot};
  if (a.bias >= 0) {
    w.line("const float " + value_name(a.bias) + " = lm_b[lm_r][lm_jj];");
    stops.insert(a.bias);
  }
  emit_attention_cone(k, a.score, stops, w);
  w.line("lm_s[lm_r][lm_jj] = " + value_name(a.score) + ";");
  const std::string score = value_name(a.score);
  w.line("lm_bmax = " + score + " > lm_bmax ? " + score + " : lm_bmax;");
  w.line("lm_nan |= " + score + " != " + score + ";");
  w.close();
  w.line("if (lm_nan) lm_bmax = (0.0f / 0.0f);");
  // the online softmax: new max and shift, old state rescaled by exp2(c * (g_old - g_new))
  w.line("const float lm_mnew = lm_fmax_nan(lm_m[lm_r], lm_bmax);");
  w.line("float lm_gold, lm_gnew;");
  emit_attention_shift(k, "lm_m[lm_r]", "lm_gold", w);
  emit_attention_shift(k, "lm_mnew", "lm_gnew", w);
  w.line("const float lm_alpha = " + online_weight(c, "lm_gold", "lm_gnew") + ";");
  w.line("float lm_psum = 0.0f;");
  // The weights over the whole tile (0 past lm_nk), by lm_exp2f_flush: a weight below 2^-127
  // of the row's largest is 0 (it adds nothing a float sum of at least 1 keeps), so -inf and
  // the rest cost no subnormal arithmetic (a microcode assist each on some cores: a causal
  // mask's scores are half -inf) and no test of their own.
  w.line("#pragma omp simd reduction(+:lm_psum)");
  open_loop(w, "lm_jj", "0", tile);
  w.line("const float lm_x = lm_s[lm_r][lm_jj];");
  w.line("const float lm_w = lm_x == lm_gnew ? 1.0f : lm_exp2f_flush(" + c +
         " * (lm_x - lm_gnew));");
  w.line("const float lm_p = lm_jj < lm_nk ? lm_w : 0.0f;");
  w.line("lm_s[lm_r][lm_jj] = lm_p;");
  w.line("lm_psum += lm_p;");
  w.close();
  w.line("lm_l[lm_r] = lm_l[lm_r] * lm_alpha + lm_psum;");
  w.line("lm_m[lm_r] = lm_mnew;");
  w.line("#pragma omp simd");
  w.line("for (int64_t lm_d = 0; lm_d < " + nvp + "; lm_d++) lm_o[lm_r][lm_d] *= lm_alpha;");
  w.close();  // rows
}

bool CRenderer::render_attention(const Program& program, const Kernel& k, CodeWriter& w) const {
  (void)program;
  const AttentionInfo& a = k.attention;
  const Loop& ql = k.loops[a.query_loop];
  const Loop& dl = k.loops[a.value_loop];
  const Loop& keys = k.reduce[a.key_reduce];
  const Loop& dot = k.reduce[a.dot_reduce];
  const std::string nd = dot.extent.to_c();  // q/k features
  const std::string nv = dl.extent.to_c();   // v features
  const int64_t nv_padded = padded_values(dl);
  const std::string nvp = std::to_string(nv_padded);
  const std::string rows = std::to_string(kAttnRows);
  const std::string tile = std::to_string(kAttnKeys);
  const std::string nq = ql.extent.to_c();
  const std::string nkeys = keys.extent.to_c();
  // The outer rows (every row loop but the queries'), run as one flat index lm_oi.
  std::vector<Loop> outer;
  for (int i : a.rows) {
    if (i != a.query_loop) outer.push_back(k.loops[i]);
  }
  Expr outer_count(1);
  for (const Loop& l : outer) outer_count = outer_count * l.extent;
  const std::string outer_rows = outer_count.to_c();
  auto bind_outer = [&](const std::string& flat) {
    w.line("int64_t lm_of = " + flat + ";");
    for (size_t i = outer.size(); i-- > 0;) {
      w.line("const int64_t " + outer[i].var + " = lm_of % (" + outer[i].extent.to_c() + ");");
      w.line("lm_of /= (" + outer[i].extent.to_c() + ");");
    }
  };
  Expr work = ql.extent * keys.extent * (dot.extent + dl.extent) * outer_count;
  const std::string team = omp_team(k, work.to_c());
  const int64_t tile_floats = *dot.extent.try_const() * kAttnKeys + kAttnKeys * nv_padded;
  // key tile `t` of the group's outer row lm_oi in the pack
  auto packed = [&](const std::string& t) {
    return "(lm_pack + (lm_oi * lm_nkt + " + t + ") * " + std::to_string(tile_floats) + ")";
  };
  w.line("const int64_t lm_nqt = (" + nq + " + " + rows + " - 1) / " + rows + ";");
  w.line("const int64_t lm_nkt = (" + nkeys + " + " + tile + " - 1) / " + tile + ";");
  // The pack: per outer row of the group, its key tiles (k transposed, then v), where more
  // than one tile of query rows reads them.
  w.line("int64_t lm_group = " + outer_rows + ";");
  w.line("float* lm_pack_raw = 0;");
  w.line("float* lm_pack = 0;");
  w.open("if (lm_nqt > 1)");
  w.line("lm_group = " + std::to_string(kPackBytes / (4 * tile_floats)) + " / lm_nkt;");
  w.line("if (lm_group < 1) lm_group = 1;");
  w.line("if (lm_group > " + outer_rows + ") lm_group = " + outer_rows + ";");
  w.line("lm_pack_raw = (float*)malloc(sizeof(float) * lm_group * lm_nkt * " +
         std::to_string(tile_floats) + " + 64);");
  w.line("lm_pack = (float*)(((unsigned long long)lm_pack_raw + 63) & ~63ull);");
  w.close();
  w.open("for (int64_t lm_g0 = 0; lm_g0 < " + outer_rows + "; lm_g0 += lm_group)");
  w.line("const int64_t lm_gn = " + outer_rows + " - lm_g0 < lm_group ? " + outer_rows +
         " - lm_g0 : lm_group;");
  w.open("if (lm_pack)");
  if (!team.empty()) w.line("#pragma omp parallel for" + team + " schedule(static) collapse(2)");
  open_loop(w, "lm_oi", "0", "lm_gn");
  open_loop(w, "lm_ti", "0", "lm_nkt");
  bind_outer("lm_g0 + lm_oi");
  w.line("const int64_t lm_j0 = lm_ti * " + tile + ";");
  w.line("const int64_t lm_nk = " + nkeys + " - lm_j0 < " + tile + " ? " + nkeys + " - lm_j0 : " +
         tile + ";");
  w.line("float (*lm_kt)[" + tile + "] = (float (*)[" + tile + "])" + packed("lm_ti") + ";");
  w.line("float (*lm_v)[" + nvp + "] = (float (*)[" + nvp + "])(" + packed("lm_ti") + " + " + nd +
         " * " + tile + ");");
  emit_attention_gather(k, w);
  w.close();
  w.close();
  w.close();
  if (!team.empty()) w.line("#pragma omp parallel for" + team + " schedule(dynamic) collapse(2)");
  open_loop(w, "lm_oi", "0", "lm_gn");
  open_loop(w, "lm_qt", "0", "lm_nqt");
  bind_outer("lm_g0 + lm_oi");
  w.line("const int64_t lm_q0 = lm_qt * " + rows + ";");
  w.line("const int64_t lm_nq = " + nq + " - lm_q0 < " + rows + " ? " + nq + " - lm_q0 : " +
         rows + ";");
  const std::string aligned = " __attribute__((aligned(64)))";
  w.line("float lm_q[" + rows + "][" + nd + "]" + aligned + ";");
  w.line("float lm_o[" + rows + "][" + nvp + "]" + aligned + ";");
  w.line("float lm_m[" + rows + "], lm_l[" + rows + "];");
  w.line("float lm_s[" + rows + "][" + tile + "]" + aligned + ";");
  w.line("float lm_kt_own[" + nd + "][" + tile + "]" + aligned + ";");
  w.line("float lm_v_own[" + tile + "][" + nvp + "]" + aligned + ";");
  w.line("float lm_qmax = 0.0f;  /* the largest |q| of the tile, NaN if any is */");
  // The tile's queries (rows past the end 0), each row's state: max -inf, sum 0, output 0.
  open_loop(w, "lm_r", "0", rows);
  w.line("for (int64_t lm_d = 0; lm_d < " + nvp + "; lm_d++) lm_o[lm_r][lm_d] = 0.0f;");
  w.line("for (int64_t lm_e = 0; lm_e < " + nd + "; lm_e++) lm_q[lm_r][lm_e] = 0.0f;");
  w.line("lm_m[lm_r] = (-1.0f / 0.0f);");
  w.line("lm_l[lm_r] = 0.0f;");
  w.close();
  open_loop(w, "lm_r", "0", "lm_nq");
  w.line("const int64_t " + ql.var + " = lm_q0 + lm_r;");
  open_loop(w, dot.var, "0", nd);
  emit_attention_cone(k, a.q, {}, w);
  w.line("lm_q[lm_r][" + dot.var + "] = " + value_name(a.q) + ";");
  const std::string q = value_name(a.q);
  w.line("lm_qmax = lm_fmax_nan(lm_qmax, " + q + " < 0.0f ? -" + q + " : " + q + ");");
  w.close();
  w.close();
  w.open("for (int64_t lm_j0 = 0; lm_j0 < " + nkeys + "; lm_j0 += " + tile + ")");
  w.line("const int64_t lm_nk = " + nkeys + " - lm_j0 < " + tile + " ? " + nkeys + " - lm_j0 : " +
         tile + ";");
  if (a.bias >= 0) emit_attention_bias(k, w);
  // the tile's keys and values: from the pack, or gathered here
  w.line("const float (*lm_ktp)[" + tile + "] = lm_kt_own;");
  w.line("const float (*lm_vp)[" + nvp + "] = lm_v_own;");
  w.open("if (lm_pack)");
  w.line("lm_ktp = (const float (*)[" + tile + "])" + packed("lm_j0 / " + tile) + ";");
  w.line("lm_vp = (const float (*)[" + nvp + "])(" + packed("lm_j0 / " + tile) + " + " + nd +
         " * " + tile + ");");
  w.close();
  w.open("else");
  w.line("float (*lm_kt)[" + tile + "] = lm_kt_own;");
  w.line("float (*lm_v)[" + nvp + "] = lm_v_own;");
  emit_attention_gather(k, w);
  w.close();
  // lm_s = lm_q . lm_kt: blocks of 4 rows x kAttnBlock keys held in registers
  emit_attention_block_product(w, "lm_s", "", "lm_q", "lm_ktp", nd, kAttnKeys);
  emit_attention_rows(k, w);
  // lm_o += lm_s . lm_v (rows past lm_nq have q = 0: their weights are 0, never stored)
  emit_attention_block_product(w, "lm_o", "lm_o", "lm_s", "lm_vp", tile, nv_padded);
  w.close();  // key tiles
  // out = o * norm(sum), NaN where the final shift is not finite (as exp2(inf - inf) makes it)
  open_loop(w, "lm_r", "0", "lm_nq");
  w.line("const int64_t " + ql.var + " = lm_q0 + lm_r;");
  emit_attention_finish(k, "lm_m[lm_r]", "lm_l[lm_r]", w);
  open_loop(w, dl.var, "0", nv);
  w.line(buffer_name(k.out) + "[" + k.out_index.to_c() + "] = " +
         store_expr(k.values.back().dtype, "lm_o[lm_r][" + dl.var + "] * lm_norm") + ";");
  w.close();
  w.close();
  w.close();  // query tiles
  w.close();  // outer rows
  w.close();  // groups
  w.line("free(lm_pack_raw);");
  return true;
}

void CRenderer::emit_attention_block_product(CodeWriter& w, const std::string& out,
                                             const std::string& init, const std::string& a,
                                             const std::string& b, const std::string& inner,
                                             int64_t cols) const {
  // Where the machine's registers are 16 floats wide: blocks of 6 rows by four vectors of
  // columns (24 accumulators of 32 registers: 10 loads per 24 FMAs), or 8 rows by two; else
  // 8 rows by one vector. The rows past the last whole block in blocks of 4.
  const int vecs = vector_width_ < 16 ? 1 : cols % (4 * kAttnBlock) == 0 ? 4
                                         : cols % (2 * kAttnBlock) == 0 ? 2 : 1;
  const int block_rows = vecs == 4 ? 6 : 8;
  const std::string bytes = std::to_string(kAttnBlock * 4);
  auto acc = [](int x, int v) { return "lm_c" + std::to_string(x) + "_" + std::to_string(v); };
  auto col = [](int v) { return "lm_cb + " + std::to_string(v * kAttnBlock); };
  w.open("");
  w.line("int64_t lm_rb = 0;");
  for (int rows : {block_rows, 4}) {
    const std::string n = std::to_string(rows);
    w.open(rows != 4 ? "for (; lm_rb + " + n + " <= lm_nq; lm_rb += " + n + ")"
                     : "for (; lm_rb < lm_nq; lm_rb += 4)");
    w.open("for (int64_t lm_cb = 0; lm_cb < " + std::to_string(cols) + "; lm_cb += " +
           std::to_string(vecs * kAttnBlock) + ")");
    w.line("typedef float lm_vec __attribute__((vector_size(" + bytes + ")));");
    for (int x = 0; x < rows; ++x) {
      std::string row = "[lm_rb + " + std::to_string(x) + "]";
      for (int v = 0; v < vecs; ++v) {
        w.line("lm_vec " + acc(x, v) + " = {0};");
        if (!init.empty()) {
          w.line("__builtin_memcpy(&" + acc(x, v) + ", &" + init + row + "[" + col(v) + "], " +
                 bytes + ");");
        }
      }
    }
    w.open("for (int64_t lm_e = 0; lm_e < " + inner + "; lm_e++)");
    for (int v = 0; v < vecs; ++v) {
      w.line("lm_vec lm_bv" + std::to_string(v) + ";");
      w.line("__builtin_memcpy(&lm_bv" + std::to_string(v) + ", &" + b + "[lm_e][" + col(v) +
             "], " + bytes + ");");
    }
    for (int x = 0; x < rows; ++x) {
      w.line("const float lm_a" + std::to_string(x) + " = " + a + "[lm_rb + " +
             std::to_string(x) + "][lm_e];");
      for (int v = 0; v < vecs; ++v) {
        w.line(acc(x, v) + " += lm_a" + std::to_string(x) + " * lm_bv" + std::to_string(v) +
               ";");
      }
    }
    w.close();
    for (int x = 0; x < rows; ++x) {
      for (int v = 0; v < vecs; ++v) {
        w.line("__builtin_memcpy(&" + out + "[lm_rb + " + std::to_string(x) + "][" + col(v) +
               "], &" + acc(x, v) + ", " + bytes + ");");
      }
    }
    w.close();
    w.close();
  }
  w.close();
}

}  // namespace luminal
