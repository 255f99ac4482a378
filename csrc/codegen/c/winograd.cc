// The C renderer's Winograd convolution (kernel/winograd.h): F(m x m, 3x3), m = 2 or 4 (input
// tiles of a = m + 2), for a window matmul whose geometry winograd_conv found
// (MatmulInfo::winograd). In one parallel region:
//   1. the filters transformed, U = G g G^T, into the GEMM's panels: a * a (one per element xi
//      of a tile) of channels x out-channels, tile_n out-channels a panel, zero past them;
//   2. the input copied once into a zero-padded channels-last image (every tile a plain read,
//      the channels contiguous for the vectors);
//   3. per block of tiles (as many as keep its V and products near the cache): each tile's
//      V = B^T d B, a vector of channels at a time; a * a GEMMs of the tiles' V_xi by U_xi (the
//      matmul's own micro-kernel, c/matmul.cc, the tiles its rows); each tile's products
//      back into m x m outputs, A^T p A, out-channels a vector, stored to C[m, n].
// The transforms are unrolled products with Lavin and Gray's matrices (zeros skipped). Not the
// geometry (kernel/winograd.cc), nor the rule (cpu.rules cpu-conv-winograd).
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/c/matmul.h"
#include "codegen/c/renderer.h"
#include "kernel/winograd.h"

