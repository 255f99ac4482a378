// The CUDA renderer's GEMV: C[m, n] = sum_k A[m, k] * B[k, n] for matmuls of few rows (decode:
// M = batch x 1) with B contiguous along k (b_k == 1: a Linear's weight W(N, K)). A warp per
// group of gemv_cols columns of C (rows of W) over (batch, n), or gemv_split warps of a block
// splitting k for the same group (their sums combined in shared memory: enough loads in flight
// when N is small); each pass over the group's rows of W serves gemv_rows rows of A, so W is
// read once when M <= gemv_rows. Lanes step along k with 16-byte loads of W (8 bf16/f16 words
// widened in registers, or 4 floats) where W's rows are aligned, A's k-run read by vector
// loads where aligned too (else element by element, from cache), f32 accumulators, shuffle
// reductions; the tail of K past the last whole vector is an element a lane. Any M is correct
// (a pass per gemv_rows rows); a matmul's epilogue (kernel/epilogue.h) runs on each sum as it
// is stored. Not the tiled kernels (cuda/matmul.cc).
#include <algorithm>
#include <map>

#include "codegen/cuda/renderer.h"

namespace luminal {

namespace {
using gpu::KernelLaunch;
using gpu::LaunchMode;

constexpr int kDefaultRows = 8;  // rows of A per pass over W
constexpr int kDefaultCols = 2;  // rows of W (columns of C) per warp: independent loads in flight
constexpr int kLoadBytes = 16;   // one vector load of W

std::string str(int64_t v) { return std::to_string(v); }

// "#pragma unroll" then "for (int v = 0; v < n; v++)", opened.
void open_unrolled(const std::string& v, int64_t n, CodeWriter& w) {
  w.line("#pragma unroll");
  w.open("for (int " + v + " = 0; " + v + " < " + str(n) + "; " + v + "++)");
}
}  // namespace

// What render_gemv's pieces share: its tuning (rows of A per pass, columns of C per warp, warps
// splitting k), its vector loads (elements of k a lane loads, A's loads of them and their raw
// type) and names (A's and W's buffers, the accumulator, C's row and column variables).
struct CudaRenderer::GemvPlan {
  int rows;
  int cols;
  int split;
  int64_t width;
  int64_t a_width;
  int64_t a_loads;
  std::string a_raw;
  std::string a;
  std::string b;
  std::string acc;
  std::string mv;
  std::string nv;
};

std::string CudaRenderer::render_gemv(const Program& program, const Kernel& k,
                                      KernelLaunch& launch) const {
  const MatmulInfo& mm = k.matmul;
  const CudaSchedule s = schedule_of(k);
  const int rows = s.gemv_rows > 0 ? s.gemv_rows : kDefaultRows;
  const int cols = s.gemv_cols > 0 ? s.gemv_cols : kDefaultCols;
  const int split = std::min(s.gemv_split > 0 ? s.gemv_split : 1, launch.block / 32);
  // Elements of k per step of a lane: one 16-byte load of W. A's run of them takes a_loads
  // loads of a_width elements (16 bytes, or 8 for a half A beside an f32 W).
  const int64_t width = kLoadBytes / static_cast<int64_t>(dtype_size(mm.b_stored));
  const int64_t a_size = static_cast<int64_t>(dtype_size(mm.a_stored));
  const int64_t a_width = std::min(width, kLoadBytes / a_size);
  const int64_t a_loads = width / a_width;
  const std::string a_raw = a_width * a_size == kLoadBytes ? "uint4" : "uint2";
  const std::string a = buffer_name(k.values[mm.a].buffer);
  const std::string b = buffer_name(k.values[mm.b].buffer);
  const std::string& mv = k.loops[mm.m_loop].var;
  const std::string& nv = k.loops[mm.n_loop].var;
  const std::string& kv = k.reduce[0].var;
  const Expr& n_extent = k.loops[mm.n_loop].extent;
  std::vector<Loop> batch(k.loops.begin(), k.loops.begin() + mm.m_loop);
  std::vector<Expr> batch_extents;
  for (const Loop& l : batch) batch_extents.push_back(l.extent);
  const Expr groups = (n_extent + Expr(cols - 1)) / Expr(cols);
  const Expr items = product(batch_extents) * groups;
  const std::string items_c = items.to_c();
  launch.mode = LaunchMode::kWarpPerItem;  // a warp per (group, part of k)
  launch.items = items * Expr(split);
  const std::map<std::string, Expr> origin = {{mv, Expr(0)}, {nv, Expr(0)}, {kv, Expr(0)}};
  const std::string acc = "lm_acc[i][c]";

  CodeWriter w;
  const std::string warps = split == 1 ? "a warp" : str(split) + " warps splitting k";
  w.line("/* " + k.name + ": writes " + buffer_name(k.out) + "; GEMV: " + warps + " per " +
         str(cols) + " columns, " + str(rows) + " rows of " + a + " per pass over " + b +
         ", 16-byte loads along k */");
  open_kernel(program, k, launch.block, w);
  if (split > 1) {
    w.line(shared("float lm_sums[" + str(launch.block / 32) + "][" + str(rows * cols) + "];"));
  }
  w.line("const int lm_lane = threadIdx.x & 31;");
  w.line("const int lm_part = (threadIdx.x >> 5) % " + str(split) + ";");
  w.line("const int64_t lm_per_block = blockDim.x / " + str(32 * split) + ";");
  w.line("const int64_t lm_M = " + k.loops[mm.m_loop].extent.to_c() + ";");
  w.line("const int64_t lm_N = " + n_extent.to_c() + ";");
  w.line("const int64_t lm_K = " + k.reduce[0].extent.to_c() + ";");
  w.line("const int64_t lm_am = " + mm.a_m.to_c() + ";");
  w.line("const int64_t lm_ak = " + mm.a_k.to_c() + ";");
  w.line("const int64_t lm_bk = " + mm.b_k.to_c() + ";");
  w.line("const int64_t lm_bn = " + mm.b_n.to_c() + ";");
  w.line("const int64_t lm_groups = " + groups.to_c() + ";");
  // Every warp of a block runs every pass (they meet at barriers); lm_live: its group exists.
  w.open("for (int64_t lm_base = (int64_t)blockIdx.x * lm_per_block; lm_base < " + items_c +
         "; lm_base += (int64_t)gridDim.x * lm_per_block)");
  w.line("const int64_t lm_w = lm_base + (threadIdx.x >> 5) / " + str(split) + ";");
  w.line("const bool lm_live = lm_w < " + items_c + ";");
  w.line("const int64_t lm_z = lm_w / lm_groups;");
  w.line("(void)lm_z;");
  emit_unravel(batch, "lm_z", w);
  w.line("const int64_t lm_n0 = lm_w % lm_groups * " + str(cols) + ";");
  w.line("const int64_t lm_a0 = " + k.values[mm.a].index.substitute(origin).to_c() + ";");
  w.line("const int64_t lm_b0 = " + k.values[mm.b].index.substitute(origin).to_c() + ";");
  // Columns past the last one read the last one and are not stored.
  w.line("int64_t lm_bc[" + str(cols) + "];");
  open_unrolled("c", cols, w);
  w.line("lm_bc[c] = lm_b0 + (lm_n0 + c < lm_N ? lm_n0 + c : lm_N - 1) * lm_bn;");
  w.close();
  w.line("const bool lm_bvec = lm_bk == 1 && lm_b0 % " + str(width) + " == 0 && lm_bn % " +
         str(width) + " == 0;");
  w.line("const bool lm_avec = lm_ak == 1 && lm_a0 % " + str(a_width) + " == 0 && lm_am % " +
         str(a_width) + " == 0;");
  w.line("const int64_t lm_kv = !lm_live ? 0 : lm_bvec ? lm_K / " + str(width) + " * " +
         str(width) + " : 0;");
  w.line("const int64_t lm_k_end = lm_live ? lm_K : 0;");
  w.open("for (int64_t lm_m0 = 0; lm_m0 < lm_M; lm_m0 += " + str(rows) + ")");
  w.line("const int64_t lm_rows = lm_M - lm_m0 < " + str(rows) + " ? lm_M - lm_m0 : " +
         str(rows) + ";");
  w.line("float lm_acc[" + str(rows) + "][" + str(cols) + "];");
  open_unrolled("i", rows, w);
  open_unrolled("c", cols, w);
  w.line(acc + " = 0.0f;");
  w.close();
  w.close();
  const GemvPlan plan{rows, cols, split, width, a_width, a_loads, a_raw, a, b, acc, mv, nv};
  emit_gemv_vectors(k, plan, w);
  emit_gemv_tail(k, plan, w);
  emit_gemv_store(k, plan, w);
  w.close();
  w.close();
  w.close();
  return w.str();
}
void CudaRenderer::emit_gemv_vectors(const Kernel& k, const GemvPlan& p, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  // Whole vectors: W's p.rows with 16-byte loads, then each row of A against them.
  w.line("#pragma unroll 2");
  w.open("for (int64_t lm_k = (int64_t)(lm_part * 32 + lm_lane) * " + str(p.width) +
         "; lm_k < lm_kv; lm_k += " + str(32 * p.split * p.width) + ")");
  w.line("float lm_b[" + str(p.cols) + "][" + str(p.width) + "];");
  open_unrolled("c", p.cols, w);
  w.line("const uint4 lm_raw = *(const " + global_pointer("uint4") + ")(" + p.b +
         " + lm_bc[c] + lm_k);");
  open_unrolled("u", p.width, w);
  w.line("lm_b[c][u] = " +
         to_compute(mm.b_stored,
                    "((const " + local_pointer(storage_type(mm.b_stored)) + ")&lm_raw)[u]") +
         ";");
  w.close();
  w.close();
  open_unrolled("i", p.rows, w);
  w.open("if (i < lm_rows)");
  w.line("const int64_t lm_ar = lm_a0 + (lm_m0 + i) * lm_am;");
  w.line("float lm_a[" + str(p.width) + "];");
  w.open("if (lm_avec)");
  w.line(p.a_raw + " lm_araw[" + str(p.a_loads) + "];");
  open_unrolled("q", p.a_loads, w);
  w.line("lm_araw[q] = *(const " + global_pointer(p.a_raw) + ")(" + p.a + " + lm_ar + lm_k + q * " +
         str(p.a_width) + ");");
  w.close();
  open_unrolled("u", p.width, w);
  w.line("lm_a[u] = " +
         to_compute(mm.a_stored,
                    "((const " + local_pointer(storage_type(mm.a_stored)) + ")lm_araw)[u]") +
         ";");
  w.close();
  w.middle("} else {");
  open_unrolled("u", p.width, w);
  w.line("lm_a[u] = " + to_compute(mm.a_stored, p.a + "[lm_ar + (lm_k + u) * lm_ak]") + ";");
  w.close();
  w.close();
  open_unrolled("c", p.cols, w);
  open_unrolled("u", p.width, w);
  w.line(p.acc + " = " + fma() + "(lm_a[u], lm_b[c][u], " + p.acc + ");");
  w.close();
  w.close();
  w.close();
  w.close();
  w.close();
}

void CudaRenderer::emit_gemv_tail(const Kernel& k, const GemvPlan& p, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  // The rest of k (all of it where W's p.rows are not aligned): an element p.a lane.
  w.open("for (int64_t lm_k = lm_kv + lm_part * 32 + lm_lane; lm_k < lm_k_end; lm_k += " +
         str(32 * p.split) + ")");
  w.line("float lm_b[" + str(p.cols) + "];");
  open_unrolled("c", p.cols, w);
  w.line("lm_b[c] = " + to_compute(mm.b_stored, p.b + "[lm_bc[c] + lm_k * lm_bk]") + ";");
  w.close();
  open_unrolled("i", p.rows, w);
  w.open("if (i < lm_rows)");
  w.line("const float lm_a = " +
         to_compute(mm.a_stored, p.a + "[lm_a0 + (lm_m0 + i) * lm_am + lm_k * lm_ak]") + ";");
  open_unrolled("c", p.cols, w);
  w.line(p.acc + " = " + fma() + "(lm_a, lm_b[c], " + p.acc + ");");
  w.close();
  w.close();
  w.close();
  w.close();
  open_unrolled("i", p.rows, w);
  w.open("if (i < lm_rows)");
  open_unrolled("c", p.cols, w);
  w.line(p.acc + " = lm_warp_sum(" + p.acc + ");");
  w.close();
  w.close();
  w.close();
}

void CudaRenderer::emit_gemv_store(const Kernel& k, const GemvPlan& p, CodeWriter& w) const {
  if (p.split == 1) {
    w.open("if (lm_lane == 0 && lm_live)");
    open_unrolled("i", p.rows, w);
    open_unrolled("c", p.cols, w);
    w.line("const int64_t " + p.mv + " = lm_m0 + i;");
    w.line("const int64_t " + p.nv + " = lm_n0 + c;");
    w.open("if (i < lm_rows && " + p.nv + " < lm_N)");
    emit_sum_store(k, p.acc, w);
    w.close();
    w.close();
    w.close();
    w.close();
  } else {
    // The parts' sums through shared memory: the group's first warp adds them, p.a lane an output.
    w.open("if (lm_lane == 0)");
    open_unrolled("i", p.rows, w);
    open_unrolled("c", p.cols, w);
    w.line("lm_sums[threadIdx.x >> 5][i * " + str(p.cols) + " + c] = " + p.acc + ";");
    w.close();
    w.close();
    w.close();
    w.line(barrier());
    w.open("if (lm_part == 0 && lm_live && lm_lane < " + str(p.rows * p.cols) + ")");
    w.line("const int i = lm_lane / " + str(p.cols) + ", c = lm_lane % " + str(p.cols) + ";");
    w.line("float lm_total = 0.0f;");
    w.line("#pragma unroll");
    w.line("for (int p = 0; p < " + str(p.split) +
           "; p++) lm_total += lm_sums[(threadIdx.x >> 5) + p][lm_lane];");
    w.line("const int64_t " + p.mv + " = lm_m0 + i;");
    w.line("const int64_t " + p.nv + " = lm_n0 + c;");
    w.open("if (i < lm_rows && " + p.nv + " < lm_N)");
    emit_sum_store(k, "lm_total", w);
    w.close();
    w.close();
    w.line(barrier());
  }
}


}  // namespace luminal
