// What the C renderer's matmul paths (the GEMM of c/matmul.cc, the GEMVs of c/gemv.cc and
// c/quant.cc) share about their operands: which kernels they take, vector type names, the
// folding of batch loops into rows, the base pointers of one batch and the sizes and strides.
// Not the paths themselves, nor which parameters are panels (kernel/weight_layout.h).
#include <map>

#include "codegen/c/matmul.h"
#include "codegen/c/quant.h"

namespace luminal {

// The GEMM here takes f32 products summed in f32 (no widening of the product) of a matched
// matmul, with A stored as f32 and B stored as f32, widened from f16/bf16 or dequantized from
// blocks (where renders_quant_gemv: its panels are dequantized as packed), and stores f32:
// the sum, or its epilogue's result, written over the sum in C.
bool renders_matmul(const Kernel& k, int64_t native) {
  const MatmulInfo& mm = k.matmul;
  if (takes_bf16_dot(k, native)) return true;
  if (!mm.present || mm.dtype != DType::F32 || mm.product_widened) return false;
  // a 16-bit A widened in the body: the GEMV widens it as it copies rows, the GEMM reads a
  // widened copy (render_matmul); not under batch loops the GEMM runs per batch
  if (mm.a_widened && (mm.m_loop != folded_batch_loops(k) ||
                       (mm.a_stored != DType::BF16 && mm.a_stored != DType::F16))) {
    return false;
  }
  if (is_quantized(mm.b_stored) && (mm.a_computed || !renders_quant_gemv(k, native))) {
    return false;
  }
  return k.values[k.reduce_at].dtype == DType::F32 && k.values.back().dtype == DType::F32;
}

namespace {
bool uses_loop_vars(const Expr& e, const Kernel& k) {
  for (const std::string& s : e.symbols()) {
    for (const Loop& l : k.loops) {
      if (l.var == s) return true;
    }
    for (const Loop& l : k.reduce) {
      if (l.var == s) return true;
    }
  }
  return false;
}
}  // namespace

// Whether render_matmul emits the GEMM for `k`: a matmul it renders whose strides do not move
// with the loops.
bool takes_gemm(const Kernel& k, int64_t native) {
  if (!renders_matmul(k, native)) return false;
  const MatmulInfo& mm = k.matmul;
  for (const Expr* e : {&mm.a_m, &mm.a_k, &mm.b_k, &mm.b_n}) {
    if (uses_loop_vars(*e, k)) return false;
  }
  return true;
}

void emit_block_store(int64_t mr, int64_t nr, int64_t vw, const std::string& rows,
                      const std::string& cols, CodeWriter& w) {
  const std::string v = float_vector(vw) + "u";
  auto acc = [](int64_t r, int64_t j) { return "c" + std::to_string(r) + "_" + std::to_string(j); };
  w.open("if (" + rows + " == " + std::to_string(mr) + " && " + cols + " == " +
         std::to_string(nr) + ")");
  for (int64_t r = 0; r < mr; ++r) {
    for (int64_t j = 0; j < nr / vw; ++j) {
      const std::string p = "(" + v + "*)(c + " + std::to_string(r) + " * ldc + " +
                            std::to_string(j * vw) + ")";
      w.line("if (first) *" + p + " = " + acc(r, j) + "; else *" + p + " += " + acc(r, j) + ";");
    }
  }
  w.line("return;");
  w.close();
  w.line("float t[" + std::to_string(mr) + "][" + std::to_string(nr) + "];");
  for (int64_t r = 0; r < mr; ++r) {
    for (int64_t j = 0; j < nr / vw; ++j) {
      w.line("*(" + v + "*)(t[" + std::to_string(r) + "] + " + std::to_string(j * vw) +
             ") = " + acc(r, j) + ";");
    }
  }
  w.open("for (int64_t r = 0; r < " + rows + "; r++)");
  w.open("for (int64_t j = 0; j < " + cols + "; j++)");
  w.line("c[r * ldc + j] = first ? t[r][j] : c[r * ldc + j] + t[r][j];");
  w.close();
  w.close();
}

std::string float_vector(int64_t width) { return "lm_vf" + std::to_string(width); }

std::string float_vector_typedefs(int64_t width) {
  std::string v = float_vector(width);
  std::string bytes = std::to_string(width * 4);
  return "typedef float " + v + " __attribute__((vector_size(" + bytes + ")));\n" +
         "typedef float " + v + "u __attribute__((vector_size(" + bytes +
         "), aligned(4), may_alias));\n";
}

int folded_batch_loops(const Kernel& k) {
  const MatmulInfo& mm = k.matmul;
  Expr rows = k.loops[mm.m_loop].extent;
  Expr n = k.loops[mm.n_loop].extent;
  int folded = 0;
  for (int i = mm.m_loop - 1; i >= 0; --i) {
    if (is_one(k.loops[i].extent)) {  // a loop of one iteration folds however it strides
      ++folded;
      continue;
    }
    const std::string& var = k.loops[i].var;
    auto sb = affine_stride(k.values[mm.b].index, var);
    auto sc = affine_stride(k.out_index, var);
    if (!sb || !sc || !is_zero(*sb)) break;
    // a computed A is computed at its loop variables: it folds however it is laid out
    if (!mm.a_computed) {
      auto sa = affine_stride(k.values[mm.a].index, var);
      if (!sa || !is_zero(*sa - mm.a_m * rows)) break;
    }
    if (!is_zero(*sc - n * rows)) break;
    rows = rows * k.loops[i].extent;
    ++folded;
  }
  return folded;
}

Expr folded_rows(const Kernel& k) {
  const int m_loop = k.matmul.m_loop;
  Expr rows = k.loops[m_loop].extent;
  for (int i = m_loop - folded_batch_loops(k); i < m_loop; ++i) rows = rows * k.loops[i].extent;
  return rows;
}

void emit_batch_bases(const Kernel& k, int outer, const std::string& b_type, CodeWriter& w,
                      const std::string& a_base) {
  const MatmulInfo& mm = k.matmul;
  std::map<std::string, Expr> zero = {
      {k.loops[mm.m_loop].var, 0}, {k.loops[mm.n_loop].var, 0}, {"r0", 0}};
  for (int i = outer; i < mm.m_loop; ++i) zero[k.loops[i].var] = 0;
  Expr inner = 1;
  for (int i = outer - 1; i >= 0; --i) {
    const Loop& l = k.loops[i];
    w.line("const int64_t " + l.var + " = (lm_bt / (" + inner.to_c() + ")) % (" +
           l.extent.to_c() + ");");
    inner = inner * l.extent;
  }
  std::string a = CLikeRenderer::buffer_name(k.values[mm.a].buffer);
  std::string b = CLikeRenderer::buffer_name(k.values[mm.b].buffer);
  std::string c = CLikeRenderer::buffer_name(k.out);
  if (!a_base.empty()) {
    w.line("const float* restrict A = " + a_base + ";");
  } else if (mm.a_computed) {
    // no A in memory: its rows are computed (c/prologue.cc)
  } else {
    const std::string a_type = mm.a_stored == DType::F32 ? "float" : "uint16_t";  // bf16 dot
    w.line("const " + a_type + "* restrict A = " + a + " + " +
           k.values[mm.a].index.substitute(zero).to_c() + ";");
  }
  std::string b_offset = k.values[mm.b].index.substitute(zero).to_c();
  if (mm.b_window) b_offset = "0";  // gathered at its own index (c/window.cc)
  if (is_quantized(mm.b_stored)) {  // bytes: the offset is whole blocks (c/quant.h)
    b_offset = "(" + b_offset + ") / " + std::to_string(block_values(mm.b_stored)) + " * " +
               std::to_string(block_bytes(mm.b_stored));
  }
  w.line("const " + b_type + "* restrict B = " + b + " + " + b_offset + ";");
  w.line("float* restrict C = " + c + " + " + k.out_index.substitute(zero).to_c() + ";");
}

void emit_row_vars(const Kernel& k, int outer, const std::string& row, CodeWriter& w) {
  std::string rest = row;
  for (int i = k.matmul.m_loop; i >= outer; --i) {
    const Loop& l = k.loops[i];
    const std::string at = i == outer ? rest : "(" + rest + ") % (" + l.extent.to_c() + ")";
    w.line("const int64_t " + l.var + " = " + at + ";");
    rest = "(" + rest + ") / (" + l.extent.to_c() + ")";
  }
}

void emit_matmul_sizes(const Kernel& k, int outer, CodeWriter& w) {
  const MatmulInfo& mm = k.matmul;
  Expr batches = 1;
  for (int i = 0; i < outer; ++i) batches = batches * k.loops[i].extent;
  w.line("const int64_t M = " + folded_rows(k).to_c() + ";");
  w.line("const int64_t N = " + k.loops[mm.n_loop].extent.to_c() + ";");
  w.line("const int64_t K = " + k.reduce.back().extent.to_c() + ";");
  w.line("const int64_t am = " + mm.a_m.to_c() + ", ak = " + mm.a_k.to_c() + ";");
  w.line("const int64_t bk = " + mm.b_k.to_c() + ", bn = " + mm.b_n.to_c() + ";");
  w.line("const int64_t lm_batches = " + batches.to_c() + ";");
}

}  // namespace luminal
