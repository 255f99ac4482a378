// Implicit GEMM: a matmul whose B is a convolution's windows (nn/conv.py: an Iota+Gather
// im2col, read by the matmul as its K x positions columns) reads B through the Gather in its
// own kernel. The schedule kWindowParam (ir/graph.h; the CPU's rules attach it to the
// SumReduce, so the search times it against the default) makes the buffer plan compute the
// Gather inline (window_gather); lowering then checks the kernel (match_matmul,
// MatmulInfo::b_window: B a load at index arithmetic of its loops, through a padding mask) and
// lowers the SumReduce as by default where it is not that shape. The C renderer gathers each
// panel of B as its GEMM packs it (codegen/c/matmul.cc), so the windows, k*k copies of the
// input, never reach memory. Not the rendering.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/symbolic.h"
#include "ir/graph.h"

namespace luminal {

// The Gather a SumReduce `reduce` scheduled window reads as an operand of its product: a
// Gather whose index is Int and reads it only there (`uses`: each node's readers), or -1.
NodeId window_gather(const Graph& graph, NodeId reduce, const std::vector<int>& uses);

// A window load's index and each condition of its mask as a part that moves with the column
// `n` plus a part that moves with the reduction `r` (all else fixed): parts[0] the index's,
// parts[1..] each condition's, as `first + second > 0`. A convolution's split so ((oh, ow)
// and (c, kh, kw)); the C renderer packs a panel of such windows as runs of copies
// (codegen/c/window.cc). nullopt where the index or a condition does not split, or a condition
// is not a comparison: such a load is not taken as a window (match_matmul).
struct WindowParts {
  std::vector<std::pair<Expr, Expr>> parts;
};
std::optional<WindowParts> window_parts(const Expr& index, const Expr& valid,
                                        const std::string& n, const std::string& r);

}  // namespace luminal
