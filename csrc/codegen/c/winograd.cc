// The C renderer's Winograd convolution (kernel/winograd.h): F(2x2, 3x3) for a window matmul
// whose geometry winograd_conv found (MatmulInfo::winograd). In one parallel region:
//   1. the filters transformed, U = G g G^T, into the GEMM's panels: 16 (one per element xi of
//      a 4x4 tile) of channels x out-channels, tile_n out-channels a panel, zero past them;
//   2. the input copied once into a zero-padded channels-last image (every tile a plain read,
//      the channels contiguous for the vectors);
//   3. per block of tiles (as many as keep its V and products near the cache): each tile's
//      V = B^T d B, a vector of channels at a time; 16 GEMMs of the tiles' V_xi by U_xi (the
//      matmul's own micro-kernel, c/matmul.cc, the tiles its rows); each tile's products
//      back into 2x2 outputs, A^T m A, out-channels a vector, stored to C[m, n].
// Not the geometry (kernel/winograd.cc), nor the rule (cpu.rules cpu-conv-winograd).
#include <string>

#include "codegen/c/matmul.h"
#include "codegen/c/renderer.h"
#include "core/errors.h"
#include "kernel/winograd.h"

namespace luminal {

namespace {

// The budget of a block of tiles: its transformed inputs and its products, in bytes.
constexpr int64_t kBlockBytes = int64_t{8} << 20;

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

void CRenderer::emit_winograd(const Kernel& k, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  const WinogradConv& g = *mm.winograd;
  const GemmBlock blk = gemm_block(k, vector_width_);
  const int64_t vw = blk.vw, nr = blk.nr, mr = blk.mr;
  const std::string v = float_vector(vw), vu = v + "u";
  const int64_t outs = k.loops[mm.m_loop].extent.as_const();  // out channels
  const int64_t cp = (g.channels + vw - 1) / vw * vw;          // channels, padded
  const int64_t panels = (outs + nr - 1) / nr;
  const int64_t pmn = panels * nr;  // out channels, padded to whole panels
  const int64_t th = (g.out_rows + 1) / 2, tw = (g.out_cols + 1) / 2;
  const int64_t tiles = g.tiles();
  const int64_t xh = 2 * th + 2, xw = 2 * tw + 2;  // the padded image
  int64_t block = kBlockBytes / (16 * (cp + pmn) * 4) / mr * mr;
  if (block < mr) block = mr;
  if (block > tiles) block = tiles;
  const std::string S = str(block), CP = str(cp), PMN = str(pmn), NR = str(nr), VW = str(vw);
  w.line("/* Winograd F(2x2, 3x3): " + str(g.images) + " images, " + str(g.channels) + " -> " +
         str(outs) + " channels, " + str(g.out_rows) + "x" + str(g.out_cols) + " outputs, " +
         str(tiles) + " tiles, blocks of " + S + " */");
  w.line("const int64_t lm_bt = 0;");
  emit_batch_bases(k, mm.m_loop, "float", w);
  w.line("const int64_t N = " + str(tiles > 0 ? g.images * g.out_rows * g.out_cols : 0) + ";");
  w.line("float* lm_u = (float*)malloc(sizeof(float) * 16 * " + str(pmn * cp) + " + 64);");
  w.line("float* lm_x = (float*)malloc(sizeof(float) * " + str(g.images * xh * xw * cp) +
         " + 64);");
  w.line("float* lm_v = (float*)malloc(sizeof(float) * 16 * " + str(block * cp) + " + 64);");
  w.line("float* lm_p = (float*)malloc(sizeof(float) * 16 * " + str(block * pmn) + " + 64);");
  const std::string team = omp_team(k, str(16 * tiles * cp * pmn));
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  // 1. U = G g G^T, a vector of out channels at a time
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_q = 0; lm_q < " + str(pmn / vw * cp) + "; lm_q++)");
  w.line("const int64_t m0 = lm_q / " + CP + " * " + VW + ", c = lm_q % " + CP + ";");
  w.line(v + " gk[9];");
  w.open("for (int64_t j = 0; j < 9; j++)");
  w.line("for (int64_t l = 0; l < " + VW + "; l++) gk[j][l] = m0 + l < " + str(outs) +
         " && c < " + str(g.channels) + " ? A[(m0 + l) * " + mm.a_m.to_c() + " + (c * 9 + j) * " +
         mm.a_k.to_c() + "] : 0.0f;");
  w.close();
  w.line(v + " t[4][3], u[4][4];");
  w.open("for (int64_t j = 0; j < 3; j++)");
  w.line("t[0][j] = gk[j];");
  w.line("t[1][j] = 0.5f * (gk[j] + gk[3 + j] + gk[6 + j]);");
  w.line("t[2][j] = 0.5f * (gk[j] - gk[3 + j] + gk[6 + j]);");
  w.line("t[3][j] = gk[6 + j];");
  w.close();
  w.open("for (int64_t i = 0; i < 4; i++)");
  w.line("u[i][0] = t[i][0];");
  w.line("u[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);");
  w.line("u[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);");
  w.line("u[i][3] = t[i][2];");
  w.close();
  w.line("float* restrict at = lm_u + (m0 / " + NR + " * " + CP + " + c) * " + NR + " + m0 % " +
         NR + ";");
  w.line("for (int64_t xi = 0; xi < 16; xi++) *(" + vu + "*)(at + xi * " + str(pmn * cp) +
         ") = u[xi / 4][xi % 4];");
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
  // 3. the blocks of tiles
  w.open("for (int64_t t0 = 0; t0 < " + str(tiles) + "; t0 += " + S + ")");
  w.line("const int64_t count = " + str(tiles) + " - t0 < " + S + " ? " + str(tiles) +
         " - t0 : " + S + ";");
  // one block at a time, every thread on each phase of it (each omp for ends in a barrier)
  w.line("float* restrict V = lm_v;");
  w.line("float* restrict P = lm_p;");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t j = 0; j < count; j++)");
  w.line("const int64_t t = t0 + j, b = t / " + str(th * tw) + ", ty = t / " + str(tw) + " % " +
         str(th) + ", tx = t % " + str(tw) + ";");
  w.line("const float* restrict src = lm_x + ((b * " + str(xh) + " + 2 * ty) * " + str(xw) +
         " + 2 * tx) * " + CP + ";");
  w.open("for (int64_t c0 = 0; c0 < " + CP + "; c0 += " + VW + ")");
  w.line(v + " d[4][4], e[4][4];");
  w.line("for (int64_t y = 0; y < 4; y++) for (int64_t x = 0; x < 4; x++) d[y][x] = *(const " +
         vu + "*)(src + (y * " + str(xw) + " + x) * " + CP + " + c0);");
  w.open("for (int64_t x = 0; x < 4; x++)");
  w.line("e[0][x] = d[0][x] - d[2][x];");
  w.line("e[1][x] = d[1][x] + d[2][x];");
  w.line("e[2][x] = d[2][x] - d[1][x];");
  w.line("e[3][x] = d[1][x] - d[3][x];");
  w.close();
  w.line("float* restrict dst = V + j * " + CP + " + c0;");
  w.open("for (int64_t y = 0; y < 4; y++)");
  w.line("*(" + vu + "*)(dst + (y * 4 + 0) * " + str(block * cp) + ") = e[y][0] - e[y][2];");
  w.line("*(" + vu + "*)(dst + (y * 4 + 1) * " + str(block * cp) + ") = e[y][1] + e[y][2];");
  w.line("*(" + vu + "*)(dst + (y * 4 + 2) * " + str(block * cp) + ") = e[y][2] - e[y][1];");
  w.line("*(" + vu + "*)(dst + (y * 4 + 3) * " + str(block * cp) + ") = e[y][1] - e[y][3];");
  w.close();
  w.close();
  w.close();
  // the 16 GEMMs: (xi, panel, rows of tiles) tasks
  w.line("const int64_t lm_rowblocks = (count + " + str(mr) + " - 1) / " + str(mr) + ";");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_q = 0; lm_q < 16 * " + str(panels) + " * lm_rowblocks; lm_q++)");
  w.line("const int64_t xi = lm_q / (" + str(panels) + " * lm_rowblocks), p = lm_q / "
         "lm_rowblocks % " + str(panels) + ", i = lm_q % lm_rowblocks * " + str(mr) + ";");
  w.line("const int64_t rows = count - i < " + str(mr) + " ? count - i : " + str(mr) + ";");
  w.line(blk.micro + "(" + CP + ", V + (xi * " + S + " + i) * " + CP + ", " + CP +
         ", 1, lm_u + (xi * " + str(panels) + " + p) * " + CP + " * " + NR + ", P + (xi * " + S +
         " + i) * " + PMN + " + p * " + NR + ", " + PMN + ", rows, " + NR + ", 1);");
  w.close();
  // A^T m A into C
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t j = 0; j < count; j++)");
  w.line("const int64_t t = t0 + j, b = t / " + str(th * tw) + ", ty = t / " + str(tw) + " % " +
         str(th) + ", tx = t % " + str(tw) + ";");
  w.line("const int64_t oh = 2 * ty, ow = 2 * tx;");
  w.line("const int64_t n = (b * " + str(g.out_rows) + " + oh) * " + str(g.out_cols) + " + ow;");
  w.line("const int down = oh + 1 < " + str(g.out_rows) + ", right = ow + 1 < " +
         str(g.out_cols) + ";");
  w.open("for (int64_t m0 = 0; m0 < " + str(outs) + "; m0 += " + VW + ")");
  w.line(v + " s[4][4], f[2][4], y[2][2];");
  w.line("for (int64_t xi = 0; xi < 16; xi++) s[xi / 4][xi % 4] = *(const " + vu + "*)(P + (xi * " +
         S + " + j) * " + PMN + " + m0);");
  w.open("for (int64_t x = 0; x < 4; x++)");
  w.line("f[0][x] = s[0][x] + s[1][x] + s[2][x];");
  w.line("f[1][x] = s[1][x] - s[2][x] - s[3][x];");
  w.close();
  w.open("for (int64_t r = 0; r < 2; r++)");
  w.line("y[r][0] = f[r][0] + f[r][1] + f[r][2];");
  w.line("y[r][1] = f[r][1] - f[r][2] - f[r][3];");
  w.close();
  w.line("const int64_t lanes = " + str(outs) + " - m0 < " + VW + " ? " + str(outs) + " - m0 : " +
         VW + ";");
  w.open("for (int64_t l = 0; l < lanes; l++)");
  w.line("float* restrict out = C + (m0 + l) * N + n;");
  w.line("out[0] = y[0][0][l];");
  w.line("if (right) out[1] = y[0][1][l];");
  w.open("if (down)");
  w.line("out[" + str(g.out_cols) + "] = y[1][0][l];");
  w.line("if (right) out[" + str(g.out_cols + 1) + "] = y[1][1][l];");
  w.close();
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
