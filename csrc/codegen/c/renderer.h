// CRenderer: LLIR as C for the system compiler. No #include: integer types are typedefs and
// libm functions are declared directly. Output loops run under OpenMP (a team per kernel, as
// its `threads` schedule says: codegen/c/schedule.h); float reductions keep
// 8 partial accumulators so they vectorize; matmul-shaped kernels get a register-blocked
// micro-kernel (c/matmul.cc) and, where their schedule asks, a GEMV path for few rows
// (c/gemv.cc); row kernels loop over each row's reductions (c/row.cc). The entry is
//   void lm_run(void** buffers, const int64_t* dims, int threads).
// A program renders as one translation unit (render) or split for separate, cached compiles
// (render_split): one unit per distinct kernel, named by a hash of its text, plus a driver.
#pragma once

#include <set>

#include "codegen/c/schedule.h"
#include "codegen/c_like.h"

namespace luminal {

// One translation unit of a split program.
struct CUnit {
  std::string name;    // kernels: the function, "lm_k" + 16 hex digits of a hash of its text
  std::string source;  // a whole translation unit
};

// A program split for separate compilation. A kernel unit holds the prelude and one kernel in
// its canonical form (kernel/canonical.h: buffers renumbered from 0, its output then its reads)
// so that its text, and so its name, depends only on the kernel itself: the same kernel in two
// programs (or twice in one) is one unit. Its big helpers (GEMM micro-kernels, GEMV row
// kernels) are units of their own, declared in it (codegen/c/outline.h). The driver declares
// the kernels and defines lm_run, which calls them.
struct CSplitProgram {
  std::vector<CUnit> kernels;  // distinct, in the order of their first call
  std::vector<CUnit> helpers;  // the kernels' big helpers, each in a unit of its own (outline.h)
  CUnit driver;                // name "lm_run" (and lm_step: one kernel alone)
  std::vector<std::string> steps;  // the unit each kernel of the program calls, in order
  std::string text() const;    // the driver, then every kernel unit, for reading
};

class CRenderer : public CLikeRenderer {
 public:
  // For a machine whose vectors hold `vector_width` floats (8 or 16: CpuOptions::vector_width):
  // the default matmul block and reduction lanes follow it.
  explicit CRenderer(int64_t vector_width) : vector_width_(vector_width) {}
  CSplitProgram render_split(const Program& program) const;

 protected:
  std::string prelude(const Program& program) const override;
  std::string kernel_signature(const Program& program, const Kernel& kernel) const override;
  int reduce_lanes(const Kernel& kernel) const override;
  // The partial accumulators of reduction `red` over `loop` in `kernel` (reduce_lanes' rule).
  int lanes_of(const Kernel& kernel, const Value& red, const Loop& loop) const;
  void open_output_loops(const Kernel& kernel, CodeWriter& w) const override;
  // The loop nest, its innermost loop in three parts where the kernel's padding masks are
  // decided (kernel/interior.h): the middle part reads without them, so it vectorizes.
  void emit_loop_nest(const Kernel& kernel, CodeWriter& w) const override;
  std::string program_entry(const Program& program) const override;
  // render_split's lm_run: the calls as data (each kernel's entry and its buffer slots), run
  // by one loop, so the driver's compile does not grow with the program (a 16-layer model's
  // straight-line lm_run took 0.3 s to compile, once per candidate).
  std::string split_entry(const Program& program) const;
  // A kernel unit's entry of the one signature every entry shares (kKernelEntry), which
  // unpacks the buffers by their slots and calls the kernel; `alone` in canonical form.
  std::string kernel_entry(const Program& alone, const Kernel& kernel) const;
  bool render_matmul(const Program& program, const Kernel& kernel, CodeWriter& w) const override;
  // A row kernel (c/row.cc): OpenMP over the rows, each reduction a vectorized loop over the
  // row (as a generic kernel's), then the row's outputs in one vectorized loop.
  bool render_row(const Program& program, const Kernel& kernel, CodeWriter& w) const override;
  // The prefetch of the next row's inputs (the first reduction's loads, the last of `outer`
  // one further) at the block of reduction loop `step`; "" where there is no next row.
  std::string row_prefetch(const Kernel& kernel, const std::vector<Loop>& outer,
                           int step) const;
  std::string math_call(OpKind op, const std::string& x) const override;
  // An attention kernel (c/attention.cc): tiles of query rows over tiles of keys, online
  // softmax.
  bool render_attention(const Program& program, const Kernel& kernel,
                        CodeWriter& w) const override;
  bool render_quant_dot(const Program& program, const Kernel& kernel,
                        CodeWriter& w) const override;

  // The clauses of `kernel`'s "#pragma omp parallel" under its `threads` schedule, `work` its
  // iterations as C: " num_threads(...)" and, by default, " if(work >= ...)"; "" when the
  // kernel runs serially, with no parallel region.
  std::string omp_team(const Kernel& kernel, const std::string& work) const;
  // The "#pragma omp parallel for" of `kernel`'s output loops ("" when it runs serially): it
  // collapses all but the innermost, or all of them where that is short, unless
  // `inner_apart` (a split innermost loop, emit_loop_nest).
  std::string omp_loops_pragma(const Kernel& kernel, bool inner_apart) const;
  // What `kernel` is built with on this renderer's machine (c/schedule.h cpu_schedule).
  CpuSchedule schedule_of(const Kernel& kernel) const;

