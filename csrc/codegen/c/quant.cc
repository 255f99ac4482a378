// Quantized weights in generated C: the element readers (renderings of core/quant.cc's
// dequantize_element, in the same f32 operations and order) and the C renderer's quantized
// GEMV. Each task of the GEMV takes kWRows rows of W (columns of C), one after the other (one
// stream of memory a thread); per block along k it widens each row's integers in registers (one widening load for a vector of bytes, nibbles
// and bit pairs masked and shifted) and multiplies them with kXRows rows of A in f32 vectors;
// each scale multiplies the sum of its group once, so no value is dequantized on its own (the
// sums are reassociated: within the check's tolerance, not bit-equal to the readers). Every M
// runs this path: a block widened per pair of rows of A still beats a generic loop nest.
#include "codegen/c/quant.h"

#include <set>

#include "codegen/c/renderer.h"
#include "codegen/c/matmul.h"
#include "codegen/c/schedule.h"
#include "core/errors.h"

namespace luminal {

namespace {

constexpr int64_t kWRows = 4;  // rows of W per step
constexpr int64_t kXRows = 2;  // rows of A per step

std::string str(int64_t v) { return std::to_string(v); }

std::string reader_name(DType dtype) { return std::string("lm_") + dtype_name(dtype) + "_at"; }

// The f16 at byte `at` of block b, as a float.
std::string f16_at(const std::string& at) {
  return "lm_f16_to_f32((uint16_t)(b[" + at + "] | b[" + at + " + 1] << 8))";
}

std::string reader(DType dtype, const std::string& q, const std::string& bytes) {
  const std::string head = q + " float " + reader_name(dtype) + "(" + bytes + " p, int64_t i) {\n" +
                           "  " + bytes + " b = p + i / " + str(block_values(dtype)) + " * " +
                           str(block_bytes(dtype)) + ";\n" + "  const int64_t j = i % " +
                           str(block_values(dtype)) + ";\n";
  switch (dtype) {
    case DType::Q8_0:
      return head + "  return (float)(signed char)b[2 + j] * " + f16_at("0") + ";\n}\n";
    case DType::Q4_0:
      return head + "  const int q = ((j < 16 ? b[2 + j] : b[2 + j - 16] >> 4) & 15) - 8;\n" +
             "  return " + f16_at("0") + " * (float)q;\n}\n";
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = dtype == DType::Q5_K;  // the nibbles at 48, fifth bits at 16
      return head + "  " + bytes + " s = b + 4;\n" + "  const int64_t sub = j / 32;\n" +
             "  const int sc = sub < 4 ? s[sub] & 63 : (s[sub + 4] & 15) | ((s[sub - 4] >> 2) & 48);\n" +
             "  const int m = sub < 4 ? s[sub + 4] & 63 : (s[sub + 4] >> 4) | ((s[sub] >> 2) & 48);\n" +
             "  const int byte = b[" + (five ? "48" : "16") + " + sub / 2 * 32 + j % 32];\n" +
             "  const int q = ((sub % 2 == 0 ? byte : byte >> 4) & 15)" +
             (five ? " | ((b[16 + j % 32] >> sub) & 1) << 4" : "") + ";\n" + "  return " +
             f16_at("0") + " * (float)sc * (float)q - " + f16_at("2") + " * (float)m;\n}\n";
    }
    case DType::Q6_K:
      return head + "  const int64_t h = j / 128, r = j % 128;\n" +
             "  const int low = (b[h * 64 + r % 64] >> (4 * (r / 64))) & 15;\n" +
             "  const int high = (b[128 + h * 32 + r % 32] >> (2 * (r / 32))) & 3;\n" +
             "  const int q = (signed char)(low | high << 4) - 32;\n" + "  return " +
             f16_at("208") + " * (float)(signed char)b[192 + j / 16] * (float)q;\n}\n";
    default:
      break;
  }
  throw InternalError(std::string("quant reader: ") + dtype_name(dtype) + " is not quantized");
}

// The vector types the block functions use: `width` bytes (unaligned), as a 16-byte vector
// (what the widening instructions take), and `width` int32 lanes.
std::string block_typedefs(int64_t width) {
  const std::string w = str(width);
  return "typedef unsigned char lm_vb" + w + "u __attribute__((vector_size(" + w +
         "), aligned(1), may_alias));\n" + "typedef signed char lm_vsb" + w +
         "u __attribute__((vector_size(" + w + "), aligned(1), may_alias));\n" +
         "typedef int lm_vi" + w + " __attribute__((vector_size(" + str(4 * width) + ")));\n" +
         "typedef char lm_vc16q __attribute__((vector_size(16)));\n" +
         "typedef long long lm_vl2q __attribute__((vector_size(16)));\n";
}

// static inline lm_vi8 lm_ubytes_v8(const uint8_t* p): `width` bytes at p (unaligned) as int
// lanes, zero- or sign-extended, by one widening load where the target has it (SSE4.1's
// pmov[sz]xbd for 4 lanes, AVX2's for 8, AVX-512's for 16); GCC's generic conversion, which
// it does a byte at a time, elsewhere.
std::string byte_lanes_function(int64_t width, bool is_signed) {
  const std::string W = str(width);
  const std::string ints = "lm_vi" + W;
  const std::string x = is_signed ? "s" : "z";
  std::string s = "static inline " + ints + " " + quant_byte_lanes_name(width, is_signed) +
                  "(const uint8_t* restrict p) {\n";
  std::string guard, widen;
  if (width == 4) {
    guard = "__SSE4_1__";
    widen = "__builtin_ia32_pmov" + x + "xbd128(q)";
  } else if (width == 8) {
    guard = "__AVX2__";
    widen = "__builtin_ia32_pmov" + x + "xbd256(q)";
  } else {
    guard = "__AVX512F__";
    widen = "__builtin_ia32_pmov" + x + "xbd512_mask(q, (" + ints + "){0}, (unsigned short)-1)";
  }
  s += "#if defined(" + guard + ")\n";
  if (width == 16) {
    s += "  lm_vc16q q;\n  __builtin_memcpy(&q, p, 16);\n";
  } else {
    const std::string word = width == 8 ? "long long" : "int";
    s += "  " + word + " v;\n  __builtin_memcpy(&v, p, " + W + ");\n";
    s += "  lm_vc16q q = (lm_vc16q)(lm_vl2q){(long long)" +
         std::string(width == 8 ? "v" : "(unsigned int)v") + ", 0};\n";
  }
  s += "  return (" + ints + ")" + widen + ";\n#else\n";
  s += "  return __builtin_convertvector(*(const lm_v" + std::string(is_signed ? "sb" : "b") + W +
       "u*)p, " + ints + ");\n#endif\n}\n";
  return s;
}

// A block's f16 scale at byte `at` of b, by F16C where the target has it.
std::string scale_function() {
  return "static inline float lm_block_scale(const uint8_t* restrict p) {\n"
         "  const uint16_t h = (uint16_t)(p[0] | p[1] << 8);\n"
         "#if defined(__F16C__)\n"
         "  typedef short lm_vs8q __attribute__((vector_size(16)));\n"
         "  return __builtin_ia32_vcvtph2ps((lm_vs8q){(short)h})[0];\n"
         "#else\n"
         "  return lm_f16_to_f32(h);\n"
         "#endif\n"
         "}\n";
}

}  // namespace

