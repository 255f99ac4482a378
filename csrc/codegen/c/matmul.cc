// The C renderer's matmul: C[m, n] = sum_k A[m, k] * B[k, n] per batch, as a packed,
// register-blocked GEMM. B is packed per (k block, n block) into panels tile_n wide (a 16-bit B
// widened as it is packed, from its storage), or, for a parameter under pack_b, read from the
// panels CpuRuntime laid out once (PackedPanels, in B's storage dtype, widened as the
// micro-kernel loads them); a tile_m x tile_n block of C lives in vector registers (GCC vector
// extensions) while k runs. Work is split over (batch, n block, m chunk) tasks across OpenMP
// threads. A kernel with gemv_rows set first tests M and, for few rows, takes the GEMV path of
// c/gemv.cc instead, unless it reads packed panels. A matmul's epilogue (kernel/epilogue.h)
// runs over each block of rows once its last k block is summed, while the block is in cache,
// writing its result over the sum in C (so the result is f32, as C).
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "codegen/c/renderer.h"
#include "codegen/c/matmul.h"
#include "codegen/planted_fault.h"
#include "codegen/c/quant.h"
#include "codegen/c/schedule.h"
#include "kernel/quant_row_groups.h"

namespace luminal {

namespace {

// The kernel's CpuSchedule (c/schedule.h) in the micro-kernel's terms.
struct Tiles {
  int64_t mr = 0;  // rows of the register block
  int64_t nr = 0;  // columns of the register block
  int64_t vw = 0;  // floats per vector
  int64_t kc = 0;  // depth of a packed k block
  int64_t nc = 0;  // columns of a packed n block (a multiple of nr)
  int64_t sets = 1;  // sets of accumulators that alternate k steps: 2 for a block of few
                     // vectors (a few rows of the runtime's panels), whose FMA chains would
                     // otherwise wait out the FMA latency
  int64_t cols = 0;  // columns the micro-kernel computes, a multiple of vw below nr (the last
                     // panel of a block narrower than nr: its columns past them are padding);
                     // 0: all nr
  int64_t computed() const { return cols > 0 ? cols : nr; }
};

Tiles tiles_of(const Kernel& k, int64_t native) {
  CpuSchedule s = cpu_schedule(k, native);
  Tiles t;
  t.vw = s.vector_width;
  t.mr = s.tile_m;
  t.nr = s.tile_n;
  if (t.nr % t.vw != 0) t.nr = t.vw * 2;
  t.kc = s.tile_k;
  if (is_quantized(k.matmul.b_stored)) {  // a k block of whole quantized blocks
    const int64_t block = block_values(k.matmul.b_stored);
    t.kc = (t.kc + block - 1) / block * block;
  }
  if (takes_bf16_dot(k, native)) t.kc += t.kc % 2;  // whole pairs of k
  if (takes_amx(k, native)) {  // AMX's block (c/amx.cc), k blocks of whole steps
    t.mr = 32;
    t.nr = 32;
    t.kc = (t.kc + 31) / 32 * 32;
  }
  t.nc = (256 + t.nr - 1) / t.nr * t.nr;
  return t;
}

// "lm_mm_6x16_v8"; a micro-kernel reading 16-bit panels has the dtype after it.
std::string micro_name(const Tiles& t, DType panel) {
  std::string name = "lm_mm_" + std::to_string(t.mr) + "x" + std::to_string(t.nr) + "_v" +
                     std::to_string(t.vw);
  if (t.sets > 1) name += "_s" + std::to_string(t.sets);
  if (t.computed() < t.nr) name += "_c" + std::to_string(t.computed());
  return panel == DType::F32 ? name : name + "_" + dtype_name(panel);
}

// The tiles of the micro-kernel that computes the first `cols` columns of `t`'s panels.
Tiles panel_cols(const Tiles& t, int64_t cols) {
  Tiles part = t;
  part.cols = cols;
  return part;
}

// The tiles of the micro-kernel that runs `rows` rows of the runtime's panels under `t`.
Tiles panel_rows(const Tiles& t, int64_t rows) {
  Tiles part = t;
  part.mr = rows;
  part.sets = rows * (t.nr / t.vw) < 8 ? 2 : 1;
  return part;
}

// "lm_vh8u": an unaligned vector of `width` 16-bit words, and its typedef.
std::string half_words(int64_t width) { return "lm_vh" + std::to_string(width) + "u"; }

std::string half_words_typedef(int64_t width) {
  return "typedef unsigned short " + half_words(width) + " __attribute__((vector_size(" +
         std::to_string(width * 2) + "), aligned(2), may_alias));\n";
}

// The vector of `width` floats at `at`, a pointer into panels of dtype `panel`.
std::string panel_load(DType panel, int64_t width, const std::string& at) {
  const std::string v = float_vector(width);
  if (panel == DType::F32) return "*(const " + v + "u*)(" + at + ")";
  if (panel == DType::F16) return f16_load_name(width) + "(" + at + ")";
  return "(" + v + ")(__builtin_convertvector(*(const " + half_words(width) + "*)(" + at +
         "), " + lane_vector(width) + ") << 16)";
}

std::string vec_type(const Tiles& t) { return float_vector(t.vw); }

// The micro-kernel: c[0:mr, 0:nr] (+)= a[0:mr, 0:kc] * bp[0:kc, 0:NR] (bp packed, NR wide,
// of dtype `panel`: f32 as the kernel packs it, or a parameter's 16-bit storage).
std::string micro_kernel(const Tiles& t, DType panel) {
  CodeWriter w;
  std::string v = vec_type(t);
  int64_t nv = t.computed() / t.vw;
  std::string panel_type = panel == DType::F32 ? "float" : "uint16_t";
  w.open("static inline void " + micro_name(t, panel) +
         "(int64_t kc, const float* restrict a, int64_t am, int64_t ak, const " + panel_type +
         "* restrict bp, float* restrict c, int64_t ldc, int64_t mr, int64_t nr, int first)");
  for (int64_t r = 0; r < t.mr; ++r) {
    std::string rs = std::to_string(r);
    w.line("const float* restrict a" + rs + " = a + (" + rs + " < mr ? " + rs + " : mr - 1) * am;");
  }
  for (int64_t r = 0; r < t.mr; ++r) {
    for (int64_t j = 0; j < nv; ++j) {
      w.line(v + " c" + std::to_string(r) + "_" + std::to_string(j) + " = {0};");
    }
  }
  // One k step `k` into the accumulators named `acc` ("c", or "d" for the second set).
  auto step = [&](const std::string& k, const std::string& acc) {
    for (int64_t j = 0; j < nv; ++j) {
      std::string at = "bp + " + k + " * " + std::to_string(t.nr) + " + " +
                       std::to_string(j * t.vw);
      w.line(v + " b" + std::to_string(j) + " = " + panel_load(panel, t.vw, at) + ";");
    }
    for (int64_t r = 0; r < t.mr; ++r) {
      std::string rs = std::to_string(r);
      w.line("const float s" + rs + " = a" + rs + "[" + k + " * ak];");
      std::string splat;
      for (int64_t l = 0; l < t.vw; ++l) splat += (l ? ", s" : "s") + rs;
      w.line(v + " x" + rs + " = {" + splat + "};");
      for (int64_t j = 0; j < nv; ++j) {
        w.line(acc + rs + "_" + std::to_string(j) + " += x" + rs + " * b" + std::to_string(j) +
               ";");
      }
    }
  };
  if (t.sets == 1) {
    w.open("for (int64_t k = 0; k < kc; k++)");
    step("k", "c");
    w.close();
  } else {
    for (int64_t r = 0; r < t.mr; ++r) {
      for (int64_t j = 0; j < nv; ++j) {
        w.line(v + " d" + std::to_string(r) + "_" + std::to_string(j) + " = {0};");
      }
    }
    w.line("int64_t k = 0;");
    w.open("for (; k + 1 < kc; k += 2)");
    w.open("");
    step("k", "c");
    w.close();
    w.open("");
    step("(k + 1)", "d");
    w.close();
    w.close();
    w.open("if (k < kc)");
    step("k", "c");
    w.close();
    for (int64_t r = 0; r < t.mr; ++r) {
      for (int64_t j = 0; j < nv; ++j) {
        std::string rj = std::to_string(r) + "_" + std::to_string(j);
        w.line("c" + rj + " += d" + rj + ";");
      }
    }
  }
  emit_block_store(t.mr, t.computed(), t.vw, "mr", "nr", w);
  w.close();
  return w.str();
}

// Whether B read transposed (its k contiguous, stride 1, its n not: a Linear's weight (n, k))
// takes the pack helper of transposed_pack_name, given the GEMM packs B as plain floats (no
// runtime panels, bf16 dot pairs, quantized tiles or windows: emit_gemm's other packs).
bool packs_transposed(const MatmulInfo& mm) {
  return is_const(mm.b_k, 1) && !is_const(mm.b_n, 1);
}

std::string transposed_pack_name(const Tiles& t, DType stored) {
  return "lm_mm_pack_t_" + std::string(dtype_name(stored)) + "_" + std::to_string(t.nr) + "x" +
         std::to_string(t.vw);
}

// static inline void lm_mm_pack_t_bf16_64x16(const uint16_t* src, int64_t bn, int64_t kcur,
// int64_t wcols, float* panel): the panel of B's columns src, src + bn, ... (wcols of them, k
// contiguous in each), vw columns at a time, each a stream along k, each panel row's vw
// floats stored as one vector. A k row at a time, every element a load from a row of its
// own, a 2048 x 8192 bf16 weight's pack took 46 ms against 10 (at 21 rows the GEMM's pack was
// six times its FMAs). The vector is built lane by lane: left to vectorize the loop itself,
// the compiler took 1.1 s over it (8 ms its pack) against 0.05.
std::string transposed_pack_function(const Tiles& t, DType stored, const std::string& type,
                                     const std::string& element) {
  const std::string nr = std::to_string(t.nr);
  const std::string vw = std::to_string(t.vw);
  CodeWriter w;
  w.open("static inline void " + transposed_pack_name(t, stored) + "(const " +
         type + "* restrict src, int64_t bn, int64_t kcur, int64_t wcols, "
         "float* restrict panel)");
  const std::string vec = vec_type(t);  // its typedefs precede it in the prelude
  w.open("for (int64_t j0 = 0; j0 < " + nr + "; j0 += " + vw + ")");
  w.line("const " + type + "* restrict s = src + j0 * bn;");
  w.open("for (int64_t kk = 0; kk < kcur; kk++)");
  w.line(vec + " v;");
  w.line("for (int64_t j = 0; j < " + vw + "; j++) v[j] = j0 + j < wcols ? " + element +
         " : 0.0f;");
  w.line("*(" + vec + "u*)(panel + kk * " + nr + " + j0) = v;");
  w.close();
  w.close();
  w.close();
  return w.str();
}

}  // namespace

GemmBlock gemm_block(const Kernel& k, int64_t native) {
  const Tiles t = tiles_of(k, native);
  return GemmBlock{t.mr, t.nr, t.vw, micro_name(t, DType::F32)};
}

std::string CRenderer::matmul_prelude(const Program& program) const {
  std::set<int64_t> widths;
  std::set<std::string> seen;  // names of the micro-kernels and helpers emitted so far
  std::string s;
  for (const Kernel& k : program.kernels) {
    if (k.matmul.present && k.matmul.a_q8_0) s += quant_int8_prelude(k, seen);
    if (!renders_matmul(k, vector_width_)) continue;
    Tiles t = tiles_of(k, vector_width_);
    if (widths.insert(t.vw).second) s += float_vector_typedefs(t.vw);
    if (renders_quant_gemv(k, vector_width_)) {
      const DType stored = k.matmul.b_stored;
      s += quant_gemv_prelude(k, seen);  // the tile reads the GEMV's helpers of width vw
      if (seen.insert(quant_tile_name(stored, t.vw)).second) {
        s += quant_tile_function(stored, t.vw);
      }
    }
    if (takes_bf16_dot(k, vector_width_)) {
      const bool amx = takes_amx(k, vector_width_);
      if (amx) s += amx_prelude(seen);  // and its few rows' kernels (kAmxFewRows)
      s += bf16_dot_prelude(amx ? kAmxFewRows : t.mr, t.nr, seen);
      if (renders_gemv(k) && !k.panels) s += gemv_prelude(k, seen);
      continue;
    }
    const std::optional<PackedPanels>& panels = k.panels;
    if (!panels || panels->row_groups) {  // row groups: the int8 kernels' (quant_int8_prelude)
      for (int64_t cols = t.vw; cols <= t.nr; cols += t.vw) {  // the last panel's columns
        const Tiles part = panel_cols(t, cols);
        if (seen.insert(micro_name(part, DType::F32)).second) s += micro_kernel(part, DType::F32);
      }
      const bool plain_pack = !panels && !renders_quant_gemv(k, vector_width_) &&
                              !k.matmul.b_window && packs_transposed(k.matmul);
      if (plain_pack && seen.insert(transposed_pack_name(t, k.matmul.b_stored)).second) {
        const DType stored = k.matmul.b_stored;
        s += transposed_pack_function(t, stored, storage_type(stored),
                                      to_compute(stored, "s[j * bn + kk]"));
      }
      if (renders_gemv(k)) s += gemv_prelude(k, seen);
      continue;
    }
    // Panels: a micro-kernel for every row count up to tile_m, so that few rows (decode) do
    // not run a whole block.
    DType panel = panels->stored;
    if (panel != DType::F32 && seen.insert(lane_vector(t.vw)).second) {
      s += lane_vector_typedefs(t.vw);
    }
    if (panel == DType::BF16 && seen.insert(half_words(t.vw)).second) {
      s += half_words_typedef(t.vw);
    }
    if (panel == DType::F16 && seen.insert(f16_load_name(t.vw)).second) {
      s += f16_load_function(t.vw);
    }
    for (int64_t rows = t.mr; rows >= 1; --rows) {
      Tiles part = panel_rows(t, rows);
      if (seen.insert(micro_name(part, panel)).second) s += micro_kernel(part, panel);
    }
  }
  return s;
}

std::optional<PackedPanels> gemm_panels(const Kernel& k, int64_t native) {
  const CpuSchedule schedule = cpu_schedule(k, native);
  const MatmulInfo& mm = k.matmul;
  // a quantized weight: in row groups (quant_rows), else packed as the GEMM runs
  const bool groups = schedule.quant_rows == kGroupRows && takes_int8_gemm(k, native) &&
                      has_row_groups(mm.b_stored) && is_one(mm.b_k);
  if ((is_quantized(mm.b_stored) && !groups) || mm.b_window) return std::nullopt;
  if ((!groups && schedule.pack_b != 1) || !takes_gemm(k, native)) return std::nullopt;
  const Value& b = k.values[mm.b];
  if (b.buffer == k.values[mm.a].buffer) return std::nullopt;
  for (int i = 0; i < mm.m_loop; ++i) {
    std::optional<Expr> stride = affine_stride(b.index, k.loops[i].var);
    if (!stride || !is_zero(*stride)) return std::nullopt;
  }
  std::map<std::string, Expr> zero = {
      {k.loops[mm.m_loop].var, 0}, {k.loops[mm.n_loop].var, 0}, {"r0", 0}};
  for (int i = 0; i < mm.m_loop; ++i) zero[k.loops[i].var] = 0;
  std::optional<int64_t> offset = b.index.substitute(zero).try_const();
  std::optional<int64_t> depth = k.reduce.back().extent.try_const();
  std::optional<int64_t> columns = k.loops[mm.n_loop].extent.try_const();
  std::optional<int64_t> b_k = mm.b_k.try_const();
  std::optional<int64_t> b_n = mm.b_n.try_const();
  if (!offset || !depth || !columns || !b_k || !b_n) return std::nullopt;
  PackedPanels p;
  p.stored = mm.b_stored;
  p.k = *depth;
  p.n = *columns;
  p.offset = *offset;
  p.b_k = *b_k;
  p.b_n = *b_n;
  if (groups) {
    p.width = kGroupRows;
    p.row_groups = true;
    return p;
  }
  const Tiles t = tiles_of(k, native);
  p.width = t.nr;
  p.depth = t.kc;
  p.pairs = takes_bf16_dot(k, native);  // the bf16 dot products' panels of k pairs
  return p;
}

namespace {

// Packs B[pc:pc+kcur, n0+jr : n0+jr+nr] into its panel, zero-padded to nr columns; `element`
// reads src[j], `strided` src[j * bn], each as f32. B read transposed (its k contiguous, a
// Linear's weight) calls the pack helper of transposed_pack_name instead.
void emit_pack_panel(const Tiles& t, const MatmulInfo& mm, const std::string& b_type,
                     const std::string& element, const std::string& strided, CodeWriter& w) {
  std::string nr = std::to_string(t.nr);
  w.line("float* restrict panel = lm_bp + (jr / " + nr + ") * kcur * " + nr + ";");
  w.line("const int64_t wcols = ncols - jr < " + nr + " ? ncols - jr : " + nr + ";");
  if (packs_transposed(mm)) {
    w.line(transposed_pack_name(t, mm.b_stored) + "(B + pc + (n0 + jr) * bn, bn, kcur, wcols, "
           "panel);");
    return;
  }
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

// Calls the function `name(c)` names, with `args`, for the run-time value c of `var`, from
// `most` down to 1: an if / else-if chain whose last case (1) is not tested.
void emit_dispatch(const std::string& var, int64_t most,
                   const std::function<std::string(int64_t)>& name, const std::string& args,
                   CodeWriter& w) {
  for (int64_t c = most; c > 1; --c) {
    w.line(std::string(c == most ? "if" : "else if") + " (" + var + " == " + std::to_string(c) +
           ") " + name(c) + args);
  }
  w.line(std::string(most > 1 ? "else " : "") + name(1) + args);
}

// Runs the micro-kernel over rows [i, i + rows) and every panel of the n block: the panel
// this task packed, or (`panel` set) the runtime's panels of that dtype, through the
// micro-kernel of exactly `rows` rows. `a_args`: the micro-kernel's a, am and ak.
// `dot`: the bf16 GEMM's micro-kernels (c/bf16_dot.cc) on the pairs this task packed, or
// with `amx` its one micro-kernel on AMX tiles (c/amx.cc).
void emit_row_tile(const Tiles& t, std::optional<DType> panel, const std::string& a_args,
                   bool dot, bool amx, CodeWriter& w) {
  std::string mr = std::to_string(t.mr);
  std::string nr = std::to_string(t.nr);
  w.line("const int64_t rows = m1 - i < " + mr + " ? m1 - i : " + mr + ";");
  w.open("for (int64_t jr = 0; jr < ncols; jr += " + nr + ")");
  std::string bp = "lm_bp + (jr / " + nr + ") * kcur * " + nr;
  if (panel) bp = "lm_panels + pc * lm_padded_n + (n0 + jr) / " + nr + " * kcur * " + nr;
  if (dot) {
    bp = (panel ? "lm_panels32 + pc / 2 * lm_padded_n + (n0 + jr) / " + nr
                : "lm_bp32 + jr / " + nr) + " * ((kcur + 1) / 2) * " + nr;
  }
  std::string args = "(kcur, " + a_args + ", " + bp + ", C + i * N + n0 + jr, N, rows, " +
                     "ncols - jr < " + nr + " ? ncols - jr : " + nr + ", pc == 0);";
  if (amx) {
    // few rows (a decode step): the bf16 dot products' micro-kernel of exactly that many rows
    // on the same pair panels, where a block of tiles computes 32 rows however few are real
    w.open("if (rows <= " + std::to_string(kAmxFewRows) + ")");
    emit_dispatch("rows", kAmxFewRows, [&](int64_t rows) { return bf16_dot_name(rows, t.nr); },
                  args, w);
    w.close();
    w.line("else " + amx_micro_kernel_name() + args);
  } else if (dot) {
    emit_dispatch("rows", t.mr, [&](int64_t rows) { return bf16_dot_name(rows, t.nr); }, args,
                  w);
  } else if (!panel) {
    // a panel's vectors that hold columns of C: the last panel of a block may need fewer
    w.line("const int64_t lm_vecs = ncols - jr < " + nr + " ? (ncols - jr + " +
           std::to_string(t.vw - 1) + ") / " + std::to_string(t.vw) + " : " +
           std::to_string(t.nr / t.vw) + ";");
    emit_dispatch("lm_vecs", t.nr / t.vw, [&](int64_t vecs) {
      return micro_name(panel_cols(t, vecs * t.vw), DType::F32);
    }, args, w);
  } else {
    emit_dispatch("rows", t.mr, [&](int64_t rows) {
      return micro_name(panel_rows(t, rows), *panel);
    }, args, w);
  }
  w.close();
}

}  // namespace

void emit_gemm_tasks(int64_t mr, int64_t nr, int64_t ncmax, int64_t align, CodeWriter& w) {
  const std::string m = std::to_string(mr);
  const std::string n = std::to_string(nr);
  const std::string a = std::to_string(align);
  // As few blocks as ncmax allows, as many as the threads where each is still 2 panels wide
  // (784 columns over 2 threads: 4 blocks of 208, not 3 of 256 and one of 16); each block a
  // multiple of `align` columns.
  w.line("int64_t lm_nb = (N + " + std::to_string(ncmax - 1) + ") / " + std::to_string(ncmax) +
         ";");
  w.line("const int64_t lm_nbt = (lm_nb + lm_threads - 1) / lm_threads * lm_threads;");
  w.line("if (lm_nbt > 0 && (N + lm_nbt - 1) / lm_nbt >= 2 * " + n + ") lm_nb = lm_nbt;");
  w.line("int64_t nc = lm_nb > 0 ? (N + lm_nb - 1) / lm_nb : 0;");
  w.line("nc = (nc + " + a + " - 1) / " + a + " * " + a + ";");
  w.line("const int64_t lm_nblocks = nc > 0 ? (N + nc - 1) / nc : 0;  /* N == 0: no work */");
  w.line("const int64_t lm_outer = lm_batches * lm_nblocks;");
  w.line("const int64_t lm_mtiles = (M + " + m + " - 1) / " + m + ";");
  w.line("int64_t lm_mchunks = 1;");
  // Split rows only when the (batch, n block) tasks do not already share out evenly: each
  // task of a split packs the same B panels again.
  w.line("if (lm_outer > 0 && lm_outer % lm_threads != 0 && lm_outer < 2 * lm_threads) "
         "lm_mchunks = (2 * lm_threads + lm_outer - 1) / lm_outer;");
  w.line("if (lm_mchunks > lm_mtiles) lm_mchunks = lm_mtiles > 0 ? lm_mtiles : 1;");
  w.line("const int64_t lm_mrows = (lm_mtiles + lm_mchunks - 1) / lm_mchunks * " + m + ";");
}

void open_gemm_task_loop(CodeWriter& w) {
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t lm_task = 0; lm_task < lm_outer * lm_mchunks; lm_task++)");
  w.line("const int64_t lm_mc = lm_task % lm_mchunks;");
  w.line("const int64_t lm_jb = (lm_task / lm_mchunks) % lm_nblocks;");
  w.line("const int64_t lm_bt = lm_task / lm_mchunks / lm_nblocks;");
}

void emit_gemm_task_bounds(CodeWriter& w) {
  w.line("const int64_t n0 = lm_jb * nc;");
  w.line("const int64_t ncols = N - n0 < nc ? N - n0 : nc;");
  w.line("const int64_t m0 = lm_mc * lm_mrows;");
  w.line("const int64_t m1 = m0 + lm_mrows < M ? m0 + lm_mrows : M;");
}

void CRenderer::emit_matmul_epilogue(const Kernel& k, int outer, const std::string& rows_from,
                                     const std::string& rows_to, const std::string& cols_from,
                                     const std::string& cols_to, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  if (mm.epilogue_from < 0) return;
  w.open("for (int64_t lm_er = " + rows_from + "; lm_er < " + rows_to + "; lm_er++)");
  emit_row_vars(k, outer, "lm_er", w);
  w.line("float* restrict lm_crow = C + lm_er * N;");
  w.open("for (int64_t " + k.loops[mm.n_loop].var + " = " + cols_from + "; " +
         k.loops[mm.n_loop].var + " < " + cols_to + "; " + k.loops[mm.n_loop].var + "++)");
  emit_epilogue(k, "lm_crow[" + k.loops[mm.n_loop].var + "]", w);
  w.line("lm_crow[" + k.loops[mm.n_loop].var + "] = " +
         value_name(static_cast<ValueId>(k.values.size()) - 1) + ";");
  w.close();
  w.close();
}

// Each thread takes whole tasks: a (batch, n block, m chunk) with its own packed B panel, so
// threads never wait on each other inside the kernel (robust when cores are shared). n blocks
// shrink until there are enough tasks; m chunks split the rows when there still are not.
bool CRenderer::render_matmul(const Program& program, const Kernel& k, CodeWriter& w) const {
  (void)program;
  const MatmulInfo& mm = k.matmul;
  const int outer = mm.m_loop - folded_batch_loops(k);
  if (!takes_gemm(k, vector_width_)) return false;
  if (mm.winograd) {
    emit_winograd(k, w);
    return true;
  }
  emit_matmul_sizes(k, outer, w);
  // few rows; else on to the GEMM
  if (renders_quant_gemv(k, vector_width_)) emit_quant_gemv(k, outer, w);
  if (renders_gemv(k) && !k.panels) emit_gemv(k, outer, w);
  if (mm.a_widened && !takes_bf16_dot(k, vector_width_)) {
    // A's 16-bit words widened once into f32, in A's layout, for the f32 GEMM to read
    w.line("const int64_t lm_xan = M > 0 && K > 0 ? (M - 1) * am + (K - 1) * ak + 1 : 1;");
    w.line("float* lm_xa = (float*)malloc(sizeof(float) * lm_xan);");
    w.open("");
    emit_batch_bases(k, outer, storage_type(mm.b_stored), w);
    w.line("(void)B;");
    w.line("(void)C;");
    w.line("for (int64_t i = 0; i < M; i++) for (int64_t kk = 0; kk < K; kk++) "
           "lm_xa[i * am + kk * ak] = " + to_compute(mm.a_stored, "A[i * am + kk * ak]") + ";");
    w.close();
    emit_gemm(k, outer, "lm_xa", w);
    w.line("free(lm_xa);");
    return true;
  }
  emit_gemm(k, outer, "", w);
  return true;
}

void CRenderer::emit_gemm(const Kernel& k, int outer, const std::string& a_base,
                          CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  const std::optional<PackedPanels>& panels = k.panels;
  Tiles t = tiles_of(k, vector_width_);
  std::string mr = std::to_string(t.mr);
  std::string nr = std::to_string(t.nr);
  std::string kc = std::to_string(t.kc);
  std::string ncmax = std::to_string(t.nc);
  std::string b_type = storage_type(mm.b_stored);
  const bool quantized = renders_quant_gemv(k, vector_width_);
  const bool dot = takes_bf16_dot(k, vector_width_);
  const bool amx = takes_amx(k, vector_width_);
  // a block starts on a panel of the runtime's (panels), else on a vector
  emit_gemm_tasks(t.mr, t.nr, t.nc, panels || dot || quantized ? t.nr : t.vw, w);
  std::string team = omp_team(k, "M * N * K");
  if (!team.empty()) w.line("#pragma omp parallel" + team);
  w.open("");
  if (amx) w.line("lm_amx_on();  /* this thread's tiles */");
  if (!panels) {
    w.line("char* lm_raw = (char*)malloc(sizeof(float) * " + kc + " * " + ncmax + " + 64);");
    w.line(dot ? "uint32_t* lm_bp32 = (uint32_t*)(((unsigned long)lm_raw + 63) & ~63ul);"
               : "float* lm_bp = (float*)(((unsigned long)lm_raw + 63) & ~63ul);");
  }
  const std::string stats = std::to_string(mm.a_rows.size());  // a computed A's, per row
  if (mm.a_computed) {
    // A's packed tile (tile_m rows of one k block) and its rows' statistics (c/prologue.cc)
    w.line("float* lm_ap = (float*)malloc(sizeof(float) * " + mr + " * " + kc + ");");
    w.line("float* lm_rs = (float*)malloc(sizeof(float) * (lm_mrows * " + stats + " + 1));");
  }
  open_gemm_task_loop(w);
  emit_batch_bases(k, outer, b_type, w, a_base);
  if (panels) {
    if (dot) {  // words of two bf16 (c/bf16_dot.cc)
      w.line("const uint32_t* restrict lm_panels32 = (const uint32_t*)" +
             CLikeRenderer::buffer_name(k.values[mm.b].buffer) + ";");
    } else {
      w.line("const " + b_type + "* restrict lm_panels = " +
             CLikeRenderer::buffer_name(k.values[mm.b].buffer) + ";");
    }
    w.line("(void)B;");
    w.line("const int64_t lm_padded_n = (N + " + nr + " - 1) / " + nr + " * " + nr + ";");
  }
  emit_gemm_task_bounds(w);
  if (mm.a_computed && !mm.a_rows.empty()) {
    w.open("for (int64_t lm_er = m0; lm_er < m1; lm_er++)");
    emit_row_vars(k, outer, "lm_er", w);
    emit_prologue_stats(k, "(lm_rs + (lm_er - m0) * " + stats + ")", w);
    w.close();
  }
  w.open("if (K == 0)");
  w.line("for (int64_t i = m0; i < m1; i++) for (int64_t j = 0; j < ncols; j++) "
         "C[i * N + n0 + j] = 0.0f;");
  emit_matmul_epilogue(k, outer, "m0", "m1", "n0", "n0 + ncols", w);
  w.close();
  w.open("for (int64_t pc = 0; pc < K; pc += " + kc + ")");
  w.line("const int64_t kcur = K - pc < " + kc + " ? K - pc : " + kc + ";");
  if (!panels) {
    w.open("for (int64_t jr = 0; jr < ncols; jr += " + nr + ")");
    if (dot) {
      emit_bf16_pack_panel(t.nr, w);
    } else if (quantized) {
      emit_quant_pack_panel(mm.b_stored, t.vw, t.nr, w);
    } else if (mm.b_window) {
      emit_window_pack_panel(k, outer, t.nr, w);
    } else {
      emit_pack_panel(t, mm, b_type, to_compute(mm.b_stored, "src[j]"),
                      to_compute(mm.b_stored, "src[j * bn]"), w);
    }
    w.close();
  }
  w.open("for (int64_t i = m0; i < m1; i += " + mr + ")");
  std::optional<DType> panel_dtype;
  if (panels) panel_dtype = panels->stored;
  std::string a_args = "A + i * am + pc * ak, am, ak";
  if (mm.a_computed) {
    // the tile of A's rows [i, i + mr) and this k block, computed as it is packed
    w.open("for (int64_t lm_pr = 0; lm_pr < " + mr + " && i + lm_pr < m1; lm_pr++)");
    w.line("const int64_t lm_er = i + lm_pr;");
    emit_row_vars(k, outer, "lm_er", w);
    emit_prologue_row(k, "(lm_rs + (lm_er - m0) * " + stats + ")", "pc", "kcur",
                      "lm_ap[lm_pr * " + kc + " + lm_kk]", w);
    w.close();
    a_args = "lm_ap, " + kc + ", 1";
  }
  emit_row_tile(t, panel_dtype, a_args, dot, amx, w);
  if (mm.epilogue_from >= 0) {
    // The rows' sums are complete after the last k block: their epilogue, while in cache.
    w.open("if (pc + kcur == K)");
    emit_matmul_epilogue(k, outer, "i", "i + rows", "n0", "n0 + ncols", w);
    w.close();
  }
  w.close();
  w.close();
  if (planted_fault() == PlantedFault::kGemm) {
    w.line("if (m0 == 0 && n0 == 0) C[0] += 1.0f;  /* planted fault */");
  }
  w.close();
  if (!panels) w.line("free(lm_raw);");
  if (mm.a_computed) {
    w.line("free(lm_ap);");
    w.line("free(lm_rs);");
  }
  if (amx) w.line("lm_amx_off();");
  w.close();
}

}  // namespace luminal
