// Fused attention: softmax(q @ k^T * scale + mask) @ v as one kernel whose query rows stream
// over the keys with the online-softmax recurrence, so the scores never reach memory. The
// schedule kAttentionParam on the second matmul's SumReduce (a runtime's rules offer it) makes
// the buffer plan compute the scores, their max and sum inline in that SumReduce's kernel
// (attention_region); lowering then checks the kernel's value graph (match_attention). Not the
// renderings (codegen/c/attention.cc).
#pragma once

#include <set>
#include <vector>

#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

// The nodes a SumReduce `reduce` scheduled attention computes inline: `inner` (elementwise
// work, sources, the scores' matmul and the reductions over the keys), every one read only by
// the region; `keys` the reductions among them over the root's own keys (softmax's max and
// sum), which share its loop. Empty when the cone holds no scores matmul.
struct AttentionRegion {
  std::set<NodeId> inner;
  std::set<NodeId> keys;
};

AttentionRegion attention_region(const Graph& graph,
                                 const std::vector<std::vector<NodeId>>& readers, NodeId reduce);

// The attention structure of `kernel` (kernel/kernel.h AttentionInfo), lowered from a region;
// `present` is false when its value graph is not that shape.
AttentionInfo match_attention(const Kernel& kernel);

// The values of the cone of `from` in SSA order, not passing the values of `stops` (which are
// not listed): what a renderer emits to compute `from` from them.
std::vector<ValueId> attention_cone(const Kernel& kernel, ValueId from,
                                    const std::set<ValueId>& stops);

}  // namespace luminal
