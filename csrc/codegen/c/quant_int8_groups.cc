// The int8 GEMV on a weight in row groups (schedule quant_rows 4, kernel/quant_row_groups.h):
// a task's 4 rows of W are one group, one stream of chunks; each 64-byte vector of a block's
// slot holds the same 16 bytes of its 4 rows, which meet x's 16 bytes at that k broadcast to
// the four 128-bit lanes in one 512-bit vpdpbusd (c/quant_int8_gemm.cc's lm_dpbusd). Q4_0 and
// Q8_0: a block's sums start at minus its weight offset times x's sum (Q4_0's 8, Q8_0's stored
// 128, over the four lanes of a row: x's precomputed per-block offsets), and go to f32 times
// the block's scales, row r's in lanes 4r .. 4r + 3. Q4_K: each sub-block's sums times its
// scales (the 6-bit scale times d, laid out as bytes) and x's, and the minimums (times dmin)
// times x's sums per 32 in one more accumulator, row r's in lanes r, r + 4, r + 8, r + 12.
// Against the GEMV on GGUF's blocks (c/quant_int8.cc), which spends a 256-bit vector on one
// row's block, a quarter of the instructions a block. Not the GEMM of the same layout (its
// pack, c/quant_int8_gemm.cc) nor x's quantization.
#include <set>
#include <string>

#include "codegen/c/matmul.h"
#include "codegen/c/quant.h"
#include "core/errors.h"
#include "kernel/quant_row_groups.h"

namespace luminal {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The integers' sums of block `i` (a C expression: its index in the chunk at `ch`, and the
// block's index `kb`) against x, into lm_vi16 `p`.
void emit_group_block(DType w, const std::string& i, const std::string& kb, CodeWriter& c) {
  const int64_t slot = group_slot_bytes(w);
  c.line("const signed char* restrict xb = qx + (" + kb + ") * 32;");
  c.line("lm_vi16 p = (lm_vi16){0} + ox[" + kb + "];");
  c.line("const lm_vi16 xl = lm_bcast16(xb), xh = lm_bcast16(xb + 16);");
  const std::string at = "ch + (" + i + ") * " + str(slot);
  if (w == DType::Q4_0) {
    c.line("const lm_vi16 q = *(const lm_vi16*)(" + at + ");");
    c.line("p = lm_dpbusd(p, q & 0x0f0f0f0f, xl);");
    c.line("p = lm_dpbusd(p, (q >> 4) & 0x0f0f0f0f, xh);");
  } else {
    c.line("p = lm_dpbusd(p, *(const lm_vi16*)(" + at + "), xl);");
    c.line("p = lm_dpbusd(p, *(const lm_vi16*)(" + at + " + 64), xh);");
  }
}

}  // namespace

std::string group_gemv_name(DType w) { return std::string("lm_qdotg_") + dtype_name(w); }

int64_t group_x_offset(DType w) {
  if (w == DType::Q4_0) return 8 / 4;
  if (w == DType::Q8_0) return 128 / 4;
  if (w == DType::Q4_K) return 0;  // its minimums are taken off in f32
  throw InternalError(std::string("row groups: ") + dtype_name(w) + " has none");
}

namespace {
const char* kGroupHelpers =
    "typedef unsigned char lm_vb16g __attribute__((vector_size(16), aligned(1), may_alias));\n"
    "typedef short lm_vh16g __attribute__((vector_size(32), aligned(2), may_alias));\n"
    "static inline lm_vi16 lm_bcast16(const signed char* p) {\n"
    "  lm_vi16 r;\n"
    "  __asm__(\"vbroadcasti32x4 %1, %0\" : \"=v\"(r) : \"m\"(*(const lm_vb16g*)p));\n"
    "  return r;\n"
    "}\n"
    "static inline lm_vf16 lm_f16x16(const uint8_t* p) {\n"
    "  lm_vf16 r;\n"
    "  __asm__(\"vcvtph2ps %1, %0\" : \"=v\"(r) : \"m\"(*(const lm_vh16g*)p));\n"
    "  return r;\n"
    "}\n"
    // 4 f16 at p, repeated four times; 16 bytes at p as 16 floats
    // (the 8 bytes broadcast, then widened: a shuffle of the 4 floats went through memory)
    "typedef long long lm_vq1g __attribute__((aligned(2), may_alias));\n"
    "typedef short lm_vh16r __attribute__((vector_size(32)));\n"
    "static inline lm_vf16 lm_f16x4r(const uint8_t* p) {\n"
    "  lm_vh16r t;\n"
    "  lm_vf16 r;\n"
    "  __asm__(\"vpbroadcastq %1, %0\" : \"=v\"(t) : \"m\"(*(const lm_vq1g*)p));\n"
    "  __asm__(\"vcvtph2ps %1, %0\" : \"=v\"(r) : \"v\"(t));\n"
    "  return r;\n"
    "}\n"
    // (a vpmovzxbd: GCC builds the vector's conversion from bytes one byte at a time)
    "static inline lm_vf16 lm_u8x16(const uint8_t* p) {\n"
    "  lm_vi16 r;\n"
    "  __asm__(\"vpmovzxbd %1, %0\" : \"=v\"(r) : \"m\"(*(const lm_vb16g*)p));\n"
    "  return __builtin_convertvector(r, lm_vf16);\n"
    "}\n";
}  // namespace