std::string quant_byte_lanes_name(int64_t width, bool is_signed) {
  return std::string(is_signed ? "lm_sbytes_v" : "lm_ubytes_v") + str(width);
}

std::string quant_block_helpers(int64_t width, std::set<std::string>& seen) {
  std::string s;
  if (seen.insert("lm_vb" + str(width) + "u").second) s += block_typedefs(width);
  for (bool is_signed : {false, true}) {
    if (seen.insert(quant_byte_lanes_name(width, is_signed)).second) {
      s += byte_lanes_function(width, is_signed);
    }
  }
  if (seen.insert("lm_block_scale").second) s += scale_function();
  return s;
}

void open_unrolled(CodeWriter& w, const std::string& loop) {
  w.line("#pragma GCC unroll 32");
  w.open(loop);
}

void open_k_quant_sub_blocks(CodeWriter& w) {
  w.line("const float d = lm_block_scale(b), dmin = lm_block_scale(b + 2);");
  w.line("const uint8_t* s = b + 4;");
  open_unrolled(w, "for (int sub = 0; sub < 8; sub += 2)");
  w.line("int sc[2], m[2];");
  open_unrolled(w, "for (int h = 0; h < 2; h++)");
  w.line("const int j = sub + h;");
  w.line("sc[h] = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | ((s[j - 4] >> 2) & 48);");
  w.line("m[h] = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 2) & 48);");
  w.close();
  w.line("const float s0 = d * (float)sc[0], m0 = dmin * (float)m[0];");
  w.line("const float s1 = d * (float)sc[1], m1 = dmin * (float)m[1];");
}

