// The interior of an elementwise kernel's innermost loop: where every padding mask of its
// loads (Value::valid) is decided, so that a renderer can run the loop in three parts, the
// middle one without the masks (a padded view's interior: a convolution's im2col, a pooling
// window, a pad). The masks' conditions that move with the innermost variable v as a*v + r
// give the range [lo, hi) where they hold; those that do not move with v give `outer`, one
// condition per row. Conditions of another shape stay in the interior's masks.
#pragma once

#include <optional>

#include "kernel/kernel.h"

namespace luminal {

struct InteriorSplit {
  Expr lo;        // the first v where every moving condition holds (may lie outside the loop)
  Expr hi;        // one past the last one
  Expr outer;     // the conditions that do not move with v, all of them (1 when there are none)
  Kernel inside;  // the kernel with the decided conditions dropped from its masks
};

// The split of `kernel`'s innermost output loop, or nullopt when there is nothing to decide
// (no mask, a reduction, a recognised pattern: matmul, row, attention).
std::optional<InteriorSplit> interior_split(const Kernel& kernel);

}  // namespace luminal
