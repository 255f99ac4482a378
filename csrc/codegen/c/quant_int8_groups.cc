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
// row's block, a quarter of the instructions a block. One call meets 1, 2 or 4 rows of x
// (kGroupXRows), each group's weights loaded and unpacked once for them. Not the GEMM of the
// same layout (its pack, c/quant_int8_gemm.cc) nor x's quantization.
#include <set>
#include <string>

#include "codegen/c/matmul.h"
#include "codegen/c/quant.h"
#include "core/errors.h"
#include "kernel/quant_row_groups.h"

namespace luminal {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Row r's pointers into x's rows (xs bytes apart): its integers qx<r>, scales per block dx<r>.
void emit_x_rows(int64_t x_rows, CodeWriter& c) {
  for (int64_t r = 0; r < x_rows; ++r) {
    const std::string R = str(r);
    c.line("const signed char* restrict qx" + R + " = (const signed char*)(xq + " + R +
           " * xs);");
    c.line("const float* restrict dx" + R + " = (const float*)(xq + " + R + " * xs + K);");
  }
}

// The group's integers of block `i` in the chunk at `ch`, loaded once for every row of x:
// Q4_0's low and high nibbles (lo, hi), Q8_0's two vectors.
void emit_group_weights(DType w, const std::string& i, CodeWriter& c) {
  const std::string at = "ch + (" + i + ") * " + str(group_slot_bytes(w));
  if (w == DType::Q4_0) {
    c.line("const lm_vi16 q = *(const lm_vi16*)(" + at + ");");
    c.line("const lm_vi16 lo = q & 0x0f0f0f0f, hi = (q >> 4) & 0x0f0f0f0f;");
  } else {
    c.line("const lm_vi16 lo = *(const lm_vi16*)(" + at + "), hi = *(const lm_vi16*)(" + at +
           " + 64);");
  }
}

// Row r of x's integer sums of block `kb` against the weights (lo, hi) into lm_vi16 p<r>.
void emit_group_block(int64_t r, const std::string& kb, CodeWriter& c) {
  const std::string R = str(r);
  const std::string xb = "qx" + R + " + (" + kb + ") * 32";
  c.line("lm_vi16 p" + R + " = (lm_vi16){0} + ox" + R + "[" + kb + "];");
  c.line("p" + R + " = lm_dpbusd(p" + R + ", lo, lm_bcast16(" + xb + "));");
  c.line("p" + R + " = lm_dpbusd(p" + R + ", hi, lm_bcast16(" + xb + " + 16));");
}

// Row r's results: c[r * ldc + j] = the sum of its accumulator's lanes 4j .. 4j + 3 (and, for
// Q4_K, the minimums' lanes j, j + 4, j + 8, j + 12).
void emit_group_store(int64_t x_rows, bool minimums, CodeWriter& c) {
  for (int64_t r = 0; r < x_rows; ++r) {
    const std::string R = str(r);
    c.line("const lm_vf16 a" + R + " = a" + R + "_0 + a" + R + "_1;");
    std::string e;
    if (minimums) {
      e = " + ((e" + R + "[j] + e" + R + "[j + 4]) + (e" + R + "[j + 8] + e" + R + "[j + 12]))";
    }
    c.line("for (int64_t j = 0; j < rows; j++) c[" + R + " * ldc + j] = ((a" + R + "[4 * j] + a" +
           R + "[4 * j + 1]) + (a" + R + "[4 * j + 2] + a" + R + "[4 * j + 3]))" + e + ";");
  }
}

}  // namespace