void emit_k_quant_lanes(CodeWriter& w, DType dtype, int64_t width) {
  const std::string ints = "lm_vi" + str(width);
  const std::string u = quant_byte_lanes_name(width, false);
  if (dtype == DType::Q4_K) {
    w.line(ints + " u = " + u + "(b + 16 + sub * 16 + l);");
    w.line(ints + " lo = u & 15, hi = u >> 4;");
    return;
  }
  // Q5_K: the nibbles at 48, each sub-block's fifth bits a bit of the 32 bytes at 16.
  w.line(ints + " u = " + u + "(b + 48 + sub * 16 + l);");
  w.line(ints + " f = " + u + "(b + 16 + l);");
  w.line(ints + " lo = (u & 15) | (f >> sub & 1) << 4;");
  w.line(ints + " hi = (u >> 4) | (f >> (sub + 1) & 1) << 4;");
}

void emit_q6_k_lanes(CodeWriter& w, int64_t width) {
  const std::string ints = "lm_vi" + str(width);
  const std::string u = quant_byte_lanes_name(width, false);
  w.line(ints + " l = " + u + "(b + h * 64 + (r & 1) * 32 + c);");
  w.line(ints + " hb = " + u + "(b + 128 + h * 32 + c);");
  w.line(ints + " q = ((r < 2 ? l & 15 : l >> 4) | (hb >> (2 * r) & 3) << 4) - 32;");
}

