// Integer dot products of quantized activations: a SumReduce scheduled kQuantDotParam whose
// product reads the Q8_0 round trip of x (ir/quant_activations.h) and a dequantized weight is
// lowered to a kernel that reads x itself (MatmulInfo::a_q8_0): the formula's nodes are
// computed by none (quant_dot_region), and lowering checks that the kernel is a matmul a
// renderer can quantize in blocks (quant_dot_shaped). Not the renderings (c/quant_int8.cc).
#pragma once

#include <set>
#include <vector>

#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

// What a SumReduce `reduce` scheduled quant_dot reads instead of its activations: `x` (an edge
// reading x as (..., K / 32, 32)) in place of node `out`; `inner` the formula's nodes and the
// product, which no kernel computes when none but such reduces read them. out < 0: none.
struct QuantDotRegion {
  NodeId out = -1;
  Edge x{-1, ShapeTracker{}};
  std::set<NodeId> inner;
};

QuantDotRegion quant_dot_region(const Graph& graph, NodeId reduce);

// Whether kernel `k`, lowered from a region with x in buffer `x`, is a matmul whose a is that
// load, contiguous along k, read in whole blocks of 32 from a block's start, and whose b is a
// quantized weight (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) widened by a Cast, read in whole blocks.
bool quant_dot_shaped(const Kernel& k, BufferId x);

}  // namespace luminal
