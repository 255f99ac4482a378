// The default lowering's fusion decisions: which HLIR nodes get a buffer (so a kernel that
// writes it) and which are computed inline wherever they are read. A node is stored when it
// is an input or output, a reduction loop, read through a broadcast or by a Gather, empty,
// scheduled as its own kernel, or read by several kernels and not cheap to recompute (a
// node's kInlineParam schedule overrides that last choice either way, and `inline 1` on a
// Cast widening a 16-bit input to f32 overrides the broadcast too: it is widened in its
// readers). A SumReduce scheduled kEpilogueParam is not stored but computed in the kernel of
// its elementwise readers' region (kernel/epilogue.h), whose one sink is stored. A reduction
// scheduled `row 1` (kernel/row_kernel.h) is not stored unless it must be (a Gather's data, an
// Output's): its readers compute it, once per row. A SumReduce scheduled kAttentionParam
// computes its attention region (kernel/attention.h) inline. A SumReduce scheduled
// kQuantDotParam reads x in place of its quantized activations (kernel/quant_dot.h): x is
// stored, and the formula's nodes no other kernel reads are computed by none. A SumReduce
// scheduled kPrologueParam computes its A's cone inline (kernel/prologue.h); one scheduled
// kWindowParam its B's Gather (kernel/window.h). Not the kernels
// themselves (lower.cc) nor where buffers live in memory (memory_plan.h).
#pragma once

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

struct PlannedBuffer {
  NodeId node;  // the node whose value it holds (an Output taking over its producer's kernel)
  BufferRole role;
};

struct BufferPlan {
  std::vector<PlannedBuffer> buffers;  // in the order the program numbers them
  std::vector<int> buffer_of;          // per node: index into buffers, -1 computed inline
  std::set<NodeId> skipped;            // Outputs whose producer writes their buffer
  // The reductions an attention kernel computes over its own keys (kernel/attention.h):
  // lowering runs them in the loop of the SumReduce scheduled attention.
  std::set<NodeId> attention_keys;
  std::set<NodeId> attention_roots;  // the SumReduces scheduled attention whose region is inline
  // The SumReduces scheduled quant_dot whose kernel reads x (an edge reading it as the
  // formula's (..., K / 32, 32)) in place of their quantized activations, node `out`.
  std::map<NodeId, std::pair<NodeId, Edge>> quant_dots;
  // The SumReduces scheduled prologue whose A's cone (some of it) is computed in their kernel.
  std::set<NodeId> prologues;
  // The SumReduces scheduled window whose B's Gather is computed in their kernel.
  std::set<NodeId> windows;
};

// `unfused`: reductions stored whatever their `row` schedule says (lowering found that a
// kernel reading them could not run as a row kernel), and SumReduces lowered as by default
// whatever their `attention` (or `prologue`, `window`) schedule says (their kernel was not that shape).
BufferPlan plan_buffers(const Graph& graph, const std::vector<NodeId>& order,
                        const std::set<NodeId>& unfused = {});

// A reduction over a few elements (a constant extent of at most 4), as the max of a stacked
// pair is (maximum, relu, clamp), lowers to an unrolled chain of combines: no loop, so it
// fuses into its consumers like an elementwise op.
bool unrolled_reduce(const Node& n);

}  // namespace luminal
