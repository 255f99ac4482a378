// attention_region: which nodes a SumReduce scheduled attention computes in its own kernel
// (kernel/attention.h). Not whether that kernel is attention-shaped (attention_match.cc).
#include <vector>

#include "kernel/attention.h"
#include "kernel/buffer_plan.h"

namespace luminal {

namespace {

// A SumReduce of a Mul (a matmul, whose operands' views match_attention checks).
bool sum_of_product(const Graph& g, const Node& n) {
  if (n.op != OpKind::SumReduce || unrolled_reduce(n)) return false;
  return g.node(n.inputs[0].node).op == OpKind::Mul;
}

// Whether node `id` is an Exp2 or a Mul of one (softmax's e / sum(e)).
bool holds_exp2(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op == OpKind::Exp2) return true;
  if (n.op != OpKind::Mul) return false;
  for (const Edge& e : n.inputs) {
    if (g.node(e.node).op == OpKind::Exp2) return true;
  }
  return false;
}

bool elementwise(const Node& n) {
  return is_elementwise(n.op) || n.op == OpKind::Iota || n.op == OpKind::Constant ||
         unrolled_reduce(n);
}

}  // namespace

AttentionRegion attention_region(const Graph& graph,
                                 const std::vector<std::vector<NodeId>>& readers,
                                 NodeId reduce) {
  AttentionRegion none;
  const Node& root = graph.node(reduce);
  if (!sum_of_product(graph, root)) return none;
  Expr keys = root.inputs[0].view.dims[static_cast<size_t>(root.axis)];
  // The weights: the operand of the root's product that holds softmax's Exp2 (or is one).
  const Node& product = graph.node(root.inputs[0].node);
  NodeId weights = -1;
  for (const Edge& e : product.inputs) {
    if (weights < 0 && holds_exp2(graph, e.node)) weights = e.node;
  }
  if (weights < 0) return none;
  // The candidates: the weights' cone through elementwise nodes, one matmul (the scores) and
  // reductions over as many elements as the root's keys along their last axis.
  AttentionRegion region;
  NodeId scores = -1;
  region.inner.insert(root.inputs[0].node);
  std::vector<NodeId> stack = {weights};
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (region.inner.count(id)) continue;
    const Node& n = graph.node(id);
    bool take = elementwise(n);
    if (!take && sum_of_product(graph, n) && scores < 0) {
      scores = id;
      take = true;
    }
    const size_t rank = is_reduce(n.op) ? n.inputs[0].view.dims.size() : 0;
    bool last_axis = is_reduce(n.op) && static_cast<size_t>(n.axis) + 1 == rank;
    if (!take && last_axis && !unrolled_reduce(n) &&
        n.inputs[0].view.dims[static_cast<size_t>(n.axis)] == keys) {
      region.keys.insert(id);
      take = true;
    }
    if (!take) continue;
    region.inner.insert(id);
    for (const Edge& e : n.inputs) stack.push_back(e.node);
  }
  // Only nodes read by the region alone (or the root) stay in it.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = region.inner.begin(); it != region.inner.end();) {
      bool inside = true;
      for (NodeId r : readers[*it]) inside = inside && (r == reduce || region.inner.count(r));
      if (inside) {
        ++it;
        continue;
      }
      region.keys.erase(*it);
      it = region.inner.erase(it);
      changed = true;
    }
  }
  if (scores < 0 || !region.inner.count(scores)) return none;
  return region;
}

}  // namespace luminal
