// The C renderer's integer dot products of quantized activations and quantized weights (a
// kernel with MatmulInfo::a_q8_0, kernel/quant_dot.h), as llama.cpp computes them: each row of
// x is quantized once into int8 blocks of 32 with their f16 scales (bit for bit the values of
// hl_ops/quant_activations.py's formula) and their sums per 16 times the scale; then, threads split over N, four
// rows of W per task, each weight block's integers meet x's in int8 dot products (AVX-512
// VNNI vpdpbusd, else AVX2 pmaddubsw + pmaddwd, else plain C), times d_x * d_w summed in f32.
// Offsets of unsigned weights (a K-quant's minimum, Q6_K's 32) are taken off with x's block
// sums, Q4_0's 8 in the integers. A weight in row groups meets four rows of x a pass
// (c/quant_int8_groups.cc). Past kInt8GemvRows rows (kGroupGemvRows in row groups: a
// prefill) x's round trip is
// dequantized into an f32 copy for the f32 GEMM, which widens each weight block once for all
// rows, or, under int8_gemm 1, multiplied in the int8 GEMM (c/quant_int8_gemm.cc). Not the
// f32 quantized GEMV (c/quant.cc) nor the formula's recognition (ir/quant_activations.h).
#include <set>
#include <string>

#include "codegen/c/renderer.h"
#include "codegen/c/matmul.h"
#include "codegen/c/quant.h"
#include "codegen/c/schedule.h"
#include "core/errors.h"
#include "kernel/quant_row_groups.h"