namespace {

std::string dot_name(DType dtype, int64_t width, int64_t x_rows) {
  return "lm_" + std::string(dtype_name(dtype)) + "_dot_v" + str(width) + "x" + str(x_rows);
}

// static inline void lm_q4_k_dot_v8x2(const uint8_t* b, const float* x0, const float* x1,
// lm_vf8* acc0, lm_vf8* acc1): adds block b's products with the block of each row of x to
// that row's accumulator, `width` lanes at a time (width divides 16). The block's integers are
// widened in registers and multiplied with x; each scale multiplies the sum of its group once
// (a Q4_K sub-block's minimum the group's sum of x), so no value is dequantized on its own.
std::string dot_function(DType dtype, int64_t width, int64_t x_rows) {
  const std::string W = str(width);
  const std::string v = float_vector(width);
  const std::string ints = "lm_vi" + W;
  auto to_float = [&](const std::string& x) {
    return "__builtin_convertvector(" + x + ", " + v + ")";
  };
  auto ubytes = [&](const std::string& at) {
    return quant_byte_lanes_name(width, false) + "(" + at + ")";
  };
  // For each row of x: `what` with {i} replaced by the row.
  auto each_row = [&](CodeWriter& w, const std::string& what) {
    for (int64_t i = 0; i < x_rows; ++i) {
      std::string line = what;
      for (size_t at; (at = line.find("{i}")) != std::string::npos;) line.replace(at, 3, str(i));
      w.line(line);
    }
  };
  CodeWriter w;
  std::string params = "const uint8_t* restrict b";
  for (int64_t i = 0; i < x_rows; ++i) params += ", const float* restrict x" + str(i);
  for (int64_t i = 0; i < x_rows; ++i) params += ", " + v + "* restrict acc" + str(i);
  w.open("static inline void " + dot_name(dtype, width, x_rows) + "(" + params + ")");
  switch (dtype) {
    case DType::Q8_0:
      w.line("const float d = lm_block_scale(b);");
      each_row(w, v + " p{i} = {0};");
      open_unrolled(w, "for (int l = 0; l < 32; l += " + W + ")");
      w.line(v + " q = " + to_float(quant_byte_lanes_name(width, true) + "(b + 2 + l)") + ";");
      each_row(w, "p{i} += q * *(const " + v + "u*)(x{i} + l);");
      w.close();
      each_row(w, "*acc{i} += p{i} * d;");
      break;
    case DType::Q4_0:
      w.line("const float d = lm_block_scale(b);");
      each_row(w, v + " p{i} = {0};");
      open_unrolled(w, "for (int l = 0; l < 16; l += " + W + ")");
      w.line(ints + " u = " + ubytes("b + 2 + l") + ";");
      w.line(v + " lo = " + to_float("(u & 15) - 8") + ", hi = " + to_float("(u >> 4) - 8") + ";");
      each_row(w, "p{i} += lo * *(const " + v + "u*)(x{i} + l) + hi * *(const " + v +
                      "u*)(x{i} + 16 + l);");
      w.close();
      each_row(w, "*acc{i} += p{i} * d;");
      break;
    case DType::Q4_K:
    case DType::Q5_K:
      open_k_quant_sub_blocks(w);
      each_row(w, v + " lo{i} = {0}, hi{i} = {0}, xlo{i} = {0}, xhi{i} = {0};");
      open_unrolled(w, "for (int l = 0; l < 32; l += " + W + ")");
      emit_k_quant_lanes(w, dtype, width);
      w.line(v + " ql = " + to_float("lo") + ", qh = " + to_float("hi") + ";");
      each_row(w, v + " a{i} = *(const " + v + "u*)(x{i} + sub * 32 + l), c{i} = *(const " + v +
                      "u*)(x{i} + sub * 32 + 32 + l);");
      each_row(w, "lo{i} += ql * a{i};");
      each_row(w, "hi{i} += qh * c{i};");
      each_row(w, "xlo{i} += a{i};");
      each_row(w, "xhi{i} += c{i};");
      w.close();
      each_row(w, "*acc{i} += lo{i} * s0 - xlo{i} * m0 + hi{i} * s1 - xhi{i} * m1;");
      w.close();
      break;
    case DType::Q6_K:
      // Scales per 16 values, times d, widened once per block; then per group of 16 values
      // (h, r, g) the products summed before its scale multiplies them.
      w.line("const float d = lm_block_scale(b + 208);");
      w.line("float sf[16] __attribute__((aligned(64)));");
      open_unrolled(w, "for (int t = 0; t < 16; t += " + W + ")");
      w.line("*(" + v + "*)(sf + t) = " + to_float(quant_byte_lanes_name(width, true) + "(b + 192 + t)") +
             " * d;");
      w.close();
      open_unrolled(w, "for (int h = 0; h < 2; h++)");
      open_unrolled(w, "for (int r = 0; r < 4; r++)");
      open_unrolled(w, "for (int g = 0; g < 32; g += 16)");
      each_row(w, v + " p{i} = {0};");
      open_unrolled(w, "for (int c = g; c < g + 16; c += " + W + ")");
      emit_q6_k_lanes(w, width);
      w.line(v + " qf = " + to_float("q") + ";");
      each_row(w, "p{i} += qf * *(const " + v + "u*)(x{i} + h * 128 + r * 32 + c);");
      w.close();
      each_row(w, "*acc{i} += p{i} * sf[h * 8 + r * 2 + g / 16];");
      w.close();
      w.close();
      w.close();
      break;
    default:
      throw InternalError(std::string("quant dot: ") + dtype_name(dtype) + " is not quantized");
  }
  w.close();
  return w.str();
}

std::string gemv_name(DType stored, int64_t width, int64_t x_rows) {
  return "lm_qgemv_" + str(kWRows) + "x" + str(x_rows) + "_v" + str(width) + "_" +
         dtype_name(stored);
}

// A constant multiple of `block` (symbolic: not known to be one).
bool whole_blocks(const Expr& e, int64_t block) {
  std::optional<int64_t> v = e.try_const();
  return v && *v % block == 0;
}

}  // namespace