 private:
  // Vector typedefs, micro-kernels and GEMV row kernels of the program's matmuls ("" if none).
  std::string matmul_prelude(const Program& program) const;
  // The GEMV helpers of matmul kernel `k` whose names `seen` lacks (c/gemv.cc); adds them.
  std::string gemv_prelude(const Kernel& k, std::set<std::string>& seen) const;
  // The GEMV path of matmul kernel `k` (c/gemv.cc): "if (M <= gemv_rows) { ... return; }",
  // after render_matmul's M, N, K, strides and lm_batches; the first `outer` loops are batches.
  void emit_gemv(const Kernel& k, int outer, CodeWriter& w) const;
  // The rows of the GEMV's A into its copy lm_x (c/gemv.cc): read, or computed.
  void emit_x_copy(const Kernel& k, int outer, CodeWriter& w) const;
  // The quantized GEMV (c/quant.cc) of a kernel renders_quant_gemv takes: its row kernels
  // whose names `seen` lacks, and the kernel body after render_matmul's sizes (every M).
  std::string quant_gemv_prelude(const Kernel& k, std::set<std::string>& seen) const;
  void emit_quant_gemv(const Kernel& k, int outer, CodeWriter& w) const;
  // The integer dot products of a kernel with quantized activations (MatmulInfo::a_q8_0,
  // c/quant_int8.cc): the helpers whose names `seen` lacks, and the kernel.
  std::string quant_int8_prelude(const Kernel& k, std::set<std::string>& seen) const;
  // The int8 GEMM of a kernel that takes_int8_gemm (c/quant_int8_gemm.cc), inside its wide
  // path: x's rows quantized at lm_xq (lm_xbytes apart, bytes q + 128), M, N, K and lm_ldw set.
  void emit_int8_gemm(const Kernel& k, CodeWriter& w) const;
  // The GEMM of matmul kernel `k` that takes_gemm, after render_matmul's sizes: threads over
  // (batch, n block, m chunk) tasks, B packed (or dequantized) into panels; A read from
  // `a_base` where given (emit_batch_bases).
  void emit_gemm(const Kernel& k, int outer, const std::string& a_base, CodeWriter& w) const;
  // The Winograd convolution of matmul kernel `k` (MatmulInfo::winograd, c/winograd.cc): the
  // whole kernel body.
  void emit_winograd(const Kernel& k, CodeWriter& w) const;
  // The epilogue of matmul kernel `k` (MatmulInfo::epilogue_from) over the summed elements
  // C[row, col] of rows [rows_from, rows_to) and columns [cols_from, cols_to), in place
  // (c/matmul.cc); nothing when `k` has none. The first `outer` loops are batches.
  void emit_matmul_epilogue(const Kernel& k, int outer, const std::string& rows_from,
                            const std::string& rows_to, const std::string& cols_from,
                            const std::string& cols_to, CodeWriter& w) const;

  // A computed in matmul kernel `k` (MatmulInfo::a_computed, c/prologue.cc), at the row the
  // loop variables name. emit_prologue_stats: the row's statistics (a_rows) into `stats`[j];
  // emit_prologue_row: its elements k_first + lm_kk for lm_kk < `count` into `dst` (an lvalue
  // of lm_kk), its statistics read from `stats`.
  void emit_prologue_stats(const Kernel& k, const std::string& stats, CodeWriter& w) const;
  void emit_prologue_row(const Kernel& k, const std::string& stats, const std::string& k_first,
                         const std::string& count, const std::string& dst, CodeWriter& w) const;

  // Row kernel `k`'s online loop (kernel/row_kernel.h match_online): its max and sum in one
  // vectorized loop with partial (max, sum) pairs (c/row.cc).
  void emit_online_loop(const Kernel& k, CodeWriter& w, const std::string& per_block) const;
  // The values of attention kernel `k` that compute `from` from `stops` (declared already).
  void emit_attention_cone(const Kernel& k, ValueId from, const std::set<ValueId>& stops,
                           CodeWriter& w) const;
  // Attention kernel `k`'s bias over the tile into lm_b, and the skip of a tile it masks.
  void emit_attention_bias(const Kernel& k, CodeWriter& w) const;
  // The tile's keys, transposed, into lm_kt and its values into lm_v (past the end 0).
  void emit_attention_gather(const Kernel& k, CodeWriter& w) const;
  // Per query row of the tile: its scores from the dots in lm_s, then the online softmax (the
  // new max and shift, the weights into lm_s, the sum and the output rescaled).
  void emit_attention_rows(const Kernel& k, CodeWriter& w) const;
  // out[r][c] = init[r][c] (or 0) + sum_e a[r][e] * b[e][c] for rows r < lm_nq (in blocks of
  // 4: the arrays hold whole blocks) and columns c < cols (a multiple of the block), in
  // register blocks.
  void emit_attention_block_product(CodeWriter& w, const std::string& out,
                                    const std::string& init, const std::string& a,
                                    const std::string& b, const std::string& inner,
                                    int64_t cols) const;

  int64_t vector_width_;  // floats per vector of the machine built for
  bool split_ = false;    // kernels are linked from other units (hidden), not static
};

}  // namespace luminal
