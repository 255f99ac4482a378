// The C renderer's GEMV path: C[m, n] = sum_k A[m, k] * B[k, n] for few rows (M <= gemv_rows,
// tested at run time) with B contiguous along k (b_k == 1: a Linear's weight W(N, K)). One pass
// over B: OpenMP threads take blocks of kWRows columns of C (each a row of W) over (batch, n),
// in guided chunks so that a thread descheduled on a shared core leaves its work to the others;
// a block's rows are read one after the other (one stream of memory a thread: reading them
// side by side, four streams a thread, left a third of the bandwidth unused); each step loads
// a vector of k of the row (16-bit storage widened in registers) and multiplies it with the
// same k of kXRows rows of A, read in place when they are
// contiguous along k, else copied once per thread and batch. f32 accumulators; the tail of K
// past the last whole step is scalar; a matmul's epilogue runs over each task's columns once
// they are summed. Not the GEMM path (c/matmul.cc), which the same kernel takes above
// gemv_rows.
#include <optional>

#include "codegen/c/renderer.h"
#include "codegen/c/matmul.h"
#include "codegen/c/schedule.h"

namespace luminal {

namespace {

constexpr int64_t kWRows = 4;  // rows of W (columns of C) per task, taken one after the other
constexpr int64_t kXRows = 2;  // rows of A per step, reused from registers across W's rows
constexpr int64_t kParts = 4;  // accumulators a row of W deals its steps round

std::string str(int64_t v) { return std::to_string(v); }

std::string row_kernel_name(DType stored, int64_t width, int64_t x_rows) {
  return "lm_gemv_" + str(kWRows) + "x" + str(x_rows) + "_v" + str(width) + "_" +
         dtype_name(stored);
}

// Elements of k a step of the row kernel takes: a vector, or for bf16 two, from one load of
// `width` lanes of two words each (little-endian: the even word shifted up, the odd one
// masked), which pair with A's row deinterleaved into its even and then its odd elements.
int64_t step_of(DType stored, int64_t width) { return stored == DType::BF16 ? 2 * width : width; }

}  // namespace

std::string lane_vector(int64_t width) { return "lm_vu" + str(width); }

std::string lane_vector_typedefs(int64_t width) {
  const std::string u = lane_vector(width);
  const std::string bytes = str(width * 4);
  return "typedef unsigned int " + u + " __attribute__((vector_size(" + bytes + ")));\n" +
         "typedef unsigned int " + u + "u __attribute__((vector_size(" + bytes +
         "), aligned(2), may_alias));\n";
}

std::string f16_load_name(int64_t width) { return "lm_load_f16_v" + str(width); }

std::string f16_load_function(int64_t width) {
  const std::string v = float_vector(width);
  const std::string u = lane_vector(width);
  std::string s = "static inline " + v + " " + f16_load_name(width) +
                  "(const uint16_t* restrict p) {\n";
  if (width == 8) {
    s += "#if defined(__F16C__) && defined(__AVX__)\n";
    s += "  typedef short lm_vs8u __attribute__((vector_size(16), aligned(2), may_alias));\n";
    s += "  return __builtin_ia32_vcvtph2ps256(*(const lm_vs8u*)p);\n";
    s += "#else\n";
  }
  const std::string words = "lm_vh" + str(width) + "u";
  s += "  typedef unsigned short " + words + " __attribute__((vector_size(" + str(width * 2) +
       "), aligned(2), may_alias));\n";
  s += "  " + u + " h = __builtin_convertvector(*(const " + words + "*)p, " + u + ");\n";
  s += "  " + u + " em = (h & 0x7fffu) << 13;\n";
  s += "  " + u + " scaled = (" + u + ")((" + v + ")em * 0x1p112f);\n";
  s += "  " + u + " special = (" + u + ")(em >= 0x0f800000u) & 0x7f800000u;\n";
  s += "  return (" + v + ")(scaled | special | ((h & 0x8000u) << 16));\n";
  if (width == 8) s += "#endif\n";
  return s + "}\n";
}

bool renders_gemv(const Kernel& k) {
  if (is_quantized(k.matmul.b_stored)) return false;  // blocks: c/quant.cc's GEMV
  const int64_t most = CpuSchedule{}.with(k.schedule).gemv_rows;  // its default is no width's
  if (most <= 0 || !is_one(k.matmul.b_k)) return false;
  std::optional<int64_t> rows = folded_rows(k).try_const();
  return !rows || *rows <= most;
}

// The row kernel: c[i * ldc + j] = sum_k x[i * ldx + k] * w[j * ldw + k] for i < x_rows
// (of which `xrows` are real; the rows past them read the last real one and are not stored)
// and j < rows (at most kWRows). For a bf16 w, x's whole steps are deinterleaved (step_of);
// its tail past them is in order.
std::string CRenderer::gemv_prelude(const Kernel& k, std::set<std::string>& seen) const {
  const MatmulInfo& mm = k.matmul;
  const DType stored = mm.b_stored;
  const int64_t width = schedule_of(k).vector_width;
  const int64_t most = schedule_of(k).gemv_rows;
  const int64_t step = step_of(stored, width);
  const std::string v = float_vector(width);
  const std::string u = lane_vector(width);
  const std::string type = storage_type(stored);
  std::string s;
  if (stored != DType::F32 && seen.insert(u).second) s += lane_vector_typedefs(width);
  if (stored == DType::F16 && seen.insert(f16_load_name(width)).second) {
    s += f16_load_function(width);
  }
  for (int64_t x_rows : {kXRows, int64_t{1}}) {
    if (x_rows > most) continue;
    const std::string name = row_kernel_name(stored, width, x_rows);
    if (!seen.insert(name).second) continue;
    CodeWriter w;
    w.open("static inline void " + name + "(int64_t K, const float* restrict x, int64_t ldx, " +
           "const " + type + "* restrict w, int64_t ldw, float* restrict c, int64_t ldc, " +
           "int64_t rows, int64_t xrows)");
    for (int64_t i = 0; i < x_rows; ++i) {
      w.line("const float* restrict x" + str(i) + " = x + (" + str(i) + " < xrows ? " + str(i) +
             " : xrows - 1) * ldx;");
    }
    // Row by row (one stream of memory a thread), each row's steps dealt round kParts
    // accumulators so that the FMAs of one row do not wait on each other.
    w.open("for (int64_t j = 0; j < " + str(kWRows) + " && j < rows; j++)");
    w.line("const " + type + "* restrict wj = w + j * ldw;");
    for (int64_t i = 0; i < x_rows; ++i) {
      for (int64_t p = 0; p < kParts; ++p) w.line(v + " c" + str(i) + "_" + str(p) + " = {0};");
    }
    // One step of k at `at` into the accumulators of part p.
    auto emit_step = [&](const std::string& at, int64_t p) {
      const std::string P = str(p);
      if (stored == DType::F32) {
        w.line(v + " b" + P + " = *(const " + v + "u*)(wj + " + at + ");");
      } else if (stored == DType::F16) {
        w.line(v + " b" + P + " = " + f16_load_name(width) + "(wj + " + at + ");");
      } else {
        w.line(u + " u" + P + " = *(const " + u + "u*)(wj + " + at + ");");
        w.line(v + " b" + P + " = (" + v + ")(u" + P + " << 16);");
        w.line(v + " d" + P + " = (" + v + ")(u" + P + " & 0xffff0000u);");
      }
      for (int64_t i = 0; i < x_rows; ++i) {
        const std::string acc = "c" + str(i) + "_" + P;
        const std::string x = "x" + str(i) + " + " + at;
        w.line(acc + " += *(const " + v + "u*)(" + x + ") * b" + P + ";");
        if (stored == DType::BF16) {
          w.line(acc + " += *(const " + v + "u*)(" + x + " + " + str(width) + ") * d" + P + ";");
        }
      }
    };
    const std::string parts = str(kParts * step);
    w.line("const int64_t kv = K / " + str(step) + " * " + str(step) + ";");
    w.line("const int64_t kp = K / " + parts + " * " + parts + ";");
    w.line("int64_t k = 0;");
    w.open("for (; k < kp; k += " + parts + ")");
    emit_gemv_prefetch("wj + k", kParts * step * storage_bytes(stored, 1), w);
    for (int64_t p = 0; p < kParts; ++p) emit_step("k + " + str(p * step), p);
    w.close();
    w.open("for (; k < kv; k += " + str(step) + ")");
    emit_step("k", 0);
    w.close();
    for (int64_t i = 0; i < x_rows; ++i) {
      const std::string I = str(i);
      std::string sum = "c" + I + "_0";
      for (int64_t p = 1; p < kParts; ++p) sum += " + c" + I + "_" + str(p);
      w.line(v + " t" + I + " = " + sum + ";");
      w.line("float s" + I + " = 0.0f;");
      w.line("for (int l = 0; l < " + str(width) + "; l++) s" + I + " += t" + I + "[l];");
    }
    w.open("for (; k < K; k++)");
    w.line("const float b = " + to_compute(stored, "wj[k]") + ";");
    for (int64_t i = 0; i < x_rows; ++i) w.line("s" + str(i) + " += x" + str(i) + "[k] * b;");
    w.close();
    for (int64_t i = 0; i < x_rows; ++i) {
      w.line("if (" + str(i) + " < xrows) c[" + str(i) + " * ldc + j] = s" + str(i) + ";");
    }
    w.close();
    w.close();
    s += w.str();
  }
  return s;
}

void emit_gemv_prefetch(const std::string& base, int64_t bytes, CodeWriter& w) {
  for (int64_t at = 0; at < bytes; at += 64) {
    w.line("__builtin_prefetch((const char*)(" + base + ") + " + str(kGemvPrefetchBytes + at) +
           ");");
  }
}

namespace {

// Where element `kk` of a row of A lies in its copy: in order, or for a bf16 B with each whole
// step (below lm_kv) deinterleaved, its even elements then its odd ones.
std::string x_slot(DType stored, int64_t width, const std::string& kk) {
  if (stored != DType::BF16) return kk;
  const std::string half = str(width);
  const std::string step = str(2 * width);
  return "(" + kk + " < lm_kv ? " + kk + " - " + kk + " % " + step + " + " + kk + " % 2 * " +
         half + " + " + kk + " % " + step + " / 2 : " + kk + ")";
}

}  // namespace

// A's rows into lm_x (K floats each, row i at i * K, at x_slot): read from A, or computed
// (MatmulInfo::a_computed, c/prologue.cc).
void CRenderer::emit_x_copy(const Kernel& k, int outer, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  const int64_t width = schedule_of(k).vector_width;
  const std::string step = str(2 * width);
  if (mm.b_stored == DType::BF16) w.line("const int64_t lm_kv = K / " + step + " * " + step + ";");
  w.open("for (int64_t i = 0; i < M; i++)");
  w.line("float* restrict lm_row = lm_x + i * K;");
  if (mm.a_computed) {
    w.line("float lm_st[" + str(static_cast<int64_t>(mm.a_rows.size()) + 1) + "];");
    emit_row_vars(k, outer, "i", w);
    emit_prologue_stats(k, "lm_st", w);
    emit_prologue_row(k, "lm_st", "0", "K", "lm_row[" + x_slot(mm.b_stored, width, "lm_kk") + "]",
                      w);
  } else {
    // A's element as f32: a bf16 dot kernel's A is bf16 words (c/bf16_dot.cc), widened here
    const std::string a = to_compute(mm.a_stored, "A[i * am + kk * ak]");
    if (mm.b_stored == DType::BF16) {
      w.line("for (int64_t kk = 0; kk < lm_kv; kk++) lm_row[" +
             x_slot(mm.b_stored, width, "kk") + "] = " + a + ";");
      w.line("for (int64_t kk = lm_kv; kk < K; kk++) lm_row[kk] = " + a + ";");
    } else {
      w.line("for (int64_t kk = 0; kk < K; kk++) lm_row[kk] = " + a + ";");
    }
  }
  w.close();
}

void CRenderer::emit_gemv(const Kernel& k, int outer, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  const int64_t width = schedule_of(k).vector_width;
  const int64_t most = schedule_of(k).gemv_rows;
  // A is copied when its rows are not contiguous along k, or to pair with a bf16 B, or where
  // the kernel computes it, or widens it from bf16 words (a bf16 dot kernel's).
  const bool copy_x = !is_one(mm.a_k) || mm.b_stored == DType::BF16 || mm.a_computed ||
                      mm.a_stored != DType::F32;
  const std::string wrows = str(kWRows);
  w.open("if (M <= " + str(most) + ")");
  w.line("const int64_t lm_wblocks = (N + " + wrows + " - 1) / " + wrows + ";");
  std::string team = omp_team(k, "lm_batches * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  if (copy_x) {
    w.line("float* lm_x = (float*)malloc(sizeof(float) * (M * K + 1));");
    w.line("int64_t lm_xbatch = -1;");
  }
  w.line("#pragma omp for schedule(guided)");
  w.open("for (int64_t lm_task = 0; lm_task < lm_batches * lm_wblocks; lm_task++)");
  w.line("const int64_t lm_bt = lm_task / lm_wblocks;");
  w.line("const int64_t n0 = lm_task % lm_wblocks * " + wrows + ";");
  emit_batch_bases(k, outer, storage_type(mm.b_stored), w);
  if (copy_x) {
    w.open("if (lm_xbatch != lm_bt)");
    emit_x_copy(k, outer, w);
    w.line("lm_xbatch = lm_bt;");
    w.close();
    w.line("const float* restrict X = lm_x;");
    w.line("const int64_t ldx = K;");
  } else {
    w.line("const float* restrict X = A;");
    w.line("const int64_t ldx = am;");
  }
  w.line("const int64_t rows = N - n0 < " + wrows + " ? N - n0 : " + wrows + ";");
  w.line("int64_t lm_i = 0;");
  const std::string args = "(K, X + lm_i * ldx, ldx, B + n0 * bn, bn, C + lm_i * N + n0, N, rows";
  if (most >= kXRows) {
    w.line("for (; lm_i + " + str(kXRows) + " <= M; lm_i += " + str(kXRows) + ") " +
           row_kernel_name(mm.b_stored, width, kXRows) + args + ", " + str(kXRows) + ");");
  }
  w.line("for (; lm_i < M; lm_i++) " + row_kernel_name(mm.b_stored, width, 1) + args + ", 1);");
  emit_matmul_epilogue(k, outer, "0", "M", "n0", "n0 + rows", w);
  w.close();
  if (copy_x) w.line("free(lm_x);");
  w.close();
  w.line("return;");
  w.close();
}

}  // namespace luminal