std::string quant_readers(const Program& program, const std::string& qualifiers,
                          const std::string& bytes) {
  std::set<DType> seen;
  std::string s;
  for (const Buffer& b : program.buffers) {
    if (is_quantized(b.dtype) && seen.insert(b.dtype).second) {
      s += reader(b.dtype, qualifiers, bytes);
    }
  }
  return s;
}

std::string quant_load(DType dtype, const std::string& buffer, const std::string& index,
                       const std::string& bytes) {
  return reader_name(dtype) + "((" + bytes + ")" + buffer + ", " + index + ")";
}

bool renders_quant_gemv(const Kernel& k, int64_t native) {
  const MatmulInfo& mm = k.matmul;
  if (!mm.present || !mm.b_widened || !is_quantized(mm.b_stored)) return false;
  if (mm.dtype != DType::F32 || mm.product_widened || mm.a_widened) return false;
  if (k.values[k.reduce_at].dtype != DType::F32 || k.values.back().dtype != DType::F32) {
    return false;
  }
  if (!is_one(mm.b_k) || !is_one(mm.a_k)) return false;
  const int64_t width = cpu_schedule(k, native).vector_width;  // the tile functions' lanes
  if (width > 16 || 16 % width != 0) return false;
  const int64_t block = block_values(mm.b_stored);
  if (!whole_blocks(k.reduce[0].extent, block) || !whole_blocks(mm.b_n, block)) return false;
  // B's offset, and its stride along every batch loop, whole blocks too.
  const Expr& index = k.values[mm.b].index;
  std::map<std::string, Expr> zero = {{k.reduce[0].var, 0}};
  for (const Loop& l : k.loops) {
    zero[l.var] = 0;
    std::optional<Expr> stride = affine_stride(index, l.var);
    if (!stride || (!is_zero(*stride) && !whole_blocks(*stride, block))) return false;
  }
  return whole_blocks(index.substitute(zero), block);
}

