// The C renderer's matmul: C[m, n] = sum_k A[m, k] * B[k, n] per batch, as a packed,
// register-blocked GEMM. B is packed per (k block, n block) into panels tile_n wide (a 16-bit B
// widened as it is packed, from its storage); a tile_m x tile_n block of C lives in vector
// registers (GCC vector extensions) while k runs. Work is split over (batch, n block, m chunk)
// tasks across OpenMP threads. A kernel with gemv_rows set first tests M and, for few rows,
// takes the GEMV path of c_gemv.cc instead.
#include <map>
#include <set>
#include <tuple>

#include "codegen/c.h"
#include "codegen/c_matmul.h"
#include "codegen/c_schedule.h"

namespace luminal {

namespace {

// The kernel's CpuSchedule (c_schedule.h) in the micro-kernel's terms.
struct Tiles {
  int64_t mr = 0;  // rows of the register block
  int64_t nr = 0;  // columns of the register block
  int64_t vw = 0;  // floats per vector
  int64_t kc = 0;  // depth of a packed k block
  int64_t nc = 0;  // columns of a packed n block (a multiple of nr)
};

Tiles tiles_of(const Kernel& k) {
  CpuSchedule s = cpu_schedule(k);
  Tiles t;
  t.vw = s.vector_width;
  t.mr = s.tile_m;
  t.nr = s.tile_n;
  if (t.nr % t.vw != 0) t.nr = t.vw * 2;
  t.kc = s.tile_k;
  t.nc = (256 + t.nr - 1) / t.nr * t.nr;
  return t;
}

std::string micro_name(const Tiles& t) {
  return "lm_mm_" + std::to_string(t.mr) + "x" + std::to_string(t.nr) + "_v" +
         std::to_string(t.vw);
}

std::string vec_type(const Tiles& t) { return float_vector(t.vw); }

// The micro-kernel: c[0:mr, 0:nr] (+)= a[0:mr, 0:kc] * bp[0:kc, 0:NR] (bp packed, NR wide).
std::string micro_kernel(const Tiles& t) {
  CodeWriter w;
  std::string v = vec_type(t);
  int64_t nv = t.nr / t.vw;
  w.open("static inline void " + micro_name(t) +
         "(int64_t kc, const float* restrict a, int64_t am, int64_t ak, "
         "const float* restrict bp, float* restrict c, int64_t ldc, int64_t mr, int64_t nr, "
         "int first)");
  for (int64_t r = 0; r < t.mr; ++r) {
    std::string rs = std::to_string(r);
    w.line("const float* restrict a" + rs + " = a + (" + rs + " < mr ? " + rs + " : mr - 1) * am;");
  }
  for (int64_t r = 0; r < t.mr; ++r) {
    for (int64_t j = 0; j < nv; ++j) {
      w.line(v + " c" + std::to_string(r) + "_" + std::to_string(j) + " = {0};");
    }
  }
  w.open("for (int64_t k = 0; k < kc; k++)");
  for (int64_t j = 0; j < nv; ++j) {
    w.line(v + " b" + std::to_string(j) + " = *(const " + v + "u*)(bp + k * " +
           std::to_string(t.nr) + " + " + std::to_string(j * t.vw) + ");");
  }
  for (int64_t r = 0; r < t.mr; ++r) {
    std::string rs = std::to_string(r);
    w.line("const float s" + rs + " = a" + rs + "[k * ak];");
    std::string splat;
    for (int64_t l = 0; l < t.vw; ++l) splat += (l ? ", s" : "s") + rs;
    w.line(v + " x" + rs + " = {" + splat + "};");
    for (int64_t j = 0; j < nv; ++j) {
      std::string acc = "c" + rs + "_" + std::to_string(j);
      w.line(acc + " += x" + rs + " * b" + std::to_string(j) + ";");
    }
  }
  w.close();
  w.open("if (mr == " + std::to_string(t.mr) + " && nr == " + std::to_string(t.nr) + ")");
  for (int64_t r = 0; r < t.mr; ++r) {
    for (int64_t j = 0; j < nv; ++j) {
      std::string acc = "c" + std::to_string(r) + "_" + std::to_string(j);
      std::string p = "(" + v + "u*)(c + " + std::to_string(r) + " * ldc + " +
                      std::to_string(j * t.vw) + ")";
      w.line("if (first) *" + p + " = " + acc + "; else *" + p + " += " + acc + ";");
    }
  }
  w.line("return;");
  w.close();
  w.line("float t[" + std::to_string(t.mr) + "][" + std::to_string(t.nr) + "];");
  for (int64_t r = 0; r < t.mr; ++r) {
    for (int64_t j = 0; j < nv; ++j) {
      w.line("*(" + v + "u*)(t[" + std::to_string(r) + "] + " + std::to_string(j * t.vw) +
             ") = c" + std::to_string(r) + "_" + std::to_string(j) + ";");
    }
  }
  w.open("for (int64_t r = 0; r < mr; r++)");
  w.open("for (int64_t j = 0; j < nr; j++)");
  w.line("c[r * ldc + j] = first ? t[r][j] : c[r * ldc + j] + t[r][j];");
  w.close();
  w.close();
  w.close();
  return w.str();
}

// The GEMM here takes f32 products summed in f32 (no widening of the product) of a matched
// matmul, with A stored as f32 and B stored as f32 or widened from f16/bf16.
bool renders_matmul(const Kernel& k) {
  const MatmulInfo& mm = k.matmul;
  if (!mm.present || mm.dtype != DType::F32 || mm.product_widened) return false;
  if (mm.a_widened) return false;
  return k.values[k.reduce_at].dtype == DType::F32;
}

bool uses_loop_vars(const Expr& e, const Kernel& k) {
  for (const std::string& s : e.symbols()) {
    for (const Loop& l : k.loops) {
      if (l.var == s) return true;
    }
    if (s == "r0") return true;
  }
  return false;
}

}  // namespace

std::string float_vector(int64_t width) { return "lm_vf" + std::to_string(width); }

std::string float_vector_typedefs(int64_t width) {
  std::string v = float_vector(width);
  std::string bytes = std::to_string(width * 4);
  return "typedef float " + v + " __attribute__((vector_size(" + bytes + ")));\n" +
         "typedef float " + v + "u __attribute__((vector_size(" + bytes +
         "), aligned(4), may_alias));\n";
}

std::string CRenderer::matmul_prelude(const Program& program) const {
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  std::set<int64_t> widths;
  std::set<std::string> gemv_seen;  // names of the GEMV helpers emitted so far
  std::string s;
  for (const Kernel& k : program.kernels) {
    if (!renders_matmul(k)) continue;
    Tiles t = tiles_of(k);
    if (widths.insert(t.vw).second) s += float_vector_typedefs(t.vw);
    if (seen.insert({t.mr, t.nr, t.vw}).second) s += micro_kernel(t);
    if (renders_gemv(k)) s += gemv_prelude(k, gemv_seen);
  }
  if (!s.empty()) s = "void* malloc(unsigned long);\nvoid free(void*);\n" + s;
  return s;
}

int folded_batch_loops(const Kernel& k) {
  const MatmulInfo& mm = k.matmul;
  Expr rows = k.loops[mm.m_loop].extent;
  Expr n = k.loops[mm.n_loop].extent;
  int folded = 0;
  for (int i = mm.m_loop - 1; i >= 0; --i) {
    const std::string& var = k.loops[i].var;
    auto sa = affine_stride(k.values[mm.a].index, var);
    auto sb = affine_stride(k.values[mm.b].index, var);
    auto sc = affine_stride(k.out_index, var);
    if (!sa || !sb || !sc) break;
    if (!is_zero(*sb)) break;
    if (!is_zero(*sa - mm.a_m * rows)) break;
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

void emit_batch_bases(const Kernel& k, int outer, const std::string& b_type, CodeWriter& w) {
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
  w.line("const float* restrict A = " + a + " + " + k.values[mm.a].index.substitute(zero).to_c() +
         ";");
  w.line("const " + b_type + "* restrict B = " + b + " + " +
         k.values[mm.b].index.substitute(zero).to_c() + ";");
  w.line("float* restrict C = " + c + " + " + k.out_index.substitute(zero).to_c() + ";");
}

namespace {

// Packs B[pc:pc+kcur, n0+jr : n0+jr+nr] into its panel, zero-padded to nr columns; `element`
// reads src[j], `strided` src[j * bn], each as f32.
void emit_pack_panel(const Tiles& t, const std::string& b_type, const std::string& element,
                     const std::string& strided, CodeWriter& w) {
  std::string nr = std::to_string(t.nr);
  w.line("float* restrict panel = lm_bp + (jr / " + nr + ") * kcur * " + nr + ";");
  w.line("const int64_t wcols = ncols - jr < " + nr + " ? ncols - jr : " + nr + ";");
  w.open("for (int64_t kk = 0; kk < kcur; kk++)");
  w.line("const " + b_type + "* restrict src = B + (pc + kk) * bk + (n0 + jr) * bn;");
  w.line("float* restrict dst = panel + kk * " + nr + ";");
  w.open("if (wcols == " + nr + " && bn == 1)");
  w.line("for (int64_t j = 0; j < " + nr + "; j++) dst[j] = " + element + ";");
  w.middle("} else {");
  w.line("for (int64_t j = 0; j < " + nr + "; j++) dst[j] = j < wcols ? " + strided +
         " : 0.0f;");
  w.close();
  w.close();
}

// Runs the micro-kernel over rows [i, i + rows) and every panel of the n block.
void emit_row_tile(const Tiles& t, CodeWriter& w) {
  std::string mr = std::to_string(t.mr);
  std::string nr = std::to_string(t.nr);
  w.line("const int64_t rows = m1 - i < " + mr + " ? m1 - i : " + mr + ";");
  w.open("for (int64_t jr = 0; jr < ncols; jr += " + nr + ")");
  w.line(micro_name(t) + "(kcur, A + i * am + pc * ak, am, ak, lm_bp + (jr / " + nr +
         ") * kcur * " + nr + ", C + i * N + n0 + jr, N, rows, ncols - jr < " + nr +
         " ? ncols - jr : " + nr + ", pc == 0);");
  w.close();
}

}  // namespace

// Each thread takes whole tasks: a (batch, n block, m chunk) with its own packed B panel, so
// threads never wait on each other inside the kernel (robust when cores are shared). n blocks
// shrink until there are enough tasks; m chunks split the rows when there still are not.
bool CRenderer::render_matmul(const Program& program, const Kernel& k, CodeWriter& w) const {
  (void)program;
  if (!renders_matmul(k)) return false;
  const MatmulInfo& mm = k.matmul;
  for (const Expr* e : {&mm.a_m, &mm.a_k, &mm.b_k, &mm.b_n}) {
    if (uses_loop_vars(*e, k)) return false;
  }
  Tiles t = tiles_of(k);
  const Loop& nl = k.loops[mm.n_loop];
  std::string mr = std::to_string(t.mr);
  std::string nr = std::to_string(t.nr);
  std::string kc = std::to_string(t.kc);
  std::string ncmax = std::to_string(t.nc);
  std::string b_type = storage_type(mm.b_stored);
  int outer = mm.m_loop - folded_batch_loops(k);
  Expr batches = 1;
  for (int i = 0; i < outer; ++i) batches = batches * k.loops[i].extent;
  w.line("const int64_t M = " + folded_rows(k).to_c() + ";");
  w.line("const int64_t N = " + nl.extent.to_c() + ";");
  w.line("const int64_t K = " + k.reduce[0].extent.to_c() + ";");
  w.line("const int64_t am = " + mm.a_m.to_c() + ", ak = " + mm.a_k.to_c() + ";");
  w.line("const int64_t bk = " + mm.b_k.to_c() + ", bn = " + mm.b_n.to_c() + ";");
  w.line("const int64_t lm_batches = " + batches.to_c() + ";");
  if (renders_gemv(k)) emit_gemv(k, outer, w);
  w.line("int64_t nc = (N + lm_threads - 1) / lm_threads;");
  w.line("nc = (nc + " + nr + " - 1) / " + nr + " * " + nr + ";");
  w.line("if (nc > " + ncmax + ") nc = " + ncmax + ";");
  w.line("const int64_t lm_nblocks = nc > 0 ? (N + nc - 1) / nc : 0;  /* N == 0: no work */");
  w.line("const int64_t lm_outer = lm_batches * lm_nblocks;");
  w.line("const int64_t lm_mtiles = (M + " + mr + " - 1) / " + mr + ";");
  w.line("int64_t lm_mchunks = 1;");
  // Split rows only when the (batch, n block) tasks do not already share out evenly: each
  // task of a split packs the same B panels again.
  w.line("if (lm_outer > 0 && lm_outer % lm_threads != 0 && lm_outer < 2 * lm_threads) "
         "lm_mchunks = (2 * lm_threads + lm_outer - 1) / lm_outer;");
  w.line("if (lm_mchunks > lm_mtiles) lm_mchunks = lm_mtiles > 0 ? lm_mtiles : 1;");
  w.line("const int64_t lm_mrows = (lm_mtiles + lm_mchunks - 1) / lm_mchunks * " + mr + ";");
  std::string team = omp_team(k, "M * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  w.line("char* lm_raw = (char*)malloc(sizeof(float) * " + kc + " * " + ncmax + " + 64);");
  w.line("float* lm_bp = (float*)(((unsigned long)lm_raw + 63) & ~63ul);");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_task = 0; lm_task < lm_outer * lm_mchunks; lm_task++)");
  w.line("const int64_t lm_mc = lm_task % lm_mchunks;");
  w.line("const int64_t lm_jb = (lm_task / lm_mchunks) % lm_nblocks;");
  w.line("const int64_t lm_bt = lm_task / lm_mchunks / lm_nblocks;");
  emit_batch_bases(k, outer, b_type, w);
  w.line("const int64_t n0 = lm_jb * nc;");
  w.line("const int64_t ncols = N - n0 < nc ? N - n0 : nc;");
  w.line("const int64_t m0 = lm_mc * lm_mrows;");
  w.line("const int64_t m1 = m0 + lm_mrows < M ? m0 + lm_mrows : M;");
  w.open("if (K == 0)");
  w.line("for (int64_t i = m0; i < m1; i++) for (int64_t j = 0; j < ncols; j++) "
         "C[i * N + n0 + j] = 0.0f;");
  w.close();
  w.open("for (int64_t pc = 0; pc < K; pc += " + kc + ")");
  w.line("const int64_t kcur = K - pc < " + kc + " ? K - pc : " + kc + ";");
  w.open("for (int64_t jr = 0; jr < ncols; jr += " + nr + ")");
  emit_pack_panel(t, b_type, to_compute(mm.b_stored, "src[j]"),
                  to_compute(mm.b_stored, "src[j * bn]"), w);
  w.close();
  w.open("for (int64_t i = m0; i < m1; i += " + mr + ")");
  emit_row_tile(t, w);
  w.close();
  w.close();
  w.close();
  w.line("free(lm_raw);");
  w.close();
  return true;
}

}  // namespace luminal