std::string group_gemv_prelude(DType w, std::set<std::string>& seen) {
  std::string s;
  if (seen.insert("lm_bcast16").second) s += kGroupHelpers;
  if (seen.insert(group_gemv_name(w)).second) s += group_gemv_function(w);
  return s;
}

namespace {

// lm_vf16 `name`'s lanes 4r .. 4r + 3 lane `at` * 4 + r of `v` (a block's or sub-block's 4
// rows, of the four at lanes 4i + r).
std::string spread(const std::string& v, int64_t at) {
  std::string lanes;
  for (int l = 0; l < 16; ++l) lanes += ", " + str(at * 4 + l / 4);
  return "__builtin_shufflevector(" + v + ", " + v + lanes + ")";
}

// Q4_K's GEMV body: a block (256 k) at a time, its 8 sub-blocks' sums (2 vpdpbusd each) times
// their scales in a0 / a1, the minimums' part in e.
void emit_q4_k_group_gemv(CodeWriter& c) {
  const DType w = DType::Q4_K;
  const int64_t per = group_chunk_blocks(w);
  const int64_t slot = group_slot_bytes(w);
  const int64_t meta = group_meta_bytes(w);
  c.line("const float* restrict sx = (const float*)(xq + K + K / 32 * 4);");
  c.line("lm_vf16 a0 = {0}, a1 = {0}, e = {0};");
  c.open("for (int64_t b = 0; b < K / 256; b++)");
  c.line("const uint8_t* restrict ch = w + b / " + str(per) + " * " + str(group_chunk_bytes(w)) +
         ";");
  emit_gemv_prefetch("ch + b % " + str(per) + " * " + str(slot + meta), slot + meta, c);
  c.line("const uint8_t* restrict q = ch + b % " + str(per) + " * " + str(slot) + ";");
  c.line("const uint8_t* restrict m = ch + " + str(per * slot) + " + b % " + str(per) + " * " +
         str(meta) + ";");
  c.line("const lm_vf16 d4 = lm_f16x4r(m + 64), dm4 = lm_f16x4r(m + 72);");
  c.line("const lm_vf16 sc0 = lm_u8x16(m) * d4, sc1 = lm_u8x16(m + 16) * d4;");
  // x's sums per 32 (of its 16 sums per 16) at lanes 4s + r, against the minimums' layout
  c.line("const lm_vf16 xs = *(const lm_vf16u*)(sx + b * 16);");
  for (int64_t half = 0; half < 2; ++half) {
    std::string even, odd;
    for (int l = 0; l < 16; ++l) {
      even += ", " + str(half * 8 + l / 4 * 2);
      odd += ", " + str(half * 8 + l / 4 * 2 + 1);
    }
    c.line("const lm_vf16 x" + str(half) + " = __builtin_shufflevector(xs, xs" + even +
           ") + __builtin_shufflevector(xs, xs" + odd + ");");
  }
  c.line("e -= (lm_u8x16(m + 32) * x0 + lm_u8x16(m + 48) * x1) * dm4;");
  c.line("const signed char* restrict xb0 = qx + b * 256;");
  for (int64_t j = 0; j < 4; ++j) {
    c.open("");
    c.line("const lm_vi16 v0 = *(const lm_vi16*)(q + " + str(128 * j) +
           "), v1 = *(const lm_vi16*)(q + " + str(128 * j + 64) + ");");
    const std::string x = "xb0 + " + str(64 * j);
    c.line("const lm_vi16 p0 = lm_dpbusd(lm_dpbusd((lm_vi16){0}, v0 & 0x0f0f0f0f, lm_bcast16(" +
           x + ")), v1 & 0x0f0f0f0f, lm_bcast16(" + x + " + 16));");
    c.line("const lm_vi16 p1 = lm_dpbusd(lm_dpbusd((lm_vi16){0}, (v0 >> 4) & 0x0f0f0f0f, "
           "lm_bcast16(" + x + " + 32)), (v1 >> 4) & 0x0f0f0f0f, lm_bcast16(" + x + " + 48));");
    for (int64_t h = 0; h < 2; ++h) {
      const int64_t sub = 2 * j + h;
      const std::string v = sub < 4 ? "sc0" : "sc1";
      c.line("a" + str(h) + " += __builtin_convertvector(p" + str(h) + ", lm_vf16) * (" +
             spread(v, sub % 4) + " * dx[b * 8 + " + str(sub) + "]);");
    }
    c.close();
  }
  c.close();
  c.line("const lm_vf16 a = a0 + a1;");
  c.line("for (int64_t r = 0; r < rows; r++) c[r] = ((a[4 * r] + a[4 * r + 1]) + (a[4 * r + 2] + "
         "a[4 * r + 3])) + ((e[r] + e[r + 4]) + (e[r + 8] + e[r + 12]));");
}

// Q4_0's and Q8_0's: a chunk (8 blocks) at a time, then the last chunk's blocks.
void emit_block_group_gemv(DType w, CodeWriter& c) {
  const int64_t per = group_chunk_blocks(w);
  const std::string chunk = str(group_chunk_bytes(w));
  const std::string scales = str(per * group_slot_bytes(w));
  c.line("const int* restrict ox = (const int*)(xq + K + K / 32 * 4 + K / 16 * 4);");
  c.line("const int64_t nb = K / 32;");
  c.line("lm_vf16 a0 = {0}, a1 = {0};");
  c.line("int64_t c0 = 0;");
  c.open("for (; c0 + " + str(per) + " <= nb; c0 += " + str(per) + ")");
  c.line("const uint8_t* restrict ch = w + c0 / " + str(per) + " * " + chunk + ";");
  emit_gemv_prefetch("ch", group_chunk_bytes(w), c);
  c.line("const lm_vf16 s0 = lm_f16x16(ch + " + scales + "), s1 = lm_f16x16(ch + " + scales +
         " + 32);");
  for (int64_t i = 0; i < per; ++i) {
    c.open("");
    emit_group_block(w, str(i), "c0 + " + str(i), c);
    const std::string s = i < 4 ? "s0" : "s1";
    c.line("a" + str(i % 2) + " += __builtin_convertvector(p, lm_vf16) * (" + spread(s, i % 4) +
           " * dx[c0 + " + str(i) + "]);");
    c.close();
  }
  c.close();
  // the last chunk's blocks, fewer than a chunk: their scales one by one
  c.open("for (int64_t i = 0; c0 + i < nb; i++)");
  c.line("const uint8_t* restrict ch = w + c0 / " + str(per) + " * " + chunk + ";");
  emit_group_block(w, "i", "c0 + i", c);
  c.line("const lm_vf16 sc = lm_f16x4r(ch + " + scales + " + i * " + str(group_meta_bytes(w)) +
         ");");
  c.line("a0 += __builtin_convertvector(p, lm_vf16) * (" + spread("sc", 0) + " * dx[c0 + i]);");
  c.close();
  c.line("const lm_vf16 a = a0 + a1;");
  c.line("for (int64_t r = 0; r < rows; r++) c[r] = (a[4 * r] + a[4 * r + 1]) + (a[4 * r + 2] + "
         "a[4 * r + 3]);");
}

}  // namespace

// static void lm_qdotg_q4_0(int64_t K, const char* xq, const uint8_t* w, float* c,
// int64_t rows): c[r] = row r (r < rows) of the group at w times the quantized row xq (K int8,
// K / 32 f32 scales, K / 16 f32 sums times the scale, and for Q4_0 and Q8_0 K / 32 int32
// offsets: -group_x_offset times a block's sum).
std::string group_gemv_function(DType w) {
  CodeWriter c;
  c.open("static void " + group_gemv_name(w) +
         "(int64_t K, const char* restrict xq, const uint8_t* restrict w, float* restrict c, "
         "int64_t rows)");
  c.line("const signed char* restrict qx = (const signed char*)xq;");
  c.line("const float* restrict dx = (const float*)(xq + K);");
  if (w == DType::Q4_K) {
    emit_q4_k_group_gemv(c);
  } else {
    emit_block_group_gemv(w, c);
  }
  c.close();
  return c.str();
}

}  // namespace luminal