namespace luminal {

namespace {

// The budget of a block of tiles: its transformed inputs and its products, in bytes.
constexpr int64_t kBlockBytes = int64_t{8} << 20;

using Matrix = std::vector<std::vector<double>>;

// B^T (a x a), G (a x 3), A^T (m x a) of F(m x m, 3x3).
struct Transforms {
  Matrix bt, g, at;
};

Transforms transforms(int64_t m) {
  if (m == 2) {
    return {{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
            {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
            {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  }
  return {{{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
           {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}},
          {{1.0 / 4, 0, 0}, {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
           {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}},
          {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
}

std::string str(int64_t v) { return std::to_string(v); }

// sum_j row[j] * term(j) in C, the zero coefficients left out ("0.0f" where all are).
template <typename Term>
std::string combination(const std::vector<double>& row, Term term) {
  std::string s;
  for (size_t j = 0; j < row.size(); ++j) {
    const double c = row[j];
    if (c == 0) continue;
    const double mag = c < 0 ? -c : c;
    s += s.empty() ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + ");
    if (mag != 1) {
      std::ostringstream lit;
      lit.precision(9);
      lit << mag;
      std::string text = lit.str();
      if (text.find('.') == std::string::npos && text.find('e') == std::string::npos) {
        text += ".0";
      }
      s += text + "f * ";
    }
    s += term(j);
  }
  return s.empty() ? "0.0f" : s;
}

// Emits res = left * in * right^T: `tmp`[i][j] = sum_k left[i][k] at(k, j) for j < in_cols,
// then `res`[i][j] = sum_k tmp[i][k] right[j][k] (both declared by the caller).
void emit_sandwich(const Matrix& left, const Matrix& right, const std::string& tmp,
                   const std::string& res, int64_t in_cols, CodeWriter& w,
                   const std::function<std::string(size_t, size_t)>& at) {
  for (size_t i = 0; i < left.size(); ++i) {
    for (int64_t j = 0; j < in_cols; ++j) {
      w.line(tmp + "[" + str(i) + "][" + str(j) + "] = " +
             combination(left[i], [&](size_t k) { return at(k, static_cast<size_t>(j)); }) + ";");
    }
  }
  for (size_t i = 0; i < left.size(); ++i) {
    for (size_t j = 0; j < right.size(); ++j) {
      w.line(res + "[" + str(i) + "][" + str(j) + "] = " +
             combination(right[j], [&](size_t k) {
               return tmp + "[" + str(i) + "][" + str(k) + "]";
             }) + ";");
    }
  }
}

}  // namespace

void CRenderer::emit_winograd(const Kernel& k, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  const WinogradConv& g = *mm.winograd;
  const int64_t m = g.tile, a = m + 2, a2 = a * a;
  const Transforms tr = transforms(m);
  const GemmBlock blk = gemm_block(k, vector_width_);
  const int64_t vw = blk.vw, nr = blk.nr, mr = blk.mr;
  const std::string v = float_vector(vw), vu = v + "u";
  const int64_t outs = k.loops[mm.m_loop].extent.as_const();  // out channels
  const int64_t cp = (g.channels + vw - 1) / vw * vw;          // channels, padded
  const int64_t panels = (outs + nr - 1) / nr;
  const int64_t pmn = panels * nr;  // out channels, padded to whole panels
  const int64_t th = (g.out_rows + m - 1) / m, tw = (g.out_cols + m - 1) / m;
  const int64_t tiles = g.tiles();
  const int64_t xh = m * th + 2, xw = m * tw + 2;  // the padded image
  int64_t block = kBlockBytes / (a2 * (cp + pmn) * 4) / mr * mr;
  if (block < mr) block = mr;
  if (block > tiles) block = tiles;
  const std::string S = str(block), CP = str(cp), PMN = str(pmn), NR = str(nr), VW = str(vw);
  const std::string A2 = str(a2), M = str(m);
  w.line("/* Winograd F(" + M + "x" + M + ", 3x3): " + str(g.images) + " images, " +
         str(g.channels) + " -> " + str(outs) + " channels, " + str(g.out_rows) + "x" +
         str(g.out_cols) + " outputs, " + str(tiles) + " tiles, blocks of " + S + " */");
  w.line("const int64_t lm_bt = 0;");
  emit_batch_bases(k, mm.m_loop, "float", w);
  w.line("const int64_t N = " + str(g.images * g.out_rows * g.out_cols) + ";");
  w.line("float* lm_u = (float*)malloc(sizeof(float) * " + str(a2 * pmn * cp) + " + 64);");
  w.line("float* lm_x = (float*)malloc(sizeof(float) * " + str(g.images * xh * xw * cp) +
         " + 64);");
  w.line("float* lm_v = (float*)malloc(sizeof(float) * " + str(a2 * block * cp) + " + 64);");
  w.line("float* lm_p = (float*)malloc(sizeof(float) * " + str(a2 * block * pmn) + " + 64);");
  const std::string team = omp_team(k, str(a2 * tiles * cp * pmn));
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  // 1. U = G g G^T, a vector of out channels at a time
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_q = 0; lm_q < " + str(pmn / vw * cp) + "; lm_q++)");
  w.line("const int64_t m0 = lm_q / " + CP + " * " + VW + ", c = lm_q % " + CP + ";");
  w.line(v + " gk[3][3], t[" + str(a) + "][3], u[" + str(a) + "][" + str(a) + "];");
  for (int64_t j = 0; j < 9; ++j) {
    w.line("for (int64_t l = 0; l < " + VW + "; l++) gk[" + str(j / 3) + "][" + str(j % 3) +
           "][l] = m0 + l < " + str(outs) + " && c < " + str(g.channels) + " ? A[(m0 + l) * " +
           mm.a_m.to_c() + " + (c * 9 + " + str(j) + ") * " + mm.a_k.to_c() + "] : 0.0f;");
  }
  emit_sandwich(tr.g, tr.g, "t", "u", 3, w, [](size_t kk, size_t j) {
    return "gk[" + str(static_cast<int64_t>(kk)) + "][" + str(static_cast<int64_t>(j)) + "]";
  });
  w.line("float* restrict at = lm_u + (m0 / " + NR + " * " + CP + " + c) * " + NR + " + m0 % " +
         NR + ";");
  for (int64_t xi = 0; xi < a2; ++xi) {  // unrolled here: the arrays stay in registers
    w.line("*(" + vu + "*)(at + " + str(xi * pmn * cp) + ") = u[" + str(xi / a) + "][" +
           str(xi % a) + "];");
  }
  w.close();
  // 2. the padded channels-last image
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_q = 0; lm_q < " + str(g.images * xh) + "; lm_q++)");
  w.line("const int64_t b = lm_q / " + str(xh) + ", ih = lm_q % " + str(xh) + " - " +
         str(g.pad_h) + ";");
  w.line("float* restrict row = lm_x + lm_q * " + str(xw * cp) + ";");
  w.open("for (int64_t c = 0; c < " + CP + "; c++)");
  w.line("const int live = c < " + str(g.channels) + " && ih >= 0 && ih < " + str(g.rows) + ";");
  w.line("const float* restrict src = B + " + str(g.origin) + " + b * " + str(g.image_stride) +
         " + c * " + str(g.channel_stride) + " + ih * " + str(g.row_stride) + ";");
  w.open("for (int64_t x = 0; x < " + str(xw) + "; x++)");
  w.line("const int64_t iw = x - " + str(g.pad_w) + ";");
  w.line("row[x * " + CP + " + c] = live && iw >= 0 && iw < " + str(g.cols) + " ? src[iw * " +
         str(g.col_stride) + "] : 0.0f;");
  w.close();
  w.close();
  w.close();
  // 3. the blocks of tiles, one at a time, every thread on each phase of it (each omp for
  // ends in a barrier)
  const std::string tile_of = "const int64_t t = t0 + j, b = t / " + str(th * tw) + ", ty = t / " +
                              str(tw) + " % " + str(th) + ", tx = t % " + str(tw) + ";";
  w.open("for (int64_t t0 = 0; t0 < " + str(tiles) + "; t0 += " + S + ")");
  w.line("const int64_t count = " + str(tiles) + " - t0 < " + S + " ? " + str(tiles) +
         " - t0 : " + S + ";");
  w.line("float* restrict V = lm_v;");
  w.line("float* restrict P = lm_p;");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t j = 0; j < count; j++)");
  w.line(tile_of);
  w.line("const float* restrict src = lm_x + ((b * " + str(xh) + " + " + M + " * ty) * " +
         str(xw) + " + " + M + " * tx) * " + CP + ";");
  w.line("float* restrict dst = V + j * " + CP + ";");
  w.open("for (int64_t c0 = 0; c0 < " + CP + "; c0 += " + VW + ")");
  w.line(v + " d[" + str(a) + "][" + str(a) + "], e[" + str(a) + "][" + str(a) + "], s[" +
         str(a) + "][" + str(a) + "];");
  for (int64_t y = 0; y < a; ++y) {
    for (int64_t x = 0; x < a; ++x) {
      w.line("d[" + str(y) + "][" + str(x) + "] = *(const " + vu + "*)(src + " +
             str((y * xw + x) * cp) + " + c0);");
    }
  }
  emit_sandwich(tr.bt, tr.bt, "e", "s", a, w, [](size_t kk, size_t j) {
    return "d[" + str(static_cast<int64_t>(kk)) + "][" + str(static_cast<int64_t>(j)) + "]";
  });
  for (int64_t xi = 0; xi < a2; ++xi) {
    w.line("*(" + vu + "*)(dst + " + str(xi * block * cp) + " + c0) = s[" + str(xi / a) + "][" +
           str(xi % a) + "];");
  }
  w.close();
  w.close();
  // the a * a GEMMs: (xi, panel, rows of tiles) tasks
  w.line("const int64_t lm_rowblocks = (count + " + str(mr) + " - 1) / " + str(mr) + ";");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_q = 0; lm_q < " + A2 + " * " + str(panels) +
         " * lm_rowblocks; lm_q++)");
  w.line("const int64_t xi = lm_q / (" + str(panels) + " * lm_rowblocks), p = lm_q / "
         "lm_rowblocks % " + str(panels) + ", i = lm_q % lm_rowblocks * " + str(mr) + ";");
  w.line("const int64_t rows = count - i < " + str(mr) + " ? count - i : " + str(mr) + ";");
  w.line(blk.micro + "(" + CP + ", V + (xi * " + S + " + i) * " + CP + ", " + CP +
         ", 1, lm_u + (xi * " + str(panels) + " + p) * " + CP + " * " + NR + ", P + (xi * " + S +
         " + i) * " + PMN + " + p * " + NR + ", " + PMN + ", rows, " + NR + ", 1);");
  w.close();
  // A^T p A into C
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t j = 0; j < count; j++)");
  w.line(tile_of);
  w.line("const int64_t oh = " + M + " * ty, ow = " + M + " * tx;");
  w.line("const int64_t n = (b * " + str(g.out_rows) + " + oh) * " + str(g.out_cols) + " + ow;");
  w.line("const int64_t down = " + str(g.out_rows) + " - oh < " + M + " ? " + str(g.out_rows) +
         " - oh : " + M + ", right = " + str(g.out_cols) + " - ow < " + M + " ? " +
         str(g.out_cols) + " - ow : " + M + ";");
  w.open("for (int64_t m0 = 0; m0 < " + str(outs) + "; m0 += " + VW + ")");
  w.line(v + " s[" + str(a) + "][" + str(a) + "], f[" + M + "][" + str(a) + "], y[" + M + "][" +
         M + "];");
  w.line("const float* restrict lm_pj = P + j * " + PMN + " + m0;");
  for (int64_t xi = 0; xi < a2; ++xi) {
    w.line("s[" + str(xi / a) + "][" + str(xi % a) + "] = *(const " + vu + "*)(lm_pj + " +
           str(xi * block * pmn) + ");");
  }
  emit_sandwich(tr.at, tr.at, "f", "y", a, w, [](size_t kk, size_t j) {
    return "s[" + str(static_cast<int64_t>(kk)) + "][" + str(static_cast<int64_t>(j)) + "]";
  });
  w.line("const int64_t lanes = " + str(outs) + " - m0 < " + VW + " ? " + str(outs) + " - m0 : " +
         VW + ";");
  w.open("for (int64_t l = 0; l < lanes; l++)");
  w.line("float* restrict out = C + (m0 + l) * N + n;");
  for (int64_t dy = 0; dy < m; ++dy) {
    for (int64_t dx = 0; dx < m; ++dx) {
      w.line("if (" + str(dy) + " < down && " + str(dx) + " < right) out[" +
             str(dy * g.out_cols + dx) + "] = y[" + str(dy) + "][" + str(dx) + "][l];");
    }
  }
  w.close();
  w.close();
  w.close();
  w.close();
  w.close();
  w.line("free(lm_v);");
  w.line("free(lm_p);");
  w.line("free(lm_u);");
  w.line("free(lm_x);");
}

}  // namespace luminal
