// The Metal renderer's matmul on simdgroup matrices (metal_matmul 3): a threadgroup of 4
// simdgroups per 32 x 32 tile of the output, each simdgroup 16 x 16 of it in 2 x 2
// simdgroup_float8x8 accumulators; A's and B's tiles of 16 k staged in threadgroup memory as
// f32 (any strides, a 16-bit operand widened as it is loaded), multiplied by
// simdgroup_multiply_accumulate, the finished tile stored through threadgroup memory by every
// thread (bounds-checked, the matmul's epilogue on each sum).
#include "codegen/cuda/matmul_tiles.h"
#include "codegen/metal/renderer.h"

namespace luminal {

bool MetalRenderer::matrix_units(const MatmulInfo& mm) const {
  return is_float(mm.dtype);  // any float operands: staged as f32
}

std::string MetalRenderer::render_mma_matmul(const Program& program, const Kernel& k,
                                             gpu::KernelLaunch& launch) const {
  const MatmulInfo& mm = k.matmul;
  constexpr int64_t kTile = 32;
  matmul_tile_launch(k, mm, kTile, launch);
  launch.block = 128;
  CodeWriter w;
  w.line("/* " + k.name + ": writes " + buffer_name(k.out) +
         "; matmul on simdgroup matrices: 32x32 threadgroup tiles, 4 simdgroups of 16x16, "
         "8x8 multiply-accumulates */");
  open_kernel(program, k, 128, w);
  // Rows padded by 4 floats (fewer bank conflicts; 8x8 loads at any row).
  w.line(shared("float lm_as[32][20];"));  // [m][k]
  w.line(shared("float lm_bs[16][36];"));  // [k][n]
  w.line(shared("float lm_cs[32][36];"));  // the finished tile
  MatmulNames n = matmul_preamble(k, mm, kTile, kTile, w);
  const bool a_k_fast = is_const(mm.a_k, 1) || !is_const(mm.a_m, 1);
  const bool b_n_fast = is_const(mm.b_n, 1) || !is_const(mm.b_k, 1);
  w.line("const int lm_sg = threadIdx.x >> 5;");
  w.line("const int lm_sm = (lm_sg >> 1) * 16, lm_sn = (lm_sg & 1) * 16;");
  w.line("simdgroup_float8x8 lm_acc[2][2];");
  w.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 2; j++) "
         "lm_acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);");
  w.open("for (int64_t lm_k0 = 0; lm_k0 < lm_K; lm_k0 += 16)");
  w.open("for (int lm_e = threadIdx.x; lm_e < 512; lm_e += 128)");
  w.line(a_k_fast ? "const int lm_mm = lm_e >> 4, lm_kk = lm_e & 15;"
                  : "const int lm_mm = lm_e & 31, lm_kk = lm_e >> 5;");
  w.line(b_n_fast ? "const int lm_nn = lm_e & 31, lm_kb = lm_e >> 5;"
                  : "const int lm_nn = lm_e >> 4, lm_kb = lm_e & 15;");
  w.line("const int64_t lm_m = lm_m0 + lm_mm, lm_ka = lm_k0 + lm_kk;");
  w.line("const int64_t lm_n = lm_n0 + lm_nn, lm_kbb = lm_k0 + lm_kb;");
  w.line("lm_as[lm_mm][lm_kk] = (lm_m < lm_M && lm_ka < lm_K) ? " +
         to_compute(mm.a_stored, n.a + "[lm_a0 + lm_m * lm_am + lm_ka * lm_ak]") + " : 0.0f;");
  w.line("lm_bs[lm_kb][lm_nn] = (lm_n < lm_N && lm_kbb < lm_K) ? " +
         to_compute(mm.b_stored, n.b + "[lm_b0 + lm_kbb * lm_bk + lm_n * lm_bn]") + " : 0.0f;");
  w.close();
  w.line(barrier());
  w.open("for (int lm_ks = 0; lm_ks < 16; lm_ks += 8)");
  w.line("simdgroup_float8x8 lm_a[2], lm_b[2];");
  w.line("for (int i = 0; i < 2; i++) simdgroup_load(lm_a[i], &lm_as[lm_sm + 8 * i][lm_ks], 20);");
  w.line("for (int j = 0; j < 2; j++) simdgroup_load(lm_b[j], &lm_bs[lm_ks][lm_sn + 8 * j], 36);");
  w.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 2; j++) "
         "simdgroup_multiply_accumulate(lm_acc[i][j], lm_a[i], lm_b[j], lm_acc[i][j]);");
  w.close();
  w.line(barrier());
  w.close();
  w.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 2; j++) "
         "simdgroup_store(lm_acc[i][j], &lm_cs[lm_sm + 8 * i][lm_sn + 8 * j], 36);");
  w.line(barrier());
  w.open("for (int lm_e = threadIdx.x; lm_e < 1024; lm_e += 128)");
  w.line("const int lm_r = lm_e >> 5, lm_c = lm_e & 31;");
  store_matmul_tile(n, {}, "lm_m0 + lm_r", "lm_n0 + lm_c",
                    [&](CodeWriter& out) { emit_sum_store(k, "lm_cs[lm_r][lm_c]", out); }, w);
  w.close();
  w.close();
  return w.str();
}

}  // namespace luminal
