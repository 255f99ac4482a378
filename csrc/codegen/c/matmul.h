// What the C renderer's two matmul paths share: the packed GEMM (c/matmul.cc) and the GEMV
// for few rows (c/gemv.cc), both emitted by CRenderer::render_matmul into one kernel that picks
// its path at run time. Vector types, the folding of batch loops into rows, the operand base
// pointers of one batch, and the panels of a parameter B that CpuRuntime packs once. Not the
// paths themselves, nor the schedule (c/schedule.h).
#pragma once

#include <optional>
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
bool renders_matmul(const Kernel& k);
bool takes_gemm(const Kernel& k);
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

// The panels a GEMM reads its B from when B is a parameter its schedule packs (pack_b 1):
// CpuRuntime lays them out once, when the parameter's data is set, as the kernel would pack
// them on every call otherwise. B's element (k, n), at offset + k * b_k + n * b_n of the
// parameter's data, lies in k block k / depth (of rows = min(depth, K - its first k)), panel
// n / width of it (columns past N zero), at row k % depth and column n % width: element
// (k / depth) * depth * N' + (n / width) * rows * width + (k % depth) * width + n % width, with
// N' = N rounded up to the width. So a task's panels of one k block are one contiguous run.
// In B's storage dtype (a bf16 weight stays bf16, widened in the micro-kernel's registers).
struct PackedPanels {
  DType stored = DType::F32;
  int64_t width = 0;  // columns a panel: the kernel's tile_n
  int64_t depth = 0;  // rows of a k block: the kernel's tile_k
  int64_t k = 0;      // K and N of the matmul
  int64_t n = 0;
  int64_t offset = 0;  // where B's (k, n) lies in the parameter's data
  int64_t b_k = 0;
  int64_t b_n = 0;

  int64_t padded_n() const { return (n + width - 1) / width * width; }
  int64_t elements() const { return padded_n() * k; }
  // The largest element of the parameter's data the panels read, -1 when they read none.
  int64_t last_read() const;
  bool operator==(const PackedPanels& o) const;
};

// The panels matmul kernel `k` reads B from: set where its schedule has pack_b 1, the C
// renderer takes it with the GEMM, and B's offset, strides, K and N are constants with B the
// same for every batch. A kernel that reads packed panels takes no GEMV path. Whether B is a
// parameter is settle_packing's to decide: call it on the program first.
std::optional<PackedPanels> packed_panels(const Kernel& k);

// Turns packing off (pack_b 0) in every kernel of `program` whose B is not a parameter of
// `graph` that only such kernels read, all in the same panels: a parameter has one resident
// layout, and an input that changes per call is never packed ahead. CpuRuntime calls it right
// after lowering, so its renderer and its set_data agree on which inputs are panels.
void settle_packing(const Graph& graph, Program& program);

// Whether `k`, a matmul the C renderer takes, also gets the f32 GEMV path: its schedule sets
// gemv_rows, B is contiguous along k and not in blocks (those take c/quant.cc's GEMV), and M
// is not known to be above gemv_rows.
bool renders_gemv(const Kernel& k);

}  // namespace luminal
