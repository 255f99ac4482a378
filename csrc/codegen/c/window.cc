// The C renderer's implicit GEMM (kernel/window.h): the panels of a window B (a convolution's
// columns, MatmulInfo::b_window) gathered from the input as the GEMM packs them
// (c/matmul.cc), at the load's own index and padding mask. Not the GEMM.
#include "codegen/c/matmul.h"
#include "codegen/c/renderer.h"

namespace luminal {

void emit_window_pack_panel(const Kernel& k, int outer, int64_t nr, CodeWriter& w) {
  const MatmulInfo& mm = k.matmul;
  const Value& b = k.values[mm.b];
  // Loops folded into the rows: B does not move along them (or they run once).
  std::map<std::string, Expr> folded;
  for (int i = outer; i < mm.m_loop; ++i) folded[k.loops[i].var] = 0;
  const std::string index = b.index.substitute(folded).to_c();
  const std::string valid = b.valid.substitute(folded).to_c();
  const std::string width = std::to_string(nr);
  w.line("float* restrict panel = lm_bp + (jr / " + width + ") * kcur * " + width + ";");
  w.line("const int64_t wcols = ncols - jr < " + width + " ? ncols - jr : " + width + ";");
  w.open("for (int64_t kk = 0; kk < kcur; kk++)");
  w.line("const int64_t " + k.reduce.back().var + " = pc + kk;");
  w.line("float* restrict dst = panel + kk * " + width + ";");
  w.open("for (int64_t j = 0; j < " + width + "; j++)");
  w.line("const int64_t " + k.loops[mm.n_loop].var + " = n0 + jr + j;");
  w.line("dst[j] = j < wcols && (" + valid + ") ? " + CLikeRenderer::buffer_name(b.buffer) +
         "[" + index + "] : 0.0f;");
  w.close();
  w.close();
}

}  // namespace luminal
