// Recognizes a matmul in the e-graph: SumReduce over axis k of Mul(a, b) where, over the Mul's
// output axes without k, a is broadcast along the last (n) and b along the one before (m), and
// neither view is padded; the same shape the lowering turns into a register-blocked kernel
// (kernel/lower.cc detect_matmul). Rules use it as a condition and the cost model to price
// tilings.
#pragma once

#include <optional>

#include "egraph/egraph.h"

namespace luminal::egraph {

struct MatmulShape {
  Expr batch = 1;  // product of the other output axes
  Expr m, n, k;
  bool a_first = true;  // the first edge given is A (broadcast along n), else the second is
  bool b_shared = false;  // B the same for every batch (a Linear's weight over (batch, s, k)):
                          // the CPU's kernel then runs the batch as more rows of one matmul
  bool b_parameter = false;  // B a parameter (or its widening): what a runtime may lay out
                             // once (the CPU's pack_b); else its kernel packs B after all
};

// Whether class `c` holds a parameter Input or, `through_cast`, a Cast of a class that does (a
// 16-bit weight widened for an f32 matmul).
bool holds_parameter(const EGraph& g, Id c, bool through_cast);

// Whether a SumReduce over `axis` of a Mul of edges `a` and `b` reads a matmul: true where `a`
// is A, false where `b` is, nullopt where neither (the stride test alone, no sizes built: rule
// conditions ask it of every such Mul in every iteration).
std::optional<bool> matmul_a_first(const EGraph& g, const EEdge& a, const EEdge& b, int axis);

// The matmul read by a SumReduce over `axis` of a Mul of edges `a` and `b` (in either order).
std::optional<MatmulShape> matmul_shape(const EGraph& g, const EEdge& a, const EEdge& b,
                                        int axis);

// The same for an e-node: a SumReduce whose operand class holds such a Mul (identity view).
std::optional<MatmulShape> matmul_shape(const EGraph& g, const ENode& reduce);

}  // namespace luminal::egraph
