// The int8 GEMM's micro-kernel on AMX tiles (schedule int8_gemm 2): the same products and panels
// as int8_gemm 1's vpdpbusd micro-kernel (c/quant_int8_gemm.cc), a block of 32 rows x 32
// columns. Per sub-block (the k of one weight scale: 32, Q6_K's 16) each tdpbusd multiplies a
// tile of 16 rows x g unsigned bytes of x with a tile of g / 4 groups of 4 k x 16 columns of
// the panel (its rows are the panel's, 128 bytes apart), into int32 sums of 16 x 16 that are
// stored to the stack and then, with 512-bit vectors, offset, converted and scaled into the
// block's f32 sums (less the minimum times x's sum for Q4_K and Q5_K), as the vpdpbusd kernel
// does with its registers. x's rows are a tile's rows where 16 or 32 of them are whole, else
// copied to the stack a sub-block at a time. Not the packing nor the task loops (the int8
// GEMM's).
#include "codegen/c/amx.h"
#include "codegen/c/quant.h"
#include "codegen/c/renderer.h"

namespace luminal {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// lm_qmm_*'s arguments and meaning (c/quant_int8_gemm.cc), up to 32 rows and 32 columns.
std::string micro_kernel(DType w, int64_t g, bool minimum) {
  CodeWriter c;
  c.open("static inline void " + amx_int8_micro_name(w) +
         "(int64_t kc, const unsigned char* restrict x, int64_t xs, const float* restrict dx, "
         "const float* restrict sx, int64_t fs, const signed char* restrict wp, "
         "const int* restrict ws, const float* restrict wd, const float* restrict wm, "
         "float* restrict c, int64_t ldc, int64_t rows, int64_t cols, int first)");
  if (!minimum) c.line("(void)wm;");
  if (!minimum) c.line("(void)sx;");
  c.line("int lm_ci[32 * 32] __attribute__((aligned(64)));      /* a sub-block's sums */");
  c.line("float lm_acc[32 * 32] __attribute__((aligned(64)));   /* the block's */");
  c.line("unsigned char lm_xt[32 * " + str(g) + "] __attribute__((aligned(64)));  /* x, staged */");
  c.line("const int two = rows > 16;");
  c.line("const int direct = rows == (two ? 32 : 16);");
  c.line("for (int64_t i = 0; i < 32 * 32; i++) lm_acc[i] = 0.0f;");
  c.line("if (!direct) for (int64_t i = 0; i < 32 * " + str(g) + "; i++) lm_xt[i] = 0;");
  c.open("for (int64_t s = 0; s < kc / " + str(g) + "; s++)");
  c.line("const unsigned char* at = x + s * " + str(g) + ";");
  c.line("int64_t sa = xs;");
  c.open("if (!direct)");
  c.line("for (int64_t r = 0; r < rows; r++) __builtin_memcpy(lm_xt + r * " + str(g) + ", at + r * xs, " +
         str(g) + ");");
  c.line("at = lm_xt;");
  c.line("sa = " + str(g) + ";");
  c.close();
  c.line("const signed char* b = wp + s * " + str(g / 4 * 128) + ";");
  c.line(tile_zero(0));
  c.line(tile_zero(1));
  c.line(tile_load(4, "at", "sa"));
  c.line(tile_load(6, "b", "128"));
  c.line(tile_dot("tdpbusd", 0, 4, 6));
  c.line(tile_load(7, "b + 64", "128"));
  c.line(tile_dot("tdpbusd", 1, 4, 7));
  c.line(tile_store(0, "lm_ci", "128"));
  c.line(tile_store(1, "lm_ci + 16", "128"));
  c.open("if (two)");
  c.line(tile_zero(2));
  c.line(tile_zero(3));
  c.line(tile_load(5, "at + 16 * sa", "sa"));
  c.line(tile_dot("tdpbusd", 2, 5, 6));
  c.line(tile_dot("tdpbusd", 3, 5, 7));
  c.line(tile_store(2, "lm_ci + 512", "128"));
  c.line(tile_store(3, "lm_ci + 528", "128"));
  c.close();
  const std::string xscale = g == 32 ? "s" : "s / 2";
  for (int j = 0; j < 2; ++j) {
    const std::string J = str(j), at = "s * 32 + " + str(16 * j);
    c.line("const lm_vi16 o" + J + " = *(const lm_vi16*)(ws + " + at + ");");
    c.line("const lm_vf16 d" + J + " = *(const lm_vf16*)(wd + " + at + ");");
    if (minimum) c.line("const lm_vf16 m" + J + " = *(const lm_vf16*)(wm + " + at + ");");
  }
  c.open("for (int64_t r = 0; r < rows; r++)");
  c.line("const float xd = dx[r * fs + " + xscale + "];");
  if (minimum) c.line("const float xm = sx[r * fs + 2 * s] + sx[r * fs + 2 * s + 1];");
  for (int j = 0; j < 2; ++j) {
    const std::string J = str(j), at = "r * 32 + " + str(16 * j);
    c.line("lm_vf16 a" + J + " = *(lm_vf16*)(lm_acc + " + at + ");");
    c.line("a" + J + " += __builtin_convertvector(*(const lm_vi16*)(lm_ci + " + at + ") + o" +
           J + ", lm_vf16) * (d" + J + " * xd);");
    if (minimum) c.line("a" + J + " -= m" + J + " * xm;");
    c.line("*(lm_vf16*)(lm_acc + " + at + ") = a" + J + ";");
  }
  c.close();
  c.close();
  c.line("for (int64_t r = 0; r < rows; r++) for (int64_t j = 0; j < cols; j++) "
         "c[r * ldc + j] = (first ? 0.0f : c[r * ldc + j]) + lm_acc[r * 32 + j];");
  c.close();
  return c.str();
}

}  // namespace

std::string amx_int8_switch_name(int64_t g) { return "lm_amx_int8_on_" + str(g); }

std::string amx_int8_micro_name(DType w) { return std::string("lm_qmm_amx_") + dtype_name(w); }

std::string amx_int8_prelude(DType w, int64_t g, bool minimum, std::set<std::string>& seen) {
  std::string s = amx_tile_prelude(seen);
  // x's tiles 16 rows of g bytes, the panel's g / 4 groups of 4 k (the int32 sums in C's)
  if (seen.insert(amx_int8_switch_name(g)).second) {
    s += amx_switch(amx_int8_switch_name(g), g, g / 4);
  }
  if (seen.insert(amx_int8_micro_name(w)).second) s += micro_kernel(w, g, minimum);
  return s;
}

}  // namespace luminal
