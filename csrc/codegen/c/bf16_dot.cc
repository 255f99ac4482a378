// The bf16 GEMM's pieces (schedule bf16_dot 1): C[m, n] = sum_k A[m, k] * B[k, n] with A and B
// bf16 values, multiplied in pairs of k by AVX512-BF16's vdpbf16ps (16 lanes, each adding two
// exact products of bf16 values to an f32 sum) instead of widened to f32 and multiplied one k
// at a time. A is read as stored, two words of a row at a time; B is packed per (k block, n
// block) into 32-bit pairs (B[k, n], B[k + 1, n]), one row of nr pairs per two k. The loops,
// the tasks and the epilogue are the f32 GEMM's (c/matmul.cc).
#include <functional>

#include "codegen/c/matmul.h"
#include "codegen/c/schedule.h"

namespace luminal {

namespace {

// Whether the Mul of `mm` multiplies two bf16 values: two bf16 loads widened to f32, or two
// bf16 loads whose (half) product is widened before the sum.
bool multiplies_bf16(const MatmulInfo& mm) {
  if (mm.a_stored != DType::BF16 || mm.b_stored != DType::BF16) return false;
  if (mm.dtype == DType::F32) return mm.a_widened && mm.b_widened && !mm.product_widened;
  return mm.dtype == DType::BF16 && mm.product_widened && !mm.a_widened && !mm.b_widened;
}

constexpr int64_t kLanes = 16;  // f32 sums per vector: vdpbf16ps on 512 bits
const std::string kFloats = "lm_vf16";  // 16 floats (float_vector), and 16 pairs of bf16
const std::string kPairs = "lm_vu16";   // as 32-bit lanes (lane_vector)
// acc + the pairwise products of x and b, in one instruction: inline assembly, so that the
// generated C needs no intrinsics header and builds with GCC and Clang alike.
const std::string kDot = "lm_dpbf16";
std::string dot_function() {
  return "static inline " + kFloats + " " + kDot + "(" + kFloats + " acc, " + kPairs + " x, " +
         kPairs + " b) {\n  __asm__(\"vdpbf16ps %2, %1, %0\" : \"+v\"(acc) : \"v\"(x), \"v\"(b));"
         "\n  return acc;\n}\n";
}

}  // namespace

bool takes_bf16_dot(const Kernel& k, int64_t native) {
  const MatmulInfo& mm = k.matmul;
  if (!mm.present || mm.a_computed || mm.a_q8_0 || !multiplies_bf16(mm)) return false;
  const CpuSchedule s = cpu_schedule(k, native);
  if (s.bf16_dot < 1 || s.vector_width != kLanes) return false;  // 2: on AMX (c/amx.cc)
  return k.values[k.reduce_at].dtype == DType::F32 && k.values.back().dtype == DType::F32;
}

std::string bf16_dot_name(int64_t rows, int64_t nr) {
  return "lm_mmbf_" + std::to_string(rows) + "x" + std::to_string(nr);
}

namespace {

// Rows up to which a micro-kernel is bound by reading B's panel, not by its products.
constexpr int64_t kFewRows = 4;

// The micro-kernel of `mr` rows: c[0:mr, 0:nr] (+)= a[0:mr, 0:kc] * bp (pairs, nr wide). Rows
// past `rows` read the last real one and are not stored; columns past `cols` are not stored.
std::string micro_kernel(int64_t mr, int64_t nr) {
  CodeWriter w;
  const int64_t nv = nr / kLanes;
  w.open("static inline void " + bf16_dot_name(mr, nr) +
         "(int64_t kc, const uint16_t* restrict a, int64_t am, int64_t ak, "
         "const uint32_t* restrict bp, float* restrict c, int64_t ldc, int64_t rows, "
         "int64_t cols, int first)");
  for (int64_t r = 0; r < mr; ++r) {
    const std::string rs = std::to_string(r);
    w.line("const uint16_t* restrict a" + rs + " = a + (" + rs + " < rows ? " + rs +
           " : rows - 1) * am;");
  }
  auto acc = [](int64_t r, int64_t j) { return "c" + std::to_string(r) + "_" + std::to_string(j); };
  for (int64_t r = 0; r < mr; ++r) {
    for (int64_t j = 0; j < nv; ++j) w.line(kFloats + " " + acc(r, j) + " = {0};");
  }
  // One pair step: `word(r)` is row r's pair of A as a 32-bit word.
  auto step = [&](const std::string& p, const std::function<std::string(const std::string&)>& word) {
    if (mr <= kFewRows) {  // few rows stream B: fetch its panel ahead (c/gemv.cc's distance)
      for (int64_t at = 0; at < nr * 4; at += 64) {
        w.line("__builtin_prefetch((const char*)(bp + " + p + " * " + std::to_string(nr) + ") + " +
               std::to_string(kGemvPrefetchBytes + at) + ");");
      }
    }
    for (int64_t j = 0; j < nv; ++j) {
      w.line("const " + kPairs + " b" + std::to_string(j) + " = *(const " + kPairs + "u*)(bp + " +
             p + " * " + std::to_string(nr) + " + " + std::to_string(j * kLanes) + ");");
    }
    for (int64_t r = 0; r < mr; ++r) {
      const std::string rs = std::to_string(r);
      w.line("const uint32_t s" + rs + " = " + word("a" + rs) + ";");
      w.line("const " + kPairs + " x" + rs + " = s" + rs + " - (" + kPairs + "){0};");
      for (int64_t j = 0; j < nv; ++j) {
        w.line(acc(r, j) + " = " + kDot + "(" + acc(r, j) + ", x" + rs + ", b" +
               std::to_string(j) + ");");
      }
    }
  };
  w.line("const int64_t pairs = kc / 2;");
  // Rows of A in order along k (a Linear's activations): a pair is one 32-bit load, which the
  // compiler broadcasts from memory; else its two words are put together.
  w.open("if (ak == 1)");
  w.open("for (int64_t p = 0; p < pairs; p++)");
  step("p", [](const std::string& a) { return "*(const lm_pair_word*)(" + a + " + 2 * p)"; });
  w.close();
  w.middle("} else {");
  w.open("for (int64_t p = 0; p < pairs; p++)");
  step("p", [](const std::string& a) {
    return "(uint32_t)" + a + "[2 * p * ak] | ((uint32_t)" + a + "[(2 * p + 1) * ak] << 16)";
  });
  w.close();
  w.close();
  w.open("if (kc & 1)");  // the last k alone: its pair's high halves are 0 in A and B
  step("pairs", [](const std::string& a) { return "(uint32_t)" + a + "[2 * pairs * ak]"; });
  w.close();
  emit_block_store(mr, nr, kLanes, "rows", "cols", w);
  w.close();
  return w.str();
}

}  // namespace

std::string bf16_dot_prelude(int64_t mr, int64_t nr, std::set<std::string>& seen) {
  std::string s;
  if (seen.insert(lane_vector(kLanes)).second) s += lane_vector_typedefs(kLanes);
  if (seen.insert(kDot).second) {
    s += "typedef unsigned int lm_pair_word __attribute__((aligned(2), may_alias));\n";
    s += dot_function();
  }
  for (int64_t rows = mr; rows >= 1; --rows) {
    if (seen.insert(bf16_dot_name(rows, nr)).second) s += micro_kernel(rows, nr);
  }
  return s;
}

void emit_bf16_pack_panel(int64_t nr, CodeWriter& w) {
  const std::string n = std::to_string(nr);
  w.line("uint32_t* restrict panel = lm_bp32 + (jr / " + n + ") * ((kcur + 1) / 2) * " + n + ";");
  w.line("const int64_t wcols = ncols - jr < " + n + " ? ncols - jr : " + n + ";");
  w.open("for (int64_t kk = 0; kk < kcur; kk += 2)");
  w.line("const uint16_t* restrict lo = B + (pc + kk) * bk + (n0 + jr) * bn;");
  w.line("const uint16_t* restrict hi = lo + bk;");
  w.line("const int pair = kk + 1 < kcur;");
  w.line("uint32_t* restrict dst = panel + (kk / 2) * " + n + ";");
  w.line("for (int64_t j = 0; j < " + n + "; j++) dst[j] = j < wcols ? (uint32_t)lo[j * bn] | "
         "(pair ? (uint32_t)hi[j * bn] << 16 : 0u) : 0u;");
  w.close();
}

}  // namespace luminal
