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

#include <vector>

#include "ir/graph.h"

namespace luminal {

// The Gather a SumReduce `reduce` scheduled window reads as an operand of its product: a
// Gather whose index is Int and reads it only there (`uses`: each node's readers), or -1.
NodeId window_gather(const Graph& graph, NodeId reduce, const std::vector<int>& uses);

}  // namespace luminal
