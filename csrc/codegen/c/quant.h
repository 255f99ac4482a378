// Quantized weights (GGUF blocks, core/quant.h) in C-family kernels: the element reader each
// generated kernel calls where it loads a quantized buffer (lm_q8_0_at(p, i), a rendering of
// dequantize_element, checked against the interpreter), and the C renderer's GEMV path for a
// weight stored in blocks (CRenderer::emit_quant_gemv in c/quant.cc). Not the block layouts
// themselves (core/dtype.h, core/quant.h) nor the f32 GEMV (c/gemv.cc).
#pragma once

#include <set>
#include <string>

#include "codegen/c_like.h"
#include "kernel/kernel.h"

namespace luminal {

// The element readers of the quantized dtypes among `program`'s buffers, each declared with
// `qualifiers` ("static inline", "__device__ inline"), reading blocks through `bytes`, the
// pointer type of a weight's bytes ("const uint8_t*"; MSL's names its address space); "" when
// it has none.
std::string quant_readers(const Program& program, const std::string& qualifiers,
                          const std::string& bytes = "const uint8_t*");

// The expression reading element `index` of quantized buffer `buffer` as a float.
std::string quant_load(DType dtype, const std::string& buffer, const std::string& index,
                       const std::string& bytes = "const uint8_t*");

// The vector typedefs, byte widening loads (lm_ubytes_v8, lm_sbytes_v8) and block scale
// reader (lm_block_scale) of quantized kernels of vector `width`, those `seen` lacks.
std::string quant_block_helpers(int64_t width, std::set<std::string>& seen);
// "lm_sbytes_v8" (sign-extended) or "lm_ubytes_v8": `width` bytes widened to int lanes.
std::string quant_byte_lanes_name(int64_t width, bool is_signed);
// Q4_K and Q5_K blocks, for the GEMV's block dot and the GEMM's tile over block `b`: opens
// the loop over pairs of sub-blocks `sub`, with their scales and mins s0, m0, s1, m1 (times d
// and dmin); and, inside a loop over lanes `l` of 32, the int lanes `lo` and `hi` of sub-blocks
// sub and sub + 1.
void open_k_quant_sub_blocks(CodeWriter& w);
void emit_k_quant_lanes(CodeWriter& w, DType dtype, int64_t width);
// Q6_K block `b`, inside loops over its halves `h`, quarters `r` and lanes `c` of 32: the int
// lanes `q` (q - 32 of elements 128h + 32r + c ...).
void emit_q6_k_lanes(CodeWriter& w, int64_t width);
// Inside a quantized matmul's parallel region (after render_matmul's sizes and lm_wblocks, the
// tasks per batch): opens the OpenMP loop over tasks of `rows_per_task` rows of W (columns of
// C), each with its batch's A, B and C (emit_batch_bases), n0 and rows (the task's, at most
// rows_per_task).
void open_weight_row_tasks(const Kernel& k, int outer, int64_t rows_per_task, CodeWriter& w);
// Emits "#pragma GCC unroll 32" and opens `loop` (of constant trip count: the block's offsets
// become constants, where a rolled loop spent most of its time in index arithmetic).
void open_unrolled(CodeWriter& w, const std::string& loop);

// The GEMM path's dequantizing pack (c/quant_gemm.cc): "lm_q8_0_tile_v8", the function that
// writes a block's values (each bit-equal to its reader's) into an f32 tile, its definition,
// and the code packing B's rows n0 + jr .. + nr over k block [pc, pc + kcur) into the f32
// panel lm_bp (zero columns past ncols), inside c/matmul.cc's loop over jr; B points to the
// batch's blocks, lm_ldw is the bytes between rows of W.
std::string quant_tile_name(DType dtype, int64_t width);
std::string quant_tile_function(DType dtype, int64_t width);
void emit_quant_pack_panel(DType stored, int64_t width, int64_t nr, CodeWriter& w);

// Rows of x above which (without batch loops, and without a gemv_rows schedule) a kernel of
// quantized activations leaves its int8 GEMV (c/quant_int8.cc), which widens each weight block
// again for every row of x, for a GEMM that unpacks each block once: the f32 GEMM on x's
// round trip dequantized (c/matmul.cc emit_gemm), or the int8 GEMM (int8_gemm 1).
constexpr int64_t kInt8GemvRows = 8;
// A weight in row groups (quant_rows 4) meets kGroupXRows rows of x a pass of its GEMV
// (c/quant_int8_groups.cc), with no pack: measured ahead of the int8 GEMM, whose pack of the
// weight is a fixed cost, up to 128 rows (Q4_0, 2048 x 8192: 16 rows 1.3 against 5.8 ms, 64
// rows 4.7 against 7.4, 128 rows 9.2 against 9.6, 512 rows 42 against 26).
constexpr int64_t kGroupGemvRows = 64;
// The rows that take the int8 GEMV under a schedule's `gemv_rows` (0: kInt8GemvRows, or
// kGroupGemvRows for a weight in row groups).
inline int64_t int8_gemv_rows(int64_t gemv_rows, bool row_groups) {
  if (gemv_rows > 0) return gemv_rows;
  return row_groups ? kGroupGemvRows : kInt8GemvRows;
}
// Whether quantized-activation kernel `k` (MatmulInfo::a_q8_0) multiplies the rows past the
// int8 GEMV's in int8 too (c/quant_int8_gemm.cc): its schedule has int8_gemm 1 or 2 (checked
// against the machine by check_cpu_schedule) and it has no batch loops but those that fold
// into its rows. Its micro-kernels and panel packing, those `seen` lacks.
bool takes_int8_gemm(const Kernel& k, int64_t native);
std::string int8_gemm_prelude(const Kernel& k, std::set<std::string>& seen);

// The int8 GEMM's micro-kernel on AMX tiles (int8_gemm 2, c/quant_int8_amx.cc) for a weight of
// `w` (sub-blocks of g k; `minimum`: Q4_K/Q5_K's) and the switch that configures a thread's
// tiles for it ("lm_amx_int8_on_32"); their definitions and the tile prelude, those `seen`
// lacks.
std::string amx_int8_micro_name(DType w);
std::string amx_int8_switch_name(int64_t g);
std::string amx_int8_prelude(DType w, int64_t g, bool minimum, std::set<std::string>& seen);

// The int8 GEMV on a weight of `w` in row groups (c/quant_int8_groups.cc, quant_rows 4) for
// x_rows rows of x at once ("lm_qdotg_q4_0", "lm_qdotg_q4_0_x2", "lm_qdotg_q4_0_x4": each
// group's weights loaded and unpacked once for them), its definition and helpers (those `seen`
// lacks, every x_rows up to kGroupXRows; int8_gemm_prelude's lm_dpbusd before them), and what
// x's per-block offsets are its sums times (Q4_0 2, Q8_0 32: the weight's offset over a row's
// 4 lanes; Q4_K 0, none: its minimums are taken off in f32).
constexpr int64_t kGroupXRows = 4;
std::string group_gemv_name(DType w, int64_t x_rows);
std::string group_gemv_function(DType w, int64_t x_rows);
std::string group_gemv_prelude(DType w, std::set<std::string>& seen);
int64_t group_x_offset(DType w);

// Whether the C renderer runs matmul kernel `k` by its quantized GEMV path: an f32 matmul
// whose B is a quantized buffer widened by a Cast (a Linear's weight W(N, K) in blocks), read
// in whole blocks along k (b_k == 1, K, b_n and B's offset multiples of the block), A f32 and
// contiguous along k, and a vector width dividing 16: few rows (M <= gemv_rows, by default
// kQuantGemvRows) run the GEMV, more the packed GEMM with panels dequantized as they are packed.
bool renders_quant_gemv(const Kernel& k, int64_t native);
// Rows of A up to which a quantized matmul without a gemv_rows schedule takes the GEMV.
constexpr int64_t kQuantGemvRows = 4;

}  // namespace luminal
