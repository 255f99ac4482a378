// The quantized matmul's GEMM path, for many rows of A (a prefill): B's blocks are dequantized
// into the f32 panels of the packed GEMM (c/matmul.cc) as the panels are packed, a block of
// one row of W at a time into a small tile (the element readers' arithmetic a vector at a
// time, so each value is bit-equal to lm_q8_0_at's), then down the panel's column. Each value
// is dequantized once per panel instead of once per pair of rows as in the GEMV. Not the GEMV
// (c/quant.cc), the micro-kernel or the tasks (c/matmul.cc).
#include <set>

#include "codegen/c/matmul.h"
#include "codegen/c/quant.h"
#include "core/errors.h"

namespace luminal {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

std::string quant_tile_name(DType dtype, int64_t width) {
  return "lm_" + std::string(dtype_name(dtype)) + "_tile_v" + str(width);
}

// static inline void lm_q4_k_tile_v8(const uint8_t* b, float* t): block b's values into
// t[0, block), `width` lanes at a time (width divides 16), each as its reader computes it.
std::string quant_tile_function(DType dtype, int64_t width) {
  const std::string W = str(width);
  const std::string v = float_vector(width);
  const std::string ints = "lm_vi" + W;
  auto ubytes = [&](const std::string& at) {
    return quant_byte_lanes_name(width, false) + "(" + at + ")";
  };
  auto to_float = [&](const std::string& x) {
    return "__builtin_convertvector(" + x + ", " + v + ")";
  };
  CodeWriter w;
  w.open("static inline void " + quant_tile_name(dtype, width) +
         "(const uint8_t* restrict b, float* restrict t)");
  switch (dtype) {
    case DType::Q8_0:
      w.line("const float d = lm_block_scale(b);");
      open_unrolled(w, "for (int l = 0; l < 32; l += " + W + ")");
      w.line("*(" + v + "*)(t + l) = " +
             to_float(quant_byte_lanes_name(width, true) + "(b + 2 + l)") + " * d;");
      w.close();
      break;
    case DType::Q4_0:
      w.line("const float d = lm_block_scale(b);");
      open_unrolled(w, "for (int l = 0; l < 16; l += " + W + ")");
      w.line(ints + " u = " + ubytes("b + 2 + l") + ";");
      w.line("*(" + v + "*)(t + l) = d * " + to_float("(u & 15) - 8") + ";");
      w.line("*(" + v + "*)(t + 16 + l) = d * " + to_float("(u >> 4) - 8") + ";");
      w.close();
      break;
    case DType::Q4_K:
    case DType::Q5_K:
      open_k_quant_sub_blocks(w);
      open_unrolled(w, "for (int l = 0; l < 32; l += " + W + ")");
      emit_k_quant_lanes(w, dtype, width);
      w.line("*(" + v + "*)(t + sub * 32 + l) = s0 * " + to_float("lo") + " - m0;");
      w.line("*(" + v + "*)(t + sub * 32 + 32 + l) = s1 * " + to_float("hi") + " - m1;");
      w.close();
      w.close();
      break;
    case DType::Q6_K:
      w.line("const float d = lm_block_scale(b + 208);");
      w.line("const signed char* sc = (const signed char*)(b + 192);");
      open_unrolled(w, "for (int h = 0; h < 2; h++)");
      open_unrolled(w, "for (int r = 0; r < 4; r++)");
      open_unrolled(w, "for (int c = 0; c < 32; c += " + W + ")");
      emit_q6_k_lanes(w, width);
      w.line("const int j = h * 128 + r * 32 + c;");
      w.line("*(" + v + "*)(t + j) = d * (float)sc[j / 16] * " + to_float("q") + ";");
      w.close();
      w.close();
      w.close();
      break;
    default:
      throw InternalError(std::string("quant tile: ") + dtype_name(dtype) + " is not quantized");
  }
  w.close();
  return w.str();
}

void emit_quant_pack_panel(DType stored, int64_t width, int64_t nr, CodeWriter& w) {
  const std::string NR = str(nr);
  const std::string block = str(block_values(stored));
  const std::string bytes = str(block_bytes(stored));
  w.line("float* restrict panel = lm_bp + (jr / " + NR + ") * kcur * " + NR + ";");
  w.line("const int64_t wcols = ncols - jr < " + NR + " ? ncols - jr : " + NR + ";");
  w.line("float lm_tq[" + block + "] __attribute__((aligned(64)));");
  w.open("for (int64_t j = 0; j < " + NR + "; j++)");
  w.open("if (j >= wcols)");
  w.line("for (int64_t kk = 0; kk < kcur; kk++) panel[kk * " + NR + " + j] = 0.0f;");
  w.line("continue;");
  w.close();
  w.line("const uint8_t* restrict row = B + (n0 + jr + j) * lm_ldw + pc / " + block + " * " +
         bytes + ";");
  w.open("for (int64_t kb = 0; kb < kcur / " + block + "; kb++)");
  w.line(quant_tile_name(stored, width) + "(row + kb * " + bytes + ", lm_tq);");
  w.line("float* restrict dst = panel + kb * " + block + " * " + NR + " + j;");
  w.line("for (int l = 0; l < " + block + "; l++) dst[l * " + NR + "] = lm_tq[l];");
  w.close();
  w.close();
}

}  // namespace luminal
