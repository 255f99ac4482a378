// What the C renderer's two matmul paths share: the packed GEMM (c/matmul.cc) and the GEMV
// for few rows (c/gemv.cc), both emitted by CRenderer::render_matmul into one kernel that picks
// its path at run time. Vector types, the folding of batch loops into rows, the operand base
// pointers of one batch, and the panels a GEMM would read a parameter B from. Not the paths
// themselves, the schedule (c/schedule.h), nor which parameters are panels
// (kernel/weight_layout.h).
#pragma once

#include <optional>
#include <set>
#include <string>

#include "codegen/c_like.h"
#include "kernel/kernel.h"

namespace luminal {

// "lm_vf8": the type of a vector of `width` floats; "lm_vf8u" is its unaligned twin.
std::string float_vector(int64_t width);
// The typedefs of both, once per width in a prelude.
std::string float_vector_typedefs(int64_t width);

// How many batch loops just outside m fold into m: those along which B does not move and A
// and C advance by exactly one block of rows (a Linear over (batch, seq, dim) is one matmul
// of batch * seq rows, so B is read once, not once per batch).
int folded_batch_loops(const Kernel& k);

// The rows of the matmul with the folded batch loops: M of both paths.
Expr folded_rows(const Kernel& k);

// Emits the batch-index unravel and the A, B, C base pointers for batch `lm_bt`; the first
// `outer` loops are batches, the loops from `outer` to m fold into the rows. B points to
// `b_type` elements (its storage: "float", or "uint16_t" for a widened 16-bit operand); A to
// `a_base` where given (a copy of A's rows, am apart, with no batch loops); no A where the
// kernel computes it (MatmulInfo::a_computed) and no a_base is given.
void emit_batch_bases(const Kernel& k, int outer, const std::string& b_type, CodeWriter& w,
                      const std::string& a_base = "");

// Whether the C renderer's matmul paths take kernel `k`: f32 products summed in f32 of a
// matched matmul with A stored as f32 and B as f32, 16-bit or blocks (renders_quant_gemv),
// storing f32 (renders_matmul); and, for the GEMM, strides that do not move with the loops.
// `native`: the floats of the machine's vectors (CpuOptions::vector_width), which the default
// tile follows.
bool renders_matmul(const Kernel& k, int64_t native);
bool takes_gemm(const Kernel& k, int64_t native);
// Emits the loop variables of folded row `row` (C, of the rows M): m, then the batch loops
// folded into the rows, down to loop `outer`.
void emit_row_vars(const Kernel& k, int outer, const std::string& row, CodeWriter& w);

// Emits the sizes and strides both matmul paths read: M, N, K, am, ak, bk, bn and lm_batches;
// the first `outer` loops are batches.
void emit_matmul_sizes(const Kernel& k, int outer, CodeWriter& w);

// How far ahead of its reads a GEMV's row of W prefetches (c/gemv.cc, c/quant_int8.cc).
inline constexpr int64_t kGemvPrefetchBytes = 4096;
// A GEMV step's prefetches: the `bytes` bytes from (const char*)(base) + kGemvPrefetchBytes,
// a cache line at a time (c/gemv.cc).
void emit_gemv_prefetch(const std::string& base, int64_t bytes, CodeWriter& w);

// "lm_vu8": vectors of `width` 32-bit unsigned lanes (and "lm_vu8u", unaligned), which hold
// widened 16-bit words (c/gemv.cc); their typedefs, once per width in a prelude.
std::string lane_vector(int64_t width);
std::string lane_vector_typedefs(int64_t width);
// "lm_load_f16_v8": the function loading `width` f16 words as a vector of floats, and its
// definition: F16C's vcvtph2ps where the compiler targets it, else exponent arithmetic
// (subnormals exact, infinities and NaNs kept), as lm_f16_to_f32 does for one element.
std::string f16_load_name(int64_t width);
std::string f16_load_function(int64_t width);

// The panels the GEMM of matmul kernel `k` would read B from, were B laid out ahead
// (kernel/weight_layout.h): set where its schedule has pack_b 1, the C renderer takes it with
// the GEMM, and B's offset, strides, K and N are constants with B the same for every batch.
// What a kernel wants, not what it reads: settle_weight_layout keeps it only for a parameter
// (Kernel::panels). A kernel that reads packed panels takes no GEMV path.
std::optional<PackedPanels> gemm_panels(const Kernel& k, int64_t native);

// The end of a micro-kernel whose `mr` x `nr` block of f32 sums lies in vectors c<r>_<j> of
// `vw` floats: stored into c (rows ldc apart; added to it unless `first`) whole where the
// block's real `rows` x `cols` (C expressions) are all of it, else through a tile on the stack,
// past them left alone.
void emit_block_store(int64_t mr, int64_t nr, int64_t vw, const std::string& rows,
                      const std::string& cols, CodeWriter& w);

// Whether the GEMM of `k` multiplies bf16 pairs in hardware (c/bf16_dot.cc): its schedule has
// bf16_dot 1 (checked against the machine by check_cpu_schedule), A and B are bf16 values (each
// widened to f32, or their product widened), A is loaded, not computed or quantized, and the
// sum is f32. Such a kernel reads A as bf16 words and packs B into pairs as it runs.
bool takes_bf16_dot(const Kernel& k, int64_t native);
// The micro-kernels of rows 1..mr and nr columns the bf16 GEMM calls ("lm_mmbf_6x64"), and
// its name for `rows` rows; the typedefs they need, once (`seen`).
std::string bf16_dot_prelude(int64_t mr, int64_t nr, std::set<std::string>& seen);
std::string bf16_dot_name(int64_t rows, int64_t nr);
// Packs B[pc:pc+kcur, n0+jr : n0+jr+nr] into pairs of k (kcur odd: the last pair's high half
// 0), zero-padded to nr columns, at lm_bp32 + (jr / nr) * ((kcur + 1) / 2) * nr.
void emit_bf16_pack_panel(int64_t nr, CodeWriter& w);

// Whether the bf16 GEMM of `k` (takes_bf16_dot) runs on AMX tiles (c/amx.cc): its schedule has
// bf16_dot 2. Such a GEMM's block is 32 x 32 and its k blocks whole steps of 32.
bool takes_amx(const Kernel& k, int64_t native);
// Rows up to which such a GEMM's block runs the bf16 dot products' micro-kernel of its rows
// (lm_mmbf_<rows>x32, on the same panels) instead of the tiles' 32 rows: a decode step's 1 row
// of a 2048 x 8192 weight's panels took 2.3 ms on tiles, 14.6 GB/s.
constexpr int64_t kAmxFewRows = 4;
// The AMX micro-kernel (lm_mmbf_*'s arguments, up to 32 rows and 32 columns), the threads'
// tile switches lm_amx_on / lm_amx_off, and the micro-kernel's name.
std::string amx_prelude(std::set<std::string>& seen);
std::string amx_micro_kernel_name();

// The GEMMs' split of the work into tasks (c/matmul.cc, c/quant_int8_gemm.cc), after the
// matmul's sizes and lm_threads: (batch, n block of nc columns, a multiple of `align` up to
// `ncmax`, m chunk of whole blocks of `mr` rows). open_gemm_task_loop opens the loop over them
// (threads take whole tasks; lm_bt the batch), emit_gemm_task_bounds names a task's columns
// [n0, n0 + ncols) and rows [m0, m1).
void emit_gemm_tasks(int64_t mr, int64_t nr, int64_t ncmax, int64_t align, CodeWriter& w);
void open_gemm_task_loop(CodeWriter& w);
void emit_gemm_task_bounds(CodeWriter& w);

// Packs the panel of a window B (MatmulInfo::b_window, c/window.cc) at columns n0 + jr of the
// k block from pc, zero-padded to `nr` columns: each element gathered at B's load index where
// its padding mask holds, else 0. The first `outer` loops are batches (their variables set);
// the loops from `outer` to m fold into the rows.
void emit_window_pack_panel(const Kernel& k, int outer, int64_t nr, CodeWriter& w);

// The register block of matmul kernel `k`'s f32 GEMM (c/matmul.cc): rows, columns and floats
// a vector, and the name of its micro-kernel of whole panels (in the prelude of every kernel
// that renders_matmul without the runtime's panels), which c/winograd.cc calls too.
struct GemmBlock {
  int64_t mr = 0, nr = 0, vw = 0;
  std::string micro;
};
GemmBlock gemm_block(const Kernel& k, int64_t native);

// Whether `k`, a matmul the C renderer takes, also gets the f32 GEMV path: its schedule sets
// gemv_rows, B is contiguous along k and not in blocks (those take c/quant.cc's GEMV), and M
// is not known to be above gemv_rows.
bool renders_gemv(const Kernel& k);

}  // namespace luminal
