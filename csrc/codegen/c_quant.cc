// Quantized weights in generated C: the element readers (renderings of core/quant.cc's
// dequantize_element, in the same f32 operations and order) and the C renderer's quantized
// GEMV. Each task of the GEMV takes kWRows rows of W (columns of C); per block along k it
// dequantizes the block of each row once into a small f32 tile, in vectors (bytes widened to
// lanes, nibbles and bit pairs masked and shifted, times the block's scales: the readers'
// arithmetic a vector at a time), then multiplies the tile with kXRows rows of A in f32
// vectors. Every M runs this path: a block dequantized per pair of rows of A still beats a
// generic loop nest.
#include "codegen/c_quant.h"

#include <set>

#include "codegen/c.h"
#include "codegen/c_matmul.h"
#include "codegen/c_schedule.h"
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

std::string reader(DType dtype, const std::string& q) {
  const std::string head = q + " float " + reader_name(dtype) + "(const uint8_t* p, int64_t i) {\n" +
                           "  const uint8_t* b = p + i / " + str(block_values(dtype)) + " * " +
                           str(block_bytes(dtype)) + ";\n" + "  const int64_t j = i % " +
                           str(block_values(dtype)) + ";\n";
  switch (dtype) {
    case DType::Q8_0:
      return head + "  return (float)(signed char)b[2 + j] * " + f16_at("0") + ";\n}\n";
    case DType::Q4_0:
      return head + "  const int q = ((j < 16 ? b[2 + j] : b[2 + j - 16] >> 4) & 15) - 8;\n" +
             "  return " + f16_at("0") + " * (float)q;\n}\n";
    case DType::Q4_K:
      return head + "  const uint8_t* s = b + 4;\n" + "  const int64_t sub = j / 32;\n" +
             "  const int sc = sub < 4 ? s[sub] & 63 : (s[sub + 4] & 15) | ((s[sub - 4] >> 2) & 48);\n" +
             "  const int m = sub < 4 ? s[sub + 4] & 63 : (s[sub + 4] >> 4) | ((s[sub] >> 2) & 48);\n" +
             "  const int byte = b[16 + sub / 2 * 32 + j % 32];\n" +
             "  const int q = (sub % 2 == 0 ? byte : byte >> 4) & 15;\n" + "  return " +
             f16_at("0") + " * (float)sc * (float)q - " + f16_at("2") + " * (float)m;\n}\n";
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

std::string tile_name(DType dtype, int64_t width) {
  return "lm_" + std::string(dtype_name(dtype)) + "_tile_v" + str(width);
}

// The vector types a tile function uses: `width` bytes (unaligned) and `width` int32 lanes.
std::string tile_typedefs(int64_t width) {
  const std::string w = str(width);
  return "typedef unsigned char lm_vb" + w + "u __attribute__((vector_size(" + w +
         "), aligned(1), may_alias));\n" + "typedef signed char lm_vsb" + w +
         "u __attribute__((vector_size(" + w + "), aligned(1), may_alias));\n" +
         "typedef int lm_vi" + w + " __attribute__((vector_size(" + str(4 * width) + ")));\n";
}

// static inline void lm_q4_k_tile_v8(const uint8_t* b, float* t): block b's values into
// t[0, block), `width` lanes at a time (width divides 16).
std::string tile_function(DType dtype, int64_t width) {
  const std::string W = str(width);
  const std::string v = float_vector(width);
  const std::string bytes = "lm_vb" + W + "u";
  const std::string ints = "lm_vi" + W;
  auto widen = [&](const std::string& at) {  // `width` bytes at `at` as int lanes
    return "__builtin_convertvector(*(const " + bytes + "*)(" + at + "), " + ints + ")";
  };
  auto to_float = [&](const std::string& x) {
    return "__builtin_convertvector(" + x + ", " + v + ")";
  };
  CodeWriter w;
  w.open("static inline void " + tile_name(dtype, width) +
         "(const uint8_t* restrict b, float* restrict t)");
  switch (dtype) {
    case DType::Q8_0:
      w.line("const float d = " + f16_at("0") + ";");
      w.line("for (int l = 0; l < 32; l += " + W + ") *(" + v + "*)(t + l) = " +
             to_float("__builtin_convertvector(*(const lm_vsb" + W + "u*)(b + 2 + l), " + ints +
                      ")") +
             " * d;");
      break;
    case DType::Q4_0:
      w.line("const float d = " + f16_at("0") + ";");
      w.open("for (int l = 0; l < 16; l += " + W + ")");
      w.line(ints + " u = " + widen("b + 2 + l") + ";");
      w.line("*(" + v + "*)(t + l) = d * " + to_float("(u & 15) - 8") + ";");
      w.line("*(" + v + "*)(t + 16 + l) = d * " + to_float("(u >> 4) - 8") + ";");
      w.close();
      break;
    case DType::Q4_K:
      w.line("const float d = " + f16_at("0") + ", dmin = " + f16_at("2") + ";");
      w.line("const uint8_t* s = b + 4;");
      w.open("for (int sub = 0; sub < 8; sub += 2)");
      w.line("int sc[2], m[2];");
      w.open("for (int h = 0; h < 2; h++)");
      w.line("const int j = sub + h;");
      w.line("sc[h] = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | ((s[j - 4] >> 2) & 48);");
      w.line("m[h] = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 2) & 48);");
      w.close();
      w.line("const float s0 = d * (float)sc[0], m0 = dmin * (float)m[0];");
      w.line("const float s1 = d * (float)sc[1], m1 = dmin * (float)m[1];");
      w.open("for (int l = 0; l < 32; l += " + W + ")");
      w.line(ints + " u = " + widen("b + 16 + sub * 16 + l") + ";");
      w.line("*(" + v + "*)(t + sub * 32 + l) = s0 * " + to_float("u & 15") + " - m0;");
      w.line("*(" + v + "*)(t + sub * 32 + 32 + l) = s1 * " + to_float("u >> 4") + " - m1;");
      w.close();
      w.close();
      break;
    case DType::Q6_K:
      w.line("const float d = " + f16_at("208") + ";");
      w.line("const signed char* sc = (const signed char*)(b + 192);");
      w.open("for (int h = 0; h < 2; h++)");
      w.open("for (int c = 0; c < 32; c += " + W + ")");
      w.line(ints + " l0 = " + widen("b + h * 64 + c") + ";");
      w.line(ints + " l1 = " + widen("b + h * 64 + 32 + c") + ";");
      w.line(ints + " hi = " + widen("b + 128 + h * 32 + c") + ";");
      w.line(ints + " q[4] = {(l0 & 15) | (hi & 3) << 4, (l1 & 15) | (hi >> 2 & 3) << 4,");
      w.line("             (l0 >> 4) | (hi >> 4 & 3) << 4, (l1 >> 4) | (hi >> 6 & 3) << 4};");
      w.open("for (int r = 0; r < 4; r++)");
      w.line("const int j = h * 128 + r * 32 + c;");
      w.line("*(" + v + "*)(t + j) = d * (float)sc[j / 16] * " + to_float("q[r] - 32") + ";");
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

std::string quant_readers(const Program& program, const std::string& qualifiers) {
  std::set<DType> seen;
  std::string s;
  for (const Buffer& b : program.buffers) {
    if (is_quantized(b.dtype) && seen.insert(b.dtype).second) s += reader(b.dtype, qualifiers);
  }
  return s;
}

std::string quant_load(DType dtype, const std::string& buffer, const std::string& index) {
  return reader_name(dtype) + "((const uint8_t*)" + buffer + ", " + index + ")";
}

bool renders_quant_gemv(const Kernel& k) {
  const MatmulInfo& mm = k.matmul;
  if (!mm.present || !mm.b_widened || !is_quantized(mm.b_stored)) return false;
  if (mm.dtype != DType::F32 || mm.product_widened || mm.a_widened) return false;
  if (k.values[k.reduce_at].dtype != DType::F32 || k.values.back().dtype != DType::F32) {
    return false;
  }
  if (!is_one(mm.b_k) || !is_one(mm.a_k)) return false;
  const int64_t width = cpu_schedule(k).vector_width;  // the tile functions' lanes
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
  const int64_t width = cpu_schedule(k).vector_width;
  const int64_t block = block_values(stored);
  const std::string v = float_vector(width);
  const std::string bytes = str(block_bytes(stored));
  std::string s;
  if (seen.insert("lm_vb" + str(width) + "u").second) s += tile_typedefs(width);
  if (seen.insert(tile_name(stored, width)).second) s += tile_function(stored, width);
  for (int64_t x_rows : {kXRows, int64_t{1}}) {
    const std::string name = gemv_name(stored, width, x_rows);
    if (!seen.insert(name).second) continue;
    CodeWriter w;
    w.open("static inline void " + name + "(int64_t K, const float* restrict x, int64_t ldx, " +
           "const uint8_t* restrict w, int64_t ldw, float* restrict c, int64_t ldc, " +
           "int64_t rows, int64_t xrows)");
    for (int64_t i = 0; i < x_rows; ++i) {
      w.line("const float* restrict x" + str(i) + " = x + (" + str(i) + " < xrows ? " + str(i) +
             " : xrows - 1) * ldx;");
    }
    for (int64_t j = 0; j < kWRows; ++j) {
      w.line("const uint8_t* restrict w" + str(j) + " = w + (" + str(j) + " < rows ? " + str(j) +
             " : rows - 1) * ldw;");
    }
    for (int64_t i = 0; i < x_rows; ++i) {
      for (int64_t j = 0; j < kWRows; ++j) w.line(v + " c" + str(i) + "_" + str(j) + " = {0};");
    }
    w.line("float lm_t[" + str(kWRows) + "][" + str(block) + "] __attribute__((aligned(64)));");
    w.open("for (int64_t kb = 0; kb < K / " + str(block) + "; kb++)");
    for (int64_t j = 0; j < kWRows; ++j) {
      w.line(tile_name(stored, width) + "(w" + str(j) + " + kb * " + bytes + ", lm_t[" + str(j) +
             "]);");
    }
    w.open("for (int l = 0; l < " + str(block) + "; l += " + str(width) + ")");
    for (int64_t j = 0; j < kWRows; ++j) {
      w.line(v + " b" + str(j) + " = *(const " + v + "*)(lm_t[" + str(j) + "] + l);");
    }
    for (int64_t i = 0; i < x_rows; ++i) {
      w.line(v + " a" + str(i) + " = *(const " + v + "u*)(x" + str(i) + " + kb * " +
             str(block) + " + l);");
      for (int64_t j = 0; j < kWRows; ++j) {
        w.line("c" + str(i) + "_" + str(j) + " += a" + str(i) + " * b" + str(j) + ";");
      }
    }
    w.close();
    w.close();
    for (int64_t i = 0; i < x_rows; ++i) {
      for (int64_t j = 0; j < kWRows; ++j) {
        const std::string acc = str(i) + "_" + str(j);
        w.line("float s" + acc + " = 0.0f;");
        w.line("for (int l = 0; l < " + str(width) + "; l++) s" + acc + " += c" + acc + "[l];");
        w.line("if (" + str(i) + " < xrows && " + str(j) + " < rows) c[" + str(i) + " * ldc + " +
               str(j) + "] = s" + acc + ";");
      }
    }
    w.close();
    s += w.str();
  }
  return s;
}

void CRenderer::emit_quant_gemv(const Kernel& k, int outer, CodeWriter& w) const {
  const DType stored = k.matmul.b_stored;
  const int64_t width = cpu_schedule(k).vector_width;
  const std::string wrows = str(kWRows);
  // Bytes between rows of W: b_n elements are whole blocks.
  w.line("const int64_t lm_ldw = bn / " + str(block_values(stored)) + " * " +
         str(block_bytes(stored)) + ";");
  w.line("const int64_t lm_wblocks = (N + " + wrows + " - 1) / " + wrows + ";");
  std::string team = omp_team(k, "lm_batches * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  w.line("#pragma omp for schedule(guided)");
  w.open("for (int64_t lm_task = 0; lm_task < lm_batches * lm_wblocks; lm_task++)");
  w.line("const int64_t lm_bt = lm_task / lm_wblocks;");
  w.line("const int64_t n0 = lm_task % lm_wblocks * " + wrows + ";");
  emit_batch_bases(k, outer, "uint8_t", w);
  w.line("const int64_t rows = N - n0 < " + wrows + " ? N - n0 : " + wrows + ";");
  w.line("int64_t lm_i = 0;");
  const std::string args = "(K, A + lm_i * am, am, B + n0 * lm_ldw, lm_ldw, C + lm_i * N + n0, "
                           "N, rows";
  w.line("for (; lm_i + " + str(kXRows) + " <= M; lm_i += " + str(kXRows) + ") " +
         gemv_name(stored, width, kXRows) + args + ", " + str(kXRows) + ");");
  w.line("for (; lm_i < M; lm_i++) " + gemv_name(stored, width, 1) + args + ", 1);");
  emit_matmul_epilogue(k, outer, "0", "M", "n0", "n0 + rows", w);
  w.close();
  w.close();
}

}  // namespace luminal
