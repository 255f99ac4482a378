// Views as index arithmetic: how a consumer's logical index reads its producer through a
// ShapeTracker, as a memory offset (physical_index), a validity condition (mask_of), or the
// producer's own logical index (compose_affine when it is provably affine, else unravel).
// Used by the lowering; pure functions of Exprs, no graph.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/symbolic.h"
#include "ir/shape_tracker.h"

namespace luminal {

std::vector<Expr> row_major_strides(const std::vector<Expr>& shape);
// The valid-region condition of a view at logical index `idx` (1 when unmasked).
Expr mask_of(const ShapeTracker& v, const std::vector<Expr>& idx);
// The element of the viewed buffer at logical index `idx`.
Expr physical_index(const ShapeTracker& v, const std::vector<Expr>& idx);
// The row-major index over `shape` of flat offset `flat` (div/mod per axis).
std::vector<Expr> unravel(const Expr& flat, const std::vector<Expr>& shape);
// The index over `shape` (constant dims) of flat row-major offset `flat` as affine parts with
// no division, when `flat` is affine in symbols whose extents `extents` gives (constant
// strides, a constant offset) and its terms split among the axes (each term to the outermost
// axis whose stride divides its coefficient, the offset by its mixed-radix digits) so that
// every axis's part provably stays inside its dim: then the parts are exactly what unravel
// computes, and `flat` is inside `shape`. nullopt otherwise. A conv's or a pool's window
// read through a Gather of a padded input (nn/_grid.gather_linear's index).
std::optional<std::vector<Expr>> unravel_affine(const Expr& flat, const std::vector<Expr>& shape,
                                                const std::map<std::string, Expr>& extents);
// The producer index that view `v` reads at consumer index `idx`, as plain affine terms when
// every axis of the view maps onto one producer axis and stays provably inside it; an axis
// that merged producer axes (a reshape of (b, s, n) as (b*s, n)) and is their only reader
// gives each of them a digit of its index (idx // inner % dim), which the producer's strides
// recombine into an affine index where they are row-major over those axes.
std::optional<std::vector<Expr>> compose_affine(const ShapeTracker& v,
                                                const std::vector<Expr>& idx,
                                                const std::vector<Expr>& shape);
// Whether `v` reads a producer of `shape` exactly in its own row-major order.
bool is_identity_view(const ShapeTracker& v, const std::vector<Expr>& shape);
// Whether some axis re-reads the producer's elements: stride 0 over more than one valid index
// (an axis padded around a single element, as a stacked pair has, re-reads nothing).
bool broadcasts(const ShapeTracker& v);

}  // namespace luminal