std::string group_gemv_name(DType w, int64_t x_rows) {
  return std::string("lm_qdotg_") + dtype_name(w) + (x_rows > 1 ? "_x" + str(x_rows) : "");
}

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
  for (int64_t x_rows = kGroupXRows; x_rows >= 1; x_rows /= 2) {
    if (seen.insert(group_gemv_name(w, x_rows)).second) s += group_gemv_function(w, x_rows);
  }
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
// their scales in a<r>_0 / a<r>_1, the minimums' part in e<r>, for each row r of x.
void emit_q4_k_group_gemv(int64_t x_rows, CodeWriter& c) {
  const DType w = DType::Q4_K;
  const int64_t per = group_chunk_blocks(w);
  const int64_t slot = group_slot_bytes(w);
  const int64_t meta = group_meta_bytes(w);
  for (int64_t r = 0; r < x_rows; ++r) {
    const std::string R = str(r);
    c.line("const float* restrict sx" + R + " = (const float*)(xq + " + R +
           " * xs + K + K / 32 * 4);");
    c.line("lm_vf16 a" + R + "_0 = {0}, a" + R + "_1 = {0}, e" + R + " = {0};");
  }
  c.open("for (int64_t b = 0; b < K / 256; b++)");
  c.line("const uint8_t* restrict ch = w + b / " + str(per) + " * " + str(group_chunk_bytes(w)) +
         ";");
  emit_gemv_prefetch("ch + b % " + str(per) + " * " + str(slot + meta), slot + meta, c);
  c.line("const uint8_t* restrict q = ch + b % " + str(per) + " * " + str(slot) + ";");
  c.line("const uint8_t* restrict m = ch + " + str(per * slot) + " + b % " + str(per) + " * " +
         str(meta) + ";");
  c.line("const lm_vf16 d4 = lm_f16x4r(m + 64), dm4 = lm_f16x4r(m + 72);");
  c.line("const lm_vf16 sc0 = lm_u8x16(m) * d4, sc1 = lm_u8x16(m + 16) * d4;");
  c.line("const lm_vf16 mn0 = lm_u8x16(m + 32) * dm4, mn1 = lm_u8x16(m + 48) * dm4;");
  // x's sums per 32 (of its 16 sums per 16) at lanes 4s + j, against the minimums' layout
  for (int64_t r = 0; r < x_rows; ++r) {
    const std::string R = str(r);
    c.open("");
    c.line("const lm_vf16 xs = *(const lm_vf16u*)(sx" + R + " + b * 16);");
    for (int64_t half = 0; half < 2; ++half) {
      std::string even, odd;
      for (int l = 0; l < 16; ++l) {
        even += ", " + str(half * 8 + l / 4 * 2);
        odd += ", " + str(half * 8 + l / 4 * 2 + 1);
      }
      c.line("const lm_vf16 x" + str(half) + " = __builtin_shufflevector(xs, xs" + even +
             ") + __builtin_shufflevector(xs, xs" + odd + ");");
    }
    c.line("e" + R + " -= mn0 * x0 + mn1 * x1;");
    c.close();
  }
  for (int64_t j = 0; j < 4; ++j) {
    c.open("");
    c.line("const lm_vi16 v0 = *(const lm_vi16*)(q + " + str(128 * j) +
           "), v1 = *(const lm_vi16*)(q + " + str(128 * j + 64) + ");");
    c.line("const lm_vi16 l0 = v0 & 0x0f0f0f0f, l1 = v1 & 0x0f0f0f0f, h0 = (v0 >> 4) & "
           "0x0f0f0f0f, h1 = (v1 >> 4) & 0x0f0f0f0f;");
    for (int64_t h = 0; h < 2; ++h) {
      const int64_t sub = 2 * j + h;
      c.line("const lm_vf16 s" + str(h) + " = " + spread(sub < 4 ? "sc0" : "sc1", sub % 4) + ";");
    }
    for (int64_t r = 0; r < x_rows; ++r) {
      const std::string R = str(r);
      const std::string x = "qx" + R + " + b * 256 + " + str(64 * j);
      c.line("const lm_vi16 p" + R + "_0 = lm_dpbusd(lm_dpbusd((lm_vi16){0}, l0, lm_bcast16(" + x +
             ")), l1, lm_bcast16(" + x + " + 16));");
      c.line("const lm_vi16 p" + R + "_1 = lm_dpbusd(lm_dpbusd((lm_vi16){0}, h0, lm_bcast16(" + x +
             " + 32)), h1, lm_bcast16(" + x + " + 48));");
      for (int64_t h = 0; h < 2; ++h) {
        const std::string H = str(h);
        c.line("a" + R + "_" + H + " += __builtin_convertvector(p" + R + "_" + H +
               ", lm_vf16) * (s" + H + " * dx" + R + "[b * 8 + " + str(2 * j + h) + "]);");
      }
    }
    c.close();
  }
  c.close();
  emit_group_store(x_rows, true, c);
}

