// Matmul epilogues: elementwise work on a SumReduce's result computed in the reduction's own
// kernel, before its store, instead of in a pass of its own. The schedule parameter
// kEpilogueParam (a runtime's rules attach it to a matmul's SumReduce, so the search times it
// against the default) makes the buffer plan fuse the reduction into its readers
// (epilogue_region); lowering then orders the reduction's cone first (reduction_first), and
// match_matmul (kernel/match.h) marks the values after the sum as the epilogue. Not the
// renderings (codegen/c/matmul.cc, cuda/matmul.cc and the GEMVs).
#pragma once

#include <set>
#include <vector>

#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

// "epilogue 1" on a SumReduce: its elementwise readers run in its kernel; 0 (the default)
// stores it.
inline constexpr char kEpilogueParam[] = "epilogue";

// The nodes a SumReduce's kernel computes after the sum: `inner` are computed inline (the sum
// among them, unstored), `sink` is the one node of the region read from outside it, which the
// kernel stores. Every node of the region reads the others at its own output element (identity
// views, or a stacked pair's trailing axis reduced by an unrolled MaxReduce: relu, clamp), so
// the sum is computed once per element.
struct EpilogueRegion {
  std::vector<NodeId> inner;
  NodeId sink = -1;  // -1: no reader fuses, the sum is stored
};

// The largest region closing on one sink, following `order` (topological) from `reduce`:
// elementwise readers (and unrolled reductions) of float dtype, not forced to a buffer
// (`forced`: the region may end on such a node, not pass it) nor in another region (`taken`),
// read through views as above, at most kMaxEpilogueNodes of them. `readers` lists every
// node's readers, one entry per edge.
EpilogueRegion epilogue_region(const Graph& graph, const std::vector<NodeId>& order,
                               const std::vector<std::vector<NodeId>>& readers,
                               const std::vector<bool>& forced, const std::set<NodeId>& taken,
                               NodeId reduce);

inline constexpr size_t kMaxEpilogueNodes = 96;

// Reorders the values of `kernel` so that the cone of its reduction comes first (the values the
// reduction loop runs) and every other value after the reduction, keeping SSA order: lowering
// emits an epilogue's own loads (a bias read first by an Add) wherever it meets them. Values
// outside that cone the stored value does not need are dropped.
void reduction_first(Kernel& kernel);

}  // namespace luminal
