// The bf16 GEMM on AMX tiles (schedule bf16_dot 2): the same product as c/bf16_dot.cc's
// (C[m, n] = sum_k A[m, k] * B[k, n], A and B bf16 values, f32 sums), its block of 32 x 32 of
// C held in four tile registers while k runs, 32 k a step: each tdpbf16ps multiplies a tile of
// 16 rows x 32 k of A with a tile of 16 pairs of k x 16 columns of B (8192 products). A's tiles
// are loaded from its rows where they are whole (32 or 16 rows along k), else staged through
// the stack; B's are rows of the same pair panels bf16_dot 1 reads (nr = 32: a tile is 16 of
// a panel's rows, 128 bytes apart), a k block's last partial step staged likewise. Each thread
// of a GEMM configures its tiles once (lm_amx_on) and releases them at the end (lm_amx_off);
// Linux grants a process the tile data only on request (arch_prctl), made once by the first.
// The loops, tasks and epilogue are the f32 GEMM's (c/matmul.cc).
#include "codegen/c/amx.h"
#include "codegen/c/matmul.h"
#include "codegen/c/schedule.h"

namespace luminal {

bool takes_amx(const Kernel& k, int64_t native) {
  return takes_bf16_dot(k, native) && cpu_schedule(k, native).bf16_dot == kAmxBf16;
}

std::string amx_micro_kernel_name() { return "lm_mm_amx_bf16"; }

std::string tile_load(int tile, const std::string& at, const std::string& stride) {
  return "__asm__ volatile(\"tileloadd (%0,%1,1), %%tmm" + std::to_string(tile) +
         "\" :: \"r\"(" + at + "), \"r\"((int64_t)(" + stride + ")) : \"memory\");";
}
std::string tile_store(int tile, const std::string& at, const std::string& stride) {
  return "__asm__ volatile(\"tilestored %%tmm" + std::to_string(tile) +
         ", (%0,%1,1)\" :: \"r\"(" + at + "), \"r\"((int64_t)(" + stride + ")) : \"memory\");";
}
std::string tile_zero(int tile) {
  return "__asm__ volatile(\"tilezero %%tmm" + std::to_string(tile) + "\" ::: \"memory\");";
}
std::string tile_dot(const std::string& op, int c, int a, int b) {
  return "__asm__ volatile(\"" + op + " %%tmm" + std::to_string(b) + ", %%tmm" +
         std::to_string(a) + ", %%tmm" + std::to_string(c) + "\" ::: \"memory\");";
}

std::string amx_switch(const std::string& name, int64_t a_bytes, int64_t b_rows) {
  CodeWriter w;
  w.open("static inline void " + name + "(void)");
  w.line("lm_amx_grant();");
  w.line("lm_tile_config cfg;");
  w.line("__builtin_memset(&cfg, 0, sizeof cfg);");
  w.line("cfg.palette = 1;");
  w.line("for (int t = 0; t < 4; t++) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }");
  w.line("for (int t = 4; t < 6; t++) { cfg.colsb[t] = " + std::to_string(a_bytes) +
         "; cfg.rows[t] = 16; }");
  w.line("for (int t = 6; t < 8; t++) { cfg.colsb[t] = 64; cfg.rows[t] = " +
         std::to_string(b_rows) + "; }");
  w.line("__asm__ volatile(\"ldtilecfg %0\" :: \"m\"(cfg));");
  w.close();
  return w.str();
}

namespace {

// c[0:rows, 0:cols] (+)= a[0:rows, 0:kc] * bp (pairs, 32 wide; rows <= 32, cols <= 32): the
// lm_mmbf_* signature. Up to 16 rows take the top tiles only.
std::string micro_kernel() {
  CodeWriter w;
  w.open("static inline void " + amx_micro_kernel_name() +
         "(int64_t kc, const uint16_t* restrict a, int64_t am, int64_t ak, "
         "const uint32_t* restrict bp, float* restrict c, int64_t ldc, int64_t rows, "
         "int64_t cols, int first)");
  w.line("uint16_t lm_at[32 * 32] __attribute__((aligned(64)));  /* A's step, staged */");
  w.line("uint32_t lm_bt[16 * 32] __attribute__((aligned(64)));  /* B's last step, staged */");
  w.line("float lm_ct[32 * 32] __attribute__((aligned(64)));     /* C's partial block */");
  w.line("const int two = rows > 16;");
  w.line("const int64_t tr = two ? 32 : 16;  /* rows the tiles hold */");
  w.line("const int direct_a = ak == 1 && rows == tr;");
  w.line("const int direct_c = rows == tr && cols == 32;");
  w.line("float* ct = direct_c ? c : lm_ct;");
  w.line("const int64_t lc = direct_c ? ldc : 32;");
  w.open("if (first)");
  for (int t = 0; t < 2; ++t) w.line(tile_zero(t));
  w.line("if (two) { " + tile_zero(2) + " " + tile_zero(3) + " }");
  w.middle("} else {");
  w.line("if (!direct_c) for (int64_t r = 0; r < tr; r++) for (int64_t j = 0; j < 32; j++) "
         "lm_ct[r * 32 + j] = r < rows && j < cols ? c[r * ldc + j] : 0.0f;");
  w.line(tile_load(0, "ct", "lc * 4"));
  w.line(tile_load(1, "ct + 16", "lc * 4"));
  w.line("if (two) { " + tile_load(2, "ct + 16 * lc", "lc * 4") + " " +
         tile_load(3, "ct + 16 * lc + 16", "lc * 4") + " }");
  w.close();
  w.line("if (!direct_a) for (int64_t i = 0; i < 32 * 32; i++) lm_at[i] = 0;");
  w.open("for (int64_t k = 0; k < kc; k += 32)");
  w.line("const int64_t kk = kc - k < 32 ? kc - k : 32;");
  w.line("const uint32_t* b = bp + k / 2 * 32;");
  w.open("if (kk < 32)");  // the block's last pairs (an odd kc's last high half is 0), then 0
  w.line("for (int64_t i = 0; i < 16 * 32; i++) lm_bt[i] = i < (kk + 1) / 2 * 32 ? b[i] : 0u;");
  w.line("b = lm_bt;");
  w.close();
  w.line("const uint16_t* at = a + k;");
  w.line("int64_t sa = am * 2;");
  w.open("if (!direct_a || kk < 32)");
  w.line("for (int64_t r = 0; r < rows; r++) for (int64_t q = 0; q < 32; q++) "
         "lm_at[r * 32 + q] = q < kk ? a[r * am + (k + q) * ak] : 0;");
  w.line("at = lm_at;");
  w.line("sa = 64;");
  w.close();
  w.line(tile_load(4, "at", "sa"));
  w.line(tile_load(6, "b", "128"));
  w.line(tile_dot("tdpbf16ps", 0, 4, 6));
  w.line(tile_load(7, "b + 16", "128"));
  w.line(tile_dot("tdpbf16ps", 1, 4, 7));
  w.open("if (two)");
  w.line(tile_load(5, "(const char*)at + 16 * sa", "sa"));
  w.line(tile_dot("tdpbf16ps", 2, 5, 6));
  w.line(tile_dot("tdpbf16ps", 3, 5, 7));
  w.close();
  w.close();
  w.line(tile_store(0, "ct", "lc * 4"));
  w.line(tile_store(1, "ct + 16", "lc * 4"));
  w.line("if (two) { " + tile_store(2, "ct + 16 * lc", "lc * 4") + " " +
         tile_store(3, "ct + 16 * lc + 16", "lc * 4") + " }");
  w.line("if (!direct_c) for (int64_t r = 0; r < rows; r++) for (int64_t j = 0; j < cols; j++) "
         "c[r * ldc + j] = lm_ct[r * 32 + j];");
  w.close();
  return w.str();
}

}  // namespace

std::string amx_tile_prelude(std::set<std::string>& seen) {
  if (!seen.insert("lm_amx_grant").second) return "";
  CodeWriter w;
  w.line("typedef struct { unsigned char palette, start_row, reserved[14]; "
         "unsigned short colsb[16]; unsigned char rows[16]; } lm_tile_config;");
  w.line("long syscall(long, ...);");
  // ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18) through arch_prctl (158), once
  w.open("static inline void lm_amx_grant(void)");
  w.line("static int lm_granted;");
  w.open("if (!__atomic_load_n(&lm_granted, __ATOMIC_ACQUIRE))");
  w.line("syscall(158, 0x1023, 18);");
  w.line("__atomic_store_n(&lm_granted, 1, __ATOMIC_RELEASE);");
  w.close();
  w.close();
  w.line("static inline void lm_amx_off(void) { __asm__ volatile(\"tilerelease\" ::: \"memory\"); }");
  return w.str();
}

std::string amx_prelude(std::set<std::string>& seen) {
  std::string s = amx_tile_prelude(seen);
  // bf16: A's tiles 16 rows of 32 k, B's 16 pairs of k
  if (seen.insert("lm_amx_on").second) s += amx_switch("lm_amx_on", 64, 16);
  if (seen.insert(amx_micro_kernel_name()).second) s += micro_kernel();
  return s;
}

}  // namespace luminal