// Q4_0's and Q8_0's: a chunk (8 blocks) at a time, then the last chunk's blocks.
void emit_block_group_gemv(DType w, int64_t x_rows, CodeWriter& c) {
  const int64_t per = group_chunk_blocks(w);
  const std::string chunk = str(group_chunk_bytes(w));
  const std::string scales = str(per * group_slot_bytes(w));
  for (int64_t r = 0; r < x_rows; ++r) {
    const std::string R = str(r);
    c.line("const int* restrict ox" + R + " = (const int*)(xq + " + R +
           " * xs + K + K / 32 * 4 + K / 16 * 4);");
    c.line("lm_vf16 a" + R + "_0 = {0}, a" + R + "_1 = {0};");
  }
  c.line("const int64_t nb = K / 32;");
  c.line("int64_t c0 = 0;");
  c.open("for (; c0 + " + str(per) + " <= nb; c0 += " + str(per) + ")");
  c.line("const uint8_t* restrict ch = w + c0 / " + str(per) + " * " + chunk + ";");
  emit_gemv_prefetch("ch", group_chunk_bytes(w), c);
  c.line("const lm_vf16 s0 = lm_f16x16(ch + " + scales + "), s1 = lm_f16x16(ch + " + scales +
         " + 32);");
  for (int64_t i = 0; i < per; ++i) {
    c.open("");
    emit_group_weights(w, str(i), c);
    c.line("const lm_vf16 sc = " + spread(i < 4 ? "s0" : "s1", i % 4) + ";");
    for (int64_t r = 0; r < x_rows; ++r) {
      const std::string R = str(r);
      emit_group_block(r, "c0 + " + str(i), c);
      c.line("a" + R + "_" + str(i % 2) + " += __builtin_convertvector(p" + R +
             ", lm_vf16) * (sc * dx" + R + "[c0 + " + str(i) + "]);");
    }
    c.close();
  }
  c.close();
  // the last chunk's blocks, fewer than a chunk: their scales one by one
  c.open("for (int64_t i = 0; c0 + i < nb; i++)");
  c.line("const uint8_t* restrict ch = w + c0 / " + str(per) + " * " + chunk + ";");
  emit_group_weights(w, "i", c);
  c.line("const lm_vf16 sc4 = lm_f16x4r(ch + " + scales + " + i * " + str(group_meta_bytes(w)) +
         ");");
  c.line("const lm_vf16 sc = " + spread("sc4", 0) + ";");
  for (int64_t r = 0; r < x_rows; ++r) {
    const std::string R = str(r);
    emit_group_block(r, "c0 + i", c);
    c.line("a" + R + "_0 += __builtin_convertvector(p" + R + ", lm_vf16) * (sc * dx" + R +
           "[c0 + i]);");
  }
  c.close();
  emit_group_store(x_rows, false, c);
}

}  // namespace

// static void lm_qdotg_q4_0_x4(int64_t K, const char* xq, int64_t xs, const uint8_t* w,
// float* c, int64_t ldc, int64_t rows): c[i * ldc + j] = row j (j < rows) of the group at w
// times quantized row i of x (i < 4, xs bytes apart from xq): K int8, K / 32 f32 scales,
// K / 16 f32 sums times the scale, and for Q4_0 and Q8_0 K / 32 int32 offsets
// (-group_x_offset times a block's sum). The group's weights are loaded and unpacked once for
// the x_rows rows of x.
std::string group_gemv_function(DType w, int64_t x_rows) {
  CodeWriter c;
  c.open("static void " + group_gemv_name(w, x_rows) +
         "(int64_t K, const char* restrict xq, int64_t xs, const uint8_t* restrict w, "
         "float* restrict c, int64_t ldc, int64_t rows)");
  emit_x_rows(x_rows, c);
  if (w == DType::Q4_K) {
    emit_q4_k_group_gemv(x_rows, c);
  } else {
    emit_block_group_gemv(w, x_rows, c);
  }
  c.close();
  return c.str();
}

}  // namespace luminal
