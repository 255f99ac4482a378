// What the C renderer's two matmul paths share: the packed GEMM (c_matmul.cc) and the GEMV
// for few rows (c_gemv.cc), both emitted by CRenderer::render_matmul into one kernel that picks
// its path at run time. Vector types, the folding of batch loops into rows, and the operand
// base pointers of one batch. Not the paths themselves, nor the schedule (c_schedule.h).
#pragma once

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
// `b_type` elements (its storage: "float", or "uint16_t" for a widened 16-bit operand).
void emit_batch_bases(const Kernel& k, int outer, const std::string& b_type, CodeWriter& w);

// Whether `k`, a matmul the C renderer takes, also gets the GEMV path: its schedule sets
// gemv_rows, B is contiguous along k, and M is not known to be above gemv_rows.
bool renders_gemv(const Kernel& k);

}  // namespace luminal