namespace luminal {

namespace {

constexpr int64_t kWRows = 4;  // rows of W per task (a row group, kernel/quant_row_groups.h)
static_assert(kWRows == kGroupRows);
constexpr int kParts = 4;      // accumulators a row of W deals its blocks round

std::string str(int64_t v) { return std::to_string(v); }

// 32 bytes as unsigned and signed vectors (unaligned loads), 8 int and 8 float lanes, and
// the two int8 dot products: lm_dot_us (unsigned u < 128 times signed s) and lm_dot_ss (both
// signed, by the sign trick), each giving lane i the sum of bytes 4i .. 4i + 3's products.
const char* kDotHelpers =
    "typedef unsigned char lm_vu32 __attribute__((vector_size(32)));\n"
    "typedef unsigned char lm_vu32u __attribute__((vector_size(32), aligned(1), may_alias));\n"
    "typedef signed char lm_vs32 __attribute__((vector_size(32)));\n"
    "typedef signed char lm_vs32u __attribute__((vector_size(32), aligned(1), may_alias));\n"
    "typedef unsigned char lm_vu16 __attribute__((vector_size(16)));\n"
    "typedef unsigned char lm_vu16u __attribute__((vector_size(16), aligned(1), may_alias));\n"
    "typedef int lm_vq8 __attribute__((vector_size(32)));\n"
    "typedef float lm_vg8 __attribute__((vector_size(32)));\n"
    "typedef float lm_vg8u __attribute__((vector_size(32), aligned(4), may_alias));\n"
    "typedef char lm_vc32q __attribute__((vector_size(32)));\n"
    "typedef short lm_vh16q __attribute__((vector_size(32)));\n"
    "static inline lm_vq8 lm_dot_us(lm_vu32 u, lm_vs32 s) {\n"
    "#if defined(__AVX512VNNI__) && defined(__AVX512VL__)\n"
    "  return __builtin_ia32_vpdpbusd_v8si((lm_vq8){0}, (lm_vq8)u, (lm_vq8)s);\n"
    "#elif defined(__AVX2__)\n"
    "  lm_vh16q p = __builtin_ia32_pmaddubsw256((lm_vc32q)u, (lm_vc32q)s);\n"
    "  return __builtin_ia32_pmaddwd256(p, (lm_vh16q){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
    "1, 1});\n"
    "#else\n"
    "  lm_vq8 r = {0};\n"
    "  for (int i = 0; i < 32; i++) r[i / 4] += (int)u[i] * (int)s[i];\n"
    "  return r;\n"
    "#endif\n"
    "}\n"
    "static inline lm_vq8 lm_dot_ss(lm_vs32 a, lm_vs32 s) {\n"
    "#if defined(__AVX2__)\n"
    "  lm_vu32 u = (lm_vu32)__builtin_ia32_psignb256((lm_vc32q)a, (lm_vc32q)a);\n"
    "  return lm_dot_us(u, (lm_vs32)__builtin_ia32_psignb256((lm_vc32q)s, (lm_vc32q)a));\n"
    "#else\n"
    "  lm_vq8 r = {0};\n"
    "  for (int i = 0; i < 32; i++) r[i / 4] += (int)a[i] * (int)s[i];\n"
    "  return r;\n"
    "#endif\n"
    "}\n";

// lm_q8_0_quantize_row: K values of x (a multiple of 32) into int8 q, the f16 scale of each
// block (as f32) and the sum of q over each 16 times its block's scale. The scale's steps are the formula's, op for
// op; every product beside an addition is exact, so a contracted FMA rounds the same. The
// rounding compares y with t +- 0.5 (t = trunc y) instead of forming y - t, which an FMA
// could fuse with y's product.
const char* kQuantizeRow =
    "static void lm_q8_0_quantize_row(const float* restrict x, int64_t K, signed char* "
    "restrict q,\n"
    "                                 float* restrict d, float* restrict s) {\n"
    "  for (int64_t b = 0; b < K / 32; b++) {\n"
    "    const float* restrict xb = x + b * 32;\n"
    "    float amax = 0.0f;\n"
    "    for (int j = 0; j < 32; j++) {\n"
    "      const float a = xb[j] < 0.0f ? -xb[j] : xb[j];\n"
    "      amax = a > amax ? a : amax;\n"
    "    }\n"
    "    const float d0 = amax * 0x1.020408p-7f;\n"
    "    const float ulp = (d0 + d0 * 0x1.000002p-24f) + d0 * -1.0f;\n"
    "    const float residual = (amax + d0 * -128.0f) + d0;\n"
    "    const float dd = d0 + (ulp * 63.5f < residual ? 1.0f : 0.0f) * ulp;\n"
    "    const float d16 = lm_f16_to_f32(lm_f32_to_f16(dd));\n"
    "    const float keep = 0.0f < d16 ? 1.0f : 0.0f;\n"
    "    const float inv = 1.0f / (dd + (keep * -1.0f + 1.0f)) * keep;\n"
    "    signed char* restrict qb = q + b * 32;\n"
    "    for (int j = 0; j < 32; j++) {\n"
    "      const float y = xb[j] * inv;\n"
    "      const float t = __builtin_truncf(y);\n"
    "      const float r = t + (y >= t + 0.5f ? 1.0f : 0.0f) - (y <= t - 0.5f ? 1.0f : 0.0f);\n"
    "      qb[j] = (signed char)(int)r;\n"
    "    }\n"
    "    for (int h = 0; h < 2; h++) {\n"
    "      int sum = 0;\n"
    "      for (int j = 0; j < 16; j++) sum += qb[h * 16 + j];\n"
    "      s[b * 2 + h] = (float)sum * d16;\n"
    "    }\n"
    "    d[b] = d16;\n"
    "  }\n"
    "}\n";

// Whether the int8 dot products of weight type `w` prefetch W (dot4_function).
bool prefetches(DType w) { return w == DType::Q8_0 || w == DType::Q4_0; }

std::string block_name(DType w) { return std::string("lm_qblock_") + dtype_name(w); }
std::string dot4_name(DType w) { return std::string("lm_qdot4_") + dtype_name(w); }

// static inline void lm_qblock_q4_k(const uint8_t* b, const signed char* qx, const float* dx,
// const float* sx, lm_vg8* acc, lm_vg8* corr): weight block b against x's quantized values at
// the same k (qx, with their scales dx per 32 and sums sx per 16, times the scale): int8 dots
// times scales into acc, the offsets' part (x's sums times the weight's offsets) into corr.
std::string block_function(DType w) {
  CodeWriter c;
  c.open("static inline void " + block_name(w) +
         "(const uint8_t* restrict b, const signed char* restrict qx, const float* restrict dx, "
         "const float* restrict sx, lm_vg8* restrict acc, lm_vg8* restrict corr)");
  auto xs = [](const std::string& at) { return "*(const lm_vs32u*)(qx + " + at + ")"; };
  switch (w) {
    case DType::Q8_0:
      c.line("const float d = lm_block_scale(b) * dx[0];");
      c.line("*acc += __builtin_convertvector(lm_dot_ss(*(const lm_vs32u*)(b + 2), " + xs("0") +
             "), lm_vg8) * d;");
      break;
    case DType::Q4_0:
      c.line("const float w = lm_block_scale(b), d = w * dx[0];");
      c.line("const lm_vu16 raw = *(const lm_vu16u*)(b + 2);");
      c.line("const lm_vu32 u = __builtin_shufflevector(raw & 15, raw >> 4, 0, 1, 2, 3, 4, 5, 6, "
             "7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, "
             "28, 29, 30, 31);");
      // The offset 8 taken off in the integers, by a second dot product of x with 8s: a
      // vector instruction, where x's sum times the scale off one lane of corr was several
      // scalar ones (a lane's extract and insert).
      c.line("const lm_vq8 lm_p = lm_dot_us(u, " + xs("0") + ") - lm_dot_us((lm_vu32){0} + 8, " +
             xs("0") + ");");
      c.line("*acc += __builtin_convertvector(lm_p, lm_vg8) * d;");
      c.line("(void)corr;");
      c.line("(void)sx;");
      break;
    case DType::Q4_K:
    case DType::Q5_K: {
      // The 8 sub-blocks' 6-bit scales and minimums unpacked at once (llama.cpp's masks:
      // bytes 0 .. 7 of u the scales, 8 .. 15 the minimums), widened to vectors times d and
      // dmin; sub-block j's scale times x's scale is lane j of sd. The minimums meet x's
      // sums per 32 in one vector product a block.
      const bool five = w == DType::Q5_K;
      c.line("uint32_t u[4];");
      c.line("__builtin_memcpy(u, b + 4, 12);");
      c.line("u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);");
      c.line("const uint32_t mins = u[1] & 0x3f3f3f3fu;");
      c.line("u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);");
      c.line("u[2] = mins;");
      c.line("u[0] &= 0x3f3f3f3fu;");
      const std::string widen = quant_byte_lanes_name(8, false);
      c.line("const lm_vg8 sd = __builtin_convertvector(" + widen +
             "((const uint8_t*)u), lm_vg8) * (lm_block_scale(b) * *(const lm_vg8u*)dx);");
      c.line("const lm_vg8 mn = __builtin_convertvector(" + widen +
             "((const uint8_t*)u + 8), lm_vg8) * lm_block_scale(b + 2);");
      c.line("const lm_vg8 s_lo = *(const lm_vg8u*)sx, s_hi = *(const lm_vg8u*)(sx + 8);");
      c.line("*corr -= mn * (__builtin_shufflevector(s_lo, s_hi, 0, 2, 4, 6, 8, 10, 12, 14) + "
             "__builtin_shufflevector(s_lo, s_hi, 1, 3, 5, 7, 9, 11, 13, 15));");
      if (five) c.line("const lm_vu32 fifth = *(const lm_vu32u*)(b + 16);");
      for (int sub = 0; sub < 8; sub += 2) {
        const std::string S = str(sub);
        const std::string T = str(sub + 1);
        c.line("const lm_vu32 raw" + S + " = *(const lm_vu32u*)(b + " + (five ? "48" : "16") +
               " + " + str(sub * 16) + ");");
        std::string lo = "raw" + S + " & 15";
        std::string hi = "raw" + S + " >> 4";
        if (five) {  // bit j of each fifth-bits byte to bit 4, by a 16-bit word shift
          auto fifth_bit = [&](int j) {
            const std::string f = "(lm_vh16q)fifth";
            const std::string moved = j < 4   ? "(" + f + " << " + str(4 - j) + ")"
                                      : j > 4 ? "(" + f + " >> " + str(j - 4) + ")"
                                              : f;
            return "((lm_vu32)" + moved + " & 0x10)";
          };
          lo = "(" + lo + ") | " + fifth_bit(sub);
          hi = "(" + hi + ") | " + fifth_bit(sub + 1);
        }
        for (const auto& [j, q] : {std::pair{sub, lo}, std::pair{sub + 1, hi}}) {
          const std::string J = str(j);
          c.line("*acc += __builtin_convertvector(lm_dot_us(" + q + ", " + xs(str(j * 32)) +
                 "), lm_vg8) * __builtin_shufflevector(sd, sd, " + J + ", " + J + ", " + J +
                 ", " + J + ", " + J + ", " + J + ", " + J + ", " + J + ");");
        }
      }
      break;
    }
    case DType::Q6_K: {
      // x block xb = 4h + r holds elements 128h + 32r + c: low nibbles of ql (the high ones
      // for r >= 2) and bit pairs 2r of qh, unsigned (q + 32). The 16 scales (times d) as
      // two vectors: lanes 4 .. 7 of a block's dot take the second of its two.
      c.line("const float d = lm_block_scale(b + 208);");
      c.line("const lm_vg8 s0 = __builtin_convertvector(" + quant_byte_lanes_name(8, true) +
             "(b + 192), lm_vg8) * d;");
      c.line("const lm_vg8 s1 = __builtin_convertvector(" + quant_byte_lanes_name(8, true) +
             "(b + 200), lm_vg8) * d;");
      c.line("*corr -= 32.0f * (s0 * *(const lm_vg8u*)sx + s1 * *(const lm_vg8u*)(sx + 8));");
      for (int h = 0; h < 2; ++h) {
        c.line("const lm_vu32 hb" + str(h) + " = *(const lm_vu32u*)(b + " + str(128 + h * 32) +
               ");");
        for (int r = 0; r < 4; ++r) {
          const int xb = 4 * h + r;
          const std::string X = str(xb);
          const std::string l = "*(const lm_vu32u*)(b + " + str(h * 64 + (r & 1) * 32) + ")";
          // bits 2r, 2r + 1 of qh to bits 4, 5: shifted as 16-bit words (one instruction; a
          // byte shift is several), the bits that cross a byte masked off
          const int up = 4 - 2 * r;
          const std::string hb = "(lm_vh16q)hb" + str(h);
          const std::string moved = up > 0   ? "(" + hb + " << " + str(up) + ")"
                                    : up < 0 ? "(" + hb + " >> " + str(-up) + ")"
                                             : hb;
          c.line("const lm_vu32 u" + X + " = (" + l + (r < 2 ? " & 15" : " >> 4") +
                 ") | ((lm_vu32)" + moved + " & 0x30);");
          const std::string sv = xb < 4 ? "s0" : "s1";
          const int at = 2 * (xb % 4);
          std::string lanes;
          for (int k = 0; k < 8; ++k) lanes += ", " + str(at + k / 4);
          c.line("*acc += __builtin_convertvector(lm_dot_us(u" + X + ", " + xs(str(xb * 32)) +
                 "), lm_vg8) * __builtin_shufflevector(" + sv + ", " + sv + lanes + ") * dx[" + X +
                 "];");
        }
      }
      break;
    }
    default:
      throw InternalError(std::string("quant int8: ") + dtype_name(w) + " has no integer dot");
  }
  c.close();
  return c.str();
}

// static void lm_qdot4_q8_0(int64_t K, const char* xq, const uint8_t* w, int64_t ldw,
// float* c, int64_t rows): c[j] = row j of W (j < rows of kWRows; ldw bytes apart) times the
// quantized row xq (K int8, then K / 32 f32 scales, then K / 16 f32 sums times the scale).
std::string dot4_function(DType w) {
  CodeWriter c;
  const std::string bv = str(block_values(w));
  const std::string bytes = str(block_bytes(w));
  c.open("static void " + dot4_name(w) +
         "(int64_t K, const char* restrict xq, const uint8_t* restrict w, int64_t ldw, "
         "float* restrict c, int64_t rows)");
  c.line("const signed char* restrict qx = (const signed char*)xq;");
  c.line("const float* restrict dx = (const float*)(xq + K);");
  c.line("const float* restrict sx = (const float*)(xq + K + K / 32 * 4);");
  // Row by row: a task's rows of W are adjacent, so it reads one stream; taking the rows
  // side by side, block by block, read four streams a thread and half the bandwidth.
  c.open("for (int64_t j = 0; j < " + str(kWRows) + " && j < rows; j++)");
  c.line("const uint8_t* restrict wj = w + j * ldw;");
  // Blocks dealt round kParts accumulators: one would chain every block's sum behind the
  // last (an FMA's latency a block), which bounds Q4_0 and the K-quants below the bandwidth.
  std::string parts;
  for (int p = 0; p < kParts; ++p) {
    parts += (p ? ", a" : "lm_vg8 a") + str(p) + " = {0}, e" + str(p) + " = {0}";
  }
  c.line(parts + ";");
  auto block = [&](const std::string& kb, int p) {
    c.line(block_name(w) + "(wj + (" + kb + ") * " + bytes + ", qx + (" + kb + ") * " + bv +
           ", dx + (" + kb + ") * " + bv + " / 32, sx + (" + kb + ") * " + bv + " / 16, &a" +
           str(p) + ", &e" + str(p) + ");");
  };
  c.line("const int64_t lm_nb = K / " + bv + ";");
  c.line("int64_t kb = 0;");
  c.open("for (; kb + " + str(kParts) + " <= lm_nb; kb += " + str(kParts) + ")");
  // Each step's bytes of W prefetched kGemvPrefetchBytes ahead, for the types of
  // few instructions a byte (prefetches): without it a Xeon read a 75 MB Q4_0 weight at 5.4
  // GB/s (26 with it), Q8_0 at 22 (36). The K-quants' arithmetic hides their loads: with
  // prefetches a 1B Q4_K_M model's step took 63 ms instead of 55 (57.9 with Q6_K's alone).
  if (prefetches(w)) emit_gemv_prefetch("wj + kb * " + bytes, kParts * block_bytes(w), c);
  for (int p = 0; p < kParts; ++p) block("kb + " + str(p), p);
  c.close();
  c.open("for (; kb < lm_nb; kb++)");
  block("kb", 0);
  c.close();
  std::string sum = "const lm_vg8 a = ";
  for (int p = 0; p < kParts; ++p) sum += (p ? " + (a" : "(a") + str(p) + " + e" + str(p) + ")";
  c.line(sum + ";");
  c.line("float t = 0.0f;");
  c.line("for (int l = 0; l < 8; l++) t += a[l];");
  c.line("c[j] = t;");
  c.close();
  c.close();
  return c.str();
}

}  // namespace

std::string CRenderer::quant_int8_prelude(const Kernel& k, std::set<std::string>& seen) const {
  const DType w = k.matmul.b_stored;
  std::string s = quant_block_helpers(8, seen);  // lm_block_scale
  if (seen.insert("lm_dot_us").second) s += kDotHelpers;
  if (seen.insert("lm_q8_0_quantize_row").second) s += kQuantizeRow;
  if (seen.insert(block_name(w)).second) s += block_function(w) + dot4_function(w);
  if (takes_int8_gemm(k, vector_width_)) s += int8_gemm_prelude(k, seen);
  return s;
}

bool CRenderer::render_quant_dot(const Program& program, const Kernel& k, CodeWriter& w) const {
  (void)program;
  const MatmulInfo& mm = k.matmul;
  if (!takes_gemm(k, vector_width_)) return false;
  const DType stored = mm.b_stored;
  const int outer = mm.m_loop - folded_batch_loops(k);
  const std::string wrows = str(kWRows);
  emit_matmul_sizes(k, outer, w);
  w.line("const int64_t lm_ldw = bn / " + str(block_values(stored)) + " * " +
         str(block_bytes(stored)) + ";");
  // W in row groups (quant_rows 4, kernel/quant_row_groups.h): the bytes of a group
  const bool groups = k.panels && k.panels->row_groups;
  const bool offsets = groups && group_x_offset(stored) != 0;
  if (groups) w.line("const int64_t lm_gbytes = " + str(group_bytes(stored, k.panels->k)) + ";");
  // Per row of x: K int8, K / 32 f32 scales, K / 16 f32 sums (and in Q4_0's and Q8_0's row
  // groups K / 32 int32 offsets), rounded up to 64 bytes.
  w.line(std::string("const int64_t lm_xbytes = (K + K / 32 * 4 + K / 16 * 4") +
         (offsets ? " + K / 32 * 4" : "") + " + 63) / 64 * 64;");
  w.line("const int64_t lm_xrows = lm_batches * M;");
  w.line("char* lm_raw = (char*)malloc(lm_xrows * lm_xbytes + 64);");
  w.line("char* lm_xq = (char*)(((unsigned long)lm_raw + 63) & ~63ul);");
  w.line("const int64_t lm_wblocks = (N + " + wrows + " - 1) / " + wrows + ";");
  const bool wide = outer == 0;  // the GEMM path takes rows am apart, no batch loops
  const int64_t most = int8_gemv_rows(schedule_of(k).gemv_rows, groups);
  w.line(std::string("const int lm_wide = ") + (wide ? "M > " + str(most) : "0") + ";");
  const bool int8 = takes_int8_gemm(k, vector_width_);  // past `most` rows (c/quant_int8_gemm.cc)
  if (!int8) w.line("float* lm_xf = lm_wide ? (float*)malloc(sizeof(float) * M * am + 64) : 0;");
  std::string team = omp_team(k, "lm_batches * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_task = 0; lm_task < lm_xrows; lm_task++)");
  w.line("const int64_t lm_bt = lm_task / M;");
  emit_batch_bases(k, outer, "uint8_t", w);
  w.line("(void)B;");
  w.line("(void)C;");
  w.line("char* lm_row = lm_xq + lm_task * lm_xbytes;");
  w.line("lm_q8_0_quantize_row(A + lm_task % M * am, K, (signed char*)lm_row, "
         "(float*)(lm_row + K), (float*)(lm_row + K + K / 32 * 4));");
  w.open("if (lm_wide)");
  if (int8) {  // q + 128, the int8 GEMM's unsigned bytes
    w.line("for (int64_t j = 0; j < K; j++) lm_row[j] = (char)((unsigned char)lm_row[j] ^ 0x80);");
  } else {
    w.line("const float* restrict lm_d = (const float*)(lm_row + K);");
    w.line("for (int64_t j = 0; j < K; j++) lm_xf[lm_task * am + j] = "
           "(float)((signed char*)lm_row)[j] * lm_d[j / 32];");
  }
  w.close();
  if (offsets) {  // each block's sum times minus the groups' weight offset (group_x_offset)
    w.open("else");
    w.line("int* restrict lm_o = (int*)(lm_row + K + K / 32 * 4 + K / 16 * 4);");
    w.open("for (int64_t b = 0; b < K / 32; b++)");
    w.line("int sum = 0;");
    w.line("for (int j = 0; j < 32; j++) sum += ((const signed char*)lm_row)[b * 32 + j];");
    w.line("lm_o[b] = sum * " + str(-group_x_offset(stored)) + ";");
    w.close();
    w.close();
  }
  w.close();
  w.open("if (!lm_wide)");
  open_weight_row_tasks(k, outer, kWRows, w);
  w.line("(void)A;");
  if (groups) {  // kGroupXRows rows of x a pass while they last, then fewer
    w.line("int64_t lm_i = 0;");
    for (int64_t x_rows = kGroupXRows; x_rows >= 1; x_rows /= 2) {
      w.line("for (; lm_i + " + str(x_rows) + " <= M; lm_i += " + str(x_rows) + ") " +
             group_gemv_name(stored, x_rows) + "(K, lm_xq + (lm_bt * M + lm_i) * lm_xbytes, "
             "lm_xbytes, B + n0 / " + wrows + " * lm_gbytes, C + lm_i * N + n0, N, rows);");
    }
  } else {
    w.open("for (int64_t lm_i = 0; lm_i < M; lm_i++)");
    w.line(dot4_name(stored) + "(K, lm_xq + (lm_bt * M + lm_i) * lm_xbytes, B + n0 * lm_ldw, "
           "lm_ldw, C + lm_i * N + n0, rows);");
    w.close();
  }
  emit_matmul_epilogue(k, outer, "0", "M", "n0", "n0 + rows", w);
  w.close();
  w.close();
  w.close();
  if (wide) {
    w.open("if (lm_wide)");
    if (int8) {
      emit_int8_gemm(k, w);
    } else {
      emit_gemm(k, outer, "lm_xf", w);
      w.line("free(lm_xf);");
    }
    w.close();
  }
  w.line("free(lm_raw);");
  return true;
}

}  // namespace luminal
