// The CUDA renderer's matmul kernels: a shared-memory tiled kernel with f32 FMA (any float
// dtype, any strides, an operand widened from 16 bits as it is loaded) and a tensor-core kernel
// for f16/bf16 (mma.sync m16n8k16, f32 accumulators) with 16-byte global loads where the
// operands are aligned and contiguous. Either runs a matmul's epilogue (kernel/epilogue.h) on
// each accumulator as it stores it.
#include <functional>
#include <map>

#include "codegen/cuda/matmul_tiles.h"
#include "codegen/cuda/renderer.h"

namespace luminal {

using gpu::KernelLaunch;
using gpu::LaunchMode;

MatmulNames matmul_preamble(const Kernel& k, const MatmulInfo& mm, int64_t tile_m,
                            int64_t tile_n, CodeWriter& w) {
  MatmulNames n;
  n.mv = k.loops[mm.m_loop].var;
  n.nv = k.loops[mm.n_loop].var;
  n.kv = k.reduce[0].var;
  n.a = CLikeRenderer::buffer_name(k.values[mm.a].buffer);
  n.b = CLikeRenderer::buffer_name(k.values[mm.b].buffer);
  std::vector<Loop> batch(k.loops.begin(), k.loops.begin() + mm.m_loop);
  w.line("const int64_t lm_z = blockIdx.z;");
  w.line("(void)lm_z;");
  emit_unravel(batch, "lm_z", w);
  std::map<std::string, Expr> origin = {{n.mv, Expr(0)}, {n.nv, Expr(0)}, {n.kv, Expr(0)}};
  w.line("const int64_t lm_M = " + k.loops[mm.m_loop].extent.to_c() + ";");
  w.line("const int64_t lm_N = " + k.loops[mm.n_loop].extent.to_c() + ";");
  w.line("const int64_t lm_K = " + k.reduce[0].extent.to_c() + ";");
  w.line("const int64_t lm_m0 = (int64_t)blockIdx.y * " + std::to_string(tile_m) + ";");
  w.line("const int64_t lm_n0 = (int64_t)blockIdx.x * " + std::to_string(tile_n) + ";");
  w.line("const int64_t lm_a0 = " + k.values[mm.a].index.substitute(origin).to_c() + ";");
  w.line("const int64_t lm_b0 = " + k.values[mm.b].index.substitute(origin).to_c() + ";");
  w.line("const int64_t lm_am = " + mm.a_m.to_c() + ";");
  w.line("const int64_t lm_ak = " + mm.a_k.to_c() + ";");
  w.line("const int64_t lm_bk = " + mm.b_k.to_c() + ";");
  w.line("const int64_t lm_bn = " + mm.b_n.to_c() + ";");
  return n;
}

void matmul_tile_launch(const Kernel& k, const MatmulInfo& mm, int64_t tile,
                        KernelLaunch& launch) {
  launch.mode = LaunchMode::kTile2D;
  launch.block = 256;
  launch.tile_m = tile;
  launch.tile_n = tile;
  launch.m = k.loops[mm.m_loop].extent;
  launch.n = k.loops[mm.n_loop].extent;
  std::vector<Expr> batch;
  for (int i = 0; i < mm.m_loop; ++i) batch.push_back(k.loops[i].extent);
  launch.batch = product(batch);
}

void store_matmul_tile(const MatmulNames& n, const std::vector<int>& counts,
                       const std::string& m, const std::string& col,
                       const std::function<void(CodeWriter&)>& store, CodeWriter& w) {
  const char* vars[] = {"i", "j", "c"};
  for (size_t d = 0; d < counts.size(); ++d) {
    std::string v = vars[d];
    w.line("#pragma unroll");
    w.open("for (int " + v + " = 0; " + v + " < " + std::to_string(counts[d]) + "; " + v + "++)");
  }
  w.open("");
  w.line("const int64_t " + n.mv + " = " + m + ";");
  w.line("const int64_t " + n.nv + " = " + col + ";");
  w.open("if (" + n.mv + " < lm_M && " + n.nv + " < lm_N)");
  store(w);
  w.close();
  w.close();
  for (size_t d = 0; d < counts.size(); ++d) w.close();
}

namespace {
// Rows [lm_<r>0, lm_<r>0 + 128) x k [lm_k0, lm_k0 + 32) of a half operand into shared `tile`
// ([row][k]), zero past the edges, with row variable lm_<r> (r: "m" or "n") and lm_k bound.
// `vector`: 16-byte loads of 8 k at `ptr` + `at` (contiguous along k); else one element a
// step at `ptr`[`at`].
void load_rows(const std::string& tile, const std::string& r, const std::string& ptr,
               const std::string& at, bool vector, CodeWriter& w) {
  const std::string row = "lm_" + r;
  const std::string upper = r == "m" ? "lm_M" : "lm_N";
  const std::string in_bounds = row + " < " + upper + " && lm_k < lm_K";
  w.open(std::string("for (int lm_e = threadIdx.x; lm_e < ") + (vector ? "512" : "4096") +
         "; lm_e += 256)");
  w.line(vector ? "const int lm_r = lm_e >> 2, lm_c = (lm_e & 3) * 8;"
                : "const int lm_r = lm_e >> 5, lm_c = lm_e & 31;");
  w.line("const int64_t " + row + " = " + row + "0 + lm_r, lm_k = lm_k0 + lm_c;");
  if (vector) {
    w.line("uint4 lm_v = make_uint4(0u, 0u, 0u, 0u);");
    w.line("if (" + in_bounds + ") lm_v = *(const uint4*)(" + ptr + " + " + at + ");");
    w.line("*(uint4*)&" + tile + "[lm_r][lm_c] = lm_v;");
  } else {
    w.line(tile + "[lm_r][lm_c] = (" + in_bounds + ") ? " + ptr + "[" + at +
           "] : (uint16_t)0;");
  }
  w.close();
}
}  // namespace

std::string CudaRenderer::render_tiled_matmul(const Program& program, const Kernel& k,
                                              KernelLaunch& launch) const {
  const MatmulInfo& mm = k.matmul;
  constexpr int64_t kTile = 64;
  matmul_tile_launch(k, mm, kTile, launch);
  CodeWriter w;
  w.line("/* " + k.name + ": writes " + buffer_name(k.out) +
         "; matmul in 64x64 shared-memory tiles, f32 accumulators */");
  open_kernel(program, k, 256, w);
  w.line(shared("float lm_as[16][64 + 4];"));
  w.line(shared("float lm_bs[16][64 + 4];"));
  MatmulNames n = matmul_preamble(k, mm, kTile, kTile, w);
  const bool a_k_fast = is_const(mm.a_k, 1) || !is_const(mm.a_m, 1);
  const bool b_n_fast = is_const(mm.b_n, 1) || !is_const(mm.b_k, 1);
  w.line("const int lm_tx = threadIdx.x & 15;");
  w.line("const int lm_ty = threadIdx.x >> 4;");
  w.line("float lm_acc[4][4];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) lm_acc[i][j] = 0.0f;");
  w.open("for (int64_t lm_k0 = 0; lm_k0 < lm_K; lm_k0 += 16)");
  w.open("for (int lm_e = threadIdx.x; lm_e < 1024; lm_e += 256)");
  w.line(a_k_fast ? "const int lm_mm = lm_e >> 4, lm_kk = lm_e & 15;"
                  : "const int lm_mm = lm_e & 63, lm_kk = lm_e >> 6;");
  w.line(b_n_fast ? "const int lm_nn = lm_e & 63, lm_kb = lm_e >> 6;"
                  : "const int lm_nn = lm_e >> 4, lm_kb = lm_e & 15;");
  w.line("const int64_t lm_m = lm_m0 + lm_mm, lm_ka = lm_k0 + lm_kk;");
  w.line("const int64_t lm_n = lm_n0 + lm_nn, lm_kbb = lm_k0 + lm_kb;");
  w.line("lm_as[lm_kk][lm_mm] = (lm_m < lm_M && lm_ka < lm_K) ? " +
         to_compute(mm.a_stored, n.a + "[lm_a0 + lm_m * lm_am + lm_ka * lm_ak]") + " : 0.0f;");
  w.line("lm_bs[lm_kb][lm_nn] = (lm_n < lm_N && lm_kbb < lm_K) ? " +
         to_compute(mm.b_stored, n.b + "[lm_b0 + lm_kbb * lm_bk + lm_n * lm_bn]") + " : 0.0f;");
  w.close();
  w.line(barrier());
  w.line("#pragma unroll");
  w.open("for (int lm_kk = 0; lm_kk < 16; lm_kk++)");
  w.line("float lm_a[4], lm_b[4];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; i++) lm_a[i] = lm_as[lm_kk][lm_ty + 16 * i];");
  w.line("#pragma unroll");
  w.line("for (int j = 0; j < 4; j++) lm_b[j] = lm_bs[lm_kk][lm_tx + 16 * j];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) "
         "lm_acc[i][j] = " + fma() + "(lm_a[i], lm_b[j], lm_acc[i][j]);");
  w.close();
  w.line(barrier());
  w.close();
  store_matmul_tile(n, {4, 4}, "lm_m0 + lm_ty + 16 * i", "lm_n0 + lm_tx + 16 * j",
             [&](CodeWriter& out) { emit_sum_store(k, "lm_acc[i][j]", out); }, w);
  w.close();
  return w.str();
}

std::string CudaRenderer::render_mma_matmul(const Program& program, const Kernel& k,
                                            KernelLaunch& launch) const {
  const MatmulInfo& mm = k.matmul;
  constexpr int64_t kTile = 128;
  matmul_tile_launch(k, mm, kTile, launch);
  const std::string mma = mm.dtype == DType::F16 ? "lm_mma_f16" : "lm_mma_bf16";
  CodeWriter w;
  w.line("/* " + k.name + ": writes " + buffer_name(k.out) +
         "; matmul on tensor cores: 128x128x32 block tiles, 8 warps of 64x32, mma.sync */");
  open_kernel(program, k, 256, w);
  // Tiles as [row][k] 16-bit words, rows padded to 40 words (80 bytes): 16-byte aligned rows
  // and conflict-free fragment reads. B is kept transposed, [n][k].
  w.line("__shared__ __align__(16) uint16_t lm_as[128][40];");
  w.line("__shared__ __align__(16) uint16_t lm_bs[128][40];");
  MatmulNames n = matmul_preamble(k, mm, kTile, kTile, w);
  w.line("const bool lm_avec = lm_ak == 1 && lm_K % 8 == 0 && lm_a0 % 8 == 0 && "
         "lm_am % 8 == 0;");
  w.line("const bool lm_bveck = lm_bk == 1 && lm_K % 8 == 0 && lm_b0 % 8 == 0 && "
         "lm_bn % 8 == 0;");
  w.line("const bool lm_bvecn = !lm_bveck && lm_bn == 1 && lm_N % 8 == 0 && lm_b0 % 8 == 0 && "
         "lm_bk % 8 == 0;");
  w.line("const int lm_lane = threadIdx.x & 31, lm_warp = threadIdx.x >> 5;");
  w.line("const int lm_wm = lm_warp >> 2, lm_wn = lm_warp & 3;");
  w.line("const int lm_g = lm_lane >> 2, lm_t = lm_lane & 3;");
  w.line("float lm_acc[4][4][4];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) for (int c = 0; c < 4; c++) "
         "lm_acc[i][j][c] = 0.0f;");
  w.open("for (int64_t lm_k0 = 0; lm_k0 < lm_K; lm_k0 += 32)");
  // A tile: 128 rows (m) x 32 k.
  w.open("if (lm_avec)");
  load_rows("lm_as", "m", n.a, "lm_a0 + lm_m * lm_am + lm_k", true, w);
  w.close();
  w.open("else");
  load_rows("lm_as", "m", n.a, "lm_a0 + lm_m * lm_am + lm_k * lm_ak", false, w);
  w.close();
  // B tile: 128 columns (n) x 32 k, stored [n][k].
  w.open("if (lm_bveck)");
  load_rows("lm_bs", "n", n.b, "lm_b0 + lm_n * lm_bn + lm_k", true, w);
  w.close();
  w.open("else if (lm_bvecn)");
  w.open("for (int lm_e = threadIdx.x; lm_e < 512; lm_e += 256)");
  w.line("const int lm_c = lm_e >> 4, lm_r = (lm_e & 15) * 8;");
  w.line("const int64_t lm_n = lm_n0 + lm_r, lm_k = lm_k0 + lm_c;");
  w.line("uint4 lm_v = make_uint4(0u, 0u, 0u, 0u);");
  w.line("if (lm_n < lm_N && lm_k < lm_K) lm_v = *(const uint4*)(" + n.b +
         " + lm_b0 + lm_k * lm_bk + lm_n);");
  w.line("const uint16_t* lm_h = (const uint16_t*)&lm_v;");
  w.line("#pragma unroll");
  w.line("for (int q = 0; q < 8; q++) lm_bs[lm_r + q][lm_c] = lm_h[q];");
  w.close();
  w.close();
  w.open("else");
  load_rows("lm_bs", "n", n.b, "lm_b0 + lm_k * lm_bk + lm_n * lm_bn", false, w);
  w.close();
  w.line(barrier());
  w.line("#pragma unroll");
  w.open("for (int lm_ks = 0; lm_ks < 32; lm_ks += 16)");
  w.line("uint32_t lm_af[4][4], lm_bf[4][2];");
  w.line("#pragma unroll");
  w.open("for (int i = 0; i < 4; i++)");
  w.line("const int r = lm_wm * 64 + i * 16 + lm_g;");
  w.line("lm_af[i][0] = *(const uint32_t*)&lm_as[r][lm_ks + lm_t * 2];");
  w.line("lm_af[i][1] = *(const uint32_t*)&lm_as[r + 8][lm_ks + lm_t * 2];");
  w.line("lm_af[i][2] = *(const uint32_t*)&lm_as[r][lm_ks + lm_t * 2 + 8];");
  w.line("lm_af[i][3] = *(const uint32_t*)&lm_as[r + 8][lm_ks + lm_t * 2 + 8];");
  w.close();
  w.line("#pragma unroll");
  w.open("for (int j = 0; j < 4; j++)");
  w.line("const int c = lm_wn * 32 + j * 8 + lm_g;");
  w.line("lm_bf[j][0] = *(const uint32_t*)&lm_bs[c][lm_ks + lm_t * 2];");
  w.line("lm_bf[j][1] = *(const uint32_t*)&lm_bs[c][lm_ks + lm_t * 2 + 8];");
  w.close();
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) " + mma +
         "(lm_acc[i][j], lm_af[i], lm_bf[j]);");
  w.close();
  w.line(barrier());
  w.close();
  store_matmul_tile(n, {4, 4, 4}, "lm_m0 + lm_wm * 64 + i * 16 + lm_g + (c >> 1) * 8",
             "lm_n0 + lm_wn * 32 + j * 8 + lm_t * 2 + (c & 1)",
             [&](CodeWriter& out) { emit_sum_store(k, "lm_acc[i][j][c]", out); }, w);
  w.close();
  return w.str();
}

}  // namespace luminal
