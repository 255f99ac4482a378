// Row kernels: a kernel that holds several reductions over the rows of its output (softmax's
// max and sum, layer_norm's mean and variance) and the elementwise work between and after them.
// Per row (the output loops but one), each reduction runs as its own loop over the row, in SSA
// order, then the row's outputs are written in one loop (or, when the kernel stores one value
// a row, once). The row's intermediates stay in registers; its input in cache. This file says
// which value runs in which loop (match_row); the buffer plan decides which reductions fuse
// (kRowParam, kernel/buffer_plan.h) and the renderers (codegen/c/row.cc, cuda/row.cc) emit it.
#pragma once

#include <vector>

#include "kernel/kernel.h"

namespace luminal {

// The schedule parameter kRowParam (ir/graph.h) of a reduction: `row 1` computes it inside
// the kernels that read it, once per row, instead of storing it to its own buffer (the
// default, `row 0` or absent).

// The row structure of `kernel`, whose reductions lowering emitted inside the kernel rather
// than as its root alone; not present when some value would need two inner loops at once (a
// reduction read along the row it reduces, or two reductions' loops), so that the kernel
// cannot run as a row kernel.
RowInfo match_row(const Kernel& kernel);

// Whether loops k and k + 1 of row kernel `kernel` are softmax's max and sum, the sum's body
// exp2(c * (x' - m)) with m the max of x, x' the same value as x over the sum's loop, c a
// positive constant and nothing else in the sum's loop: then `kernel.row`'s online fields are
// set for the first such k (they stay -1 otherwise). The renderers then run both in one loop,
// keeping per lane the running max m and the sum s rescaled to it:
//   m' = max(m, x),  s' = s * exp2(c * (m - m')) + exp2(c * (x - m')),
// with exp2(c * (a - b)) read as 1 where a == b (so rows starting with -inf add nothing) and
// the sum NaN where the max is not finite (as the two loops give).
void match_online(Kernel& kernel);

// A value of the row loop that is, up to the renaming of its loop variable, a value of the last
// reduction's loop, with a transcendental op in its cone (softmax's exp2(c * (x - max)), which
// the sum adds up and the row loop scales): where the kernel stores over the row's variable
// at unit stride and the two loops run over the same extent, the reduction's loop can store it
// to the output as it goes and the row loop read it back, so it is computed once. Both -1
// when there is none (or the kernel runs the online recurrence).
struct RowStash {
  ValueId row_value = -1;     // in the row loop (values_in(kernel, reductions.size()))
  ValueId reduce_value = -1;  // the same value in the last reduction's loop
};
RowStash match_stash(const Kernel& kernel);

// The values a renderer emits at step `step` of a row: for step k < reductions.size(), first
// the row-scope values between the previous reduction and reduction k, then (values_in) the
// body of loop k; at step reductions.size(), the row-scope values after the last reduction,
// then the body of the row loop. Each list in SSA order.
std::vector<ValueId> row_values_before(const Kernel& kernel, int step);
std::vector<ValueId> values_in(const Kernel& kernel, int step);

}  // namespace luminal
