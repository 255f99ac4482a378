// The C renderer's implicit GEMM (kernel/window.h): the panels of a window B (a convolution's
// columns, MatmulInfo::b_window) gathered from the input as the GEMM packs them
// (c/matmul.cc), at the load's own index and padding mask. Not the GEMM.
//
// The index and each condition of the mask are a part that moves with the column n plus a part
// that moves with k (kernel/window.h's window_parts; a convolution's: (oh, ow) and
// (c, kh, kw)), so a panel's columns are tabulated once and split into runs along which every
// part steps by a constant (a run of one output row); each k row of the panel is then, per
// run, zeros, a copy of the input at a constant stride over the interval where every
// condition holds, zeros: no division or test per element.
#include <map>
#include <optional>
#include <vector>

#include "codegen/c/matmul.h"
#include "codegen/c/renderer.h"
#include "core/errors.h"
#include "kernel/window.h"

namespace luminal {

namespace {

// The pack of a panel `width` columns wide from `input`, its column variable `n` and its k
// variable `r` (the loop variables the parts are written in).
void emit_runs_pack(const WindowParts& s, const std::string& n, const std::string& r,
                    const std::string& width, const std::string& input, CodeWriter& w) {
  const std::string parts = std::to_string(s.parts.size());
  // The columns' parts, then the runs: lm_wrun[q] to lm_wrun[q + 1], along which each part
  // steps by a constant.
  w.line("int64_t lm_wcol[" + parts + "][" + width + "];");
  w.open("for (int64_t j = 0; j < wcols; j++)");
  w.line("const int64_t " + n + " = n0 + jr + j;");
  for (size_t p = 0; p < s.parts.size(); ++p) {
    w.line("lm_wcol[" + std::to_string(p) + "][j] = " + s.parts[p].first.to_c() + ";");
  }
  w.close();
  // The runs, and each part's step along its run.
  w.line("int64_t lm_wrun[" + width + " + 1];");
  w.line("int64_t lm_wstep[" + parts + "][" + width + "];");
  w.line("int64_t lm_wruns = 0;");
  w.open("for (int64_t j = 0; j < wcols;)");
  w.line("int64_t e = j + 2 < wcols ? j + 2 : wcols;");
  w.open("for (; e < wcols; e++)");
  w.line("int lm_same = 1;");
  w.line("for (int64_t p = 0; p < " + parts + "; p++) lm_same &= lm_wcol[p][e] - "
         "lm_wcol[p][e - 1] == lm_wcol[p][j + 1] - lm_wcol[p][j];");
  w.line("if (!lm_same) break;");
  w.close();
  w.line("for (int64_t p = 0; p < " + parts + "; p++) lm_wstep[p][lm_wruns] = e - j > 1 ? "
         "lm_wcol[p][j + 1] - lm_wcol[p][j] : 0;");
  w.line("lm_wrun[lm_wruns++] = j;");
  w.line("j = e;");
  w.close();
  w.line("lm_wrun[lm_wruns] = wcols;");
  w.open("for (int64_t kk = 0; kk < kcur; kk++)");
  w.line("const int64_t " + r + " = pc + kk;");
  w.line("float* restrict dst = panel + kk * " + width + ";");
  for (size_t p = 0; p < s.parts.size(); ++p) {
    w.line("const int64_t lm_wrow" + std::to_string(p) + " = " + s.parts[p].second.to_c() + ";");
  }
  // Each element written once: per run zeros, the copy where every condition holds, zeros.
  w.open("for (int64_t q = 0; q < lm_wruns; q++)");
  w.line("const int64_t j0 = lm_wrun[q], len = lm_wrun[q + 1] - j0;");
  w.line("int64_t lo = 0, hi = len;");
  for (size_t p = 1; p < s.parts.size(); ++p) {
    // the run's columns jj in [0, len) where base + d * jj > 0 (d of +-1: a stride-1 row)
    const std::string ps = std::to_string(p);
    w.open("");
    w.line("const int64_t base = lm_wcol[" + ps + "][j0] + lm_wrow" + ps + ";");
    w.line("const int64_t d = lm_wstep[" + ps + "][q];");
    w.open("if (d == 0)");
    w.line("if (base <= 0) hi = 0;");
    w.middle("} else if (d == 1) {");
    w.line("if (1 - base > lo) lo = 1 - base;");
    w.middle("} else if (d == -1) {");
    w.line("if (base < hi) hi = base;");
    w.middle("} else if (d > 0) {");
    w.line("const int64_t from = (base >= 0 ? -((base + d - 1) / d) : (-base) / d) + 1;");
    w.line("if (from > lo) lo = from;");
    w.middle("} else {");
    w.line("const int64_t to = base > 0 ? (base + (-d) - 1) / (-d) : 0;");
    w.line("if (to < hi) hi = to;");
    w.close();
    w.close();
  }
  w.line("if (lo > len) lo = len;");
  w.line("if (hi < lo) hi = lo;");
  w.line("const int64_t step = lm_wstep[0][q];");
  w.line("const float* restrict src = " + input + " + lm_wcol[0][j0] + lm_wrow0;");
  w.line("float* restrict out = dst + j0;");
  w.line("for (int64_t jj = 0; jj < lo; jj++) out[jj] = 0.0f;");
  w.line("if (step == 1) for (int64_t jj = lo; jj < hi; jj++) out[jj] = src[jj];");
  w.line("else for (int64_t jj = lo; jj < hi; jj++) out[jj] = src[jj * step];");
  w.line("for (int64_t jj = hi; jj < len; jj++) out[jj] = 0.0f;");
  w.close();
  w.line("for (int64_t j = wcols; j < " + width + "; j++) dst[j] = 0.0f;");
  w.close();
}

}  // namespace

void emit_window_pack_panel(const Kernel& k, int outer, int64_t nr, CodeWriter& w) {
  const MatmulInfo& mm = k.matmul;
  const Value& b = k.values[mm.b];
  // Loops folded into the rows: B does not move along them (or they run once).
  std::map<std::string, Expr> folded;
  for (int i = outer; i < mm.m_loop; ++i) folded[k.loops[i].var] = 0;
  const Expr index = b.index.substitute(folded);
  const Expr valid = b.valid.substitute(folded);
  const std::string width = std::to_string(nr);
  const std::string input = CLikeRenderer::buffer_name(b.buffer);
  w.line("float* restrict panel = lm_bp + (jr / " + width + ") * kcur * " + width + ";");
  w.line("const int64_t wcols = ncols - jr < " + width + " ? ncols - jr : " + width + ";");
  const std::string& n = k.loops[mm.n_loop].var;
  const std::string& r = k.reduce.back().var;
  std::optional<WindowParts> parts = window_parts(index, valid, n, r);
  if (!parts) throw InternalError("a window B whose index or mask does not split");
  emit_runs_pack(*parts, n, r, width, input, w);
}

}  // namespace luminal