std::string CRenderer::quant_gemv_prelude(const Kernel& k, std::set<std::string>& seen) const {
  const DType stored = k.matmul.b_stored;
  const int64_t width = schedule_of(k).vector_width;
  const int64_t block = block_values(stored);
  const std::string v = float_vector(width);
  const std::string bytes = str(block_bytes(stored));
  std::string s = quant_block_helpers(width, seen);
  for (int64_t x_rows : {kXRows, int64_t{1}}) {
    const std::string name = gemv_name(stored, width, x_rows);
    if (!seen.insert(name).second) continue;
    if (seen.insert(dot_name(stored, width, x_rows)).second) {
      s += dot_function(stored, width, x_rows);
    }
    CodeWriter w;
    w.open("static inline void " + name + "(int64_t K, const float* restrict x, int64_t ldx, " +
           "const uint8_t* restrict w, int64_t ldw, float* restrict c, int64_t ldc, " +
           "int64_t rows, int64_t xrows)");
    for (int64_t i = 0; i < x_rows; ++i) {
      w.line("const float* restrict x" + str(i) + " = x + (" + str(i) + " < xrows ? " + str(i) +
             " : xrows - 1) * ldx;");
    }
    // Row by row: a task's rows of W are adjacent, so it reads one stream; taking the rows
    // side by side, block by block, read four streams a thread and half the bandwidth.
    w.open("for (int64_t j = 0; j < " + str(kWRows) + " && j < rows; j++)");
    w.line("const uint8_t* restrict wj = w + j * ldw;");
    for (int64_t i = 0; i < x_rows; ++i) w.line(v + " c" + str(i) + " = {0};");
    w.open("for (int64_t kb = 0; kb < K / " + str(block) + "; kb++)");
    std::string args = "wj + kb * " + bytes;
    for (int64_t i = 0; i < x_rows; ++i) args += ", x" + str(i) + " + kb * " + str(block);
    for (int64_t i = 0; i < x_rows; ++i) args += ", &c" + str(i);
    w.line(dot_name(stored, width, x_rows) + "(" + args + ");");
    w.close();
    for (int64_t i = 0; i < x_rows; ++i) {
      const std::string I = str(i);
      w.line("float s" + I + " = 0.0f;");
      w.line("for (int l = 0; l < " + str(width) + "; l++) s" + I + " += c" + I + "[l];");
      w.line("if (" + I + " < xrows) c[" + I + " * ldc + j] = s" + I + ";");
    }
    w.close();
    w.close();
    s += w.str();
  }
  return s;
}

void open_weight_row_tasks(const Kernel& k, int outer, int64_t rows_per_task, CodeWriter& w) {
  const std::string wrows = str(rows_per_task);
  w.line("#pragma omp for schedule(guided)");
  w.open("for (int64_t lm_task = 0; lm_task < lm_batches * lm_wblocks; lm_task++)");
  w.line("const int64_t lm_bt = lm_task / lm_wblocks;");
  w.line("const int64_t n0 = lm_task % lm_wblocks * " + wrows + ";");
  emit_batch_bases(k, outer, "uint8_t", w);
  w.line("const int64_t rows = N - n0 < " + wrows + " ? N - n0 : " + wrows + ";");
}

void CRenderer::emit_quant_gemv(const Kernel& k, int outer, CodeWriter& w) const {
  const DType stored = k.matmul.b_stored;
  const int64_t width = schedule_of(k).vector_width;
  const std::string wrows = str(kWRows);
  const int64_t most = schedule_of(k).gemv_rows > 0 ? schedule_of(k).gemv_rows : kQuantGemvRows;
  // Bytes between rows of W: b_n elements are whole blocks.
  w.line("const int64_t lm_ldw = bn / " + str(block_values(stored)) + " * " +
         str(block_bytes(stored)) + ";");
  w.open("if (M <= " + str(most) + ")");
  w.line("const int64_t lm_wblocks = (N + " + wrows + " - 1) / " + wrows + ";");
  std::string team = omp_team(k, "lm_batches * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  open_weight_row_tasks(k, outer, kWRows, w);
  w.line("int64_t lm_i = 0;");
  const std::string args = "(K, A + lm_i * am, am, B + n0 * lm_ldw, lm_ldw, C + lm_i * N + n0, "
                           "N, rows";
  w.line("for (; lm_i + " + str(kXRows) + " <= M; lm_i += " + str(kXRows) + ") " +
         gemv_name(stored, width, kXRows) + args + ", " + str(kXRows) + ");");
  w.line("for (; lm_i < M; lm_i++) " + gemv_name(stored, width, 1) + args + ", 1);");
  emit_matmul_epilogue(k, outer, "0", "M", "n0", "n0 + rows", w);
  w.close();
  w.close();
  w.line("return;");
  w.close();
}

}  // namespace luminal
