// prologue_region: which nodes a SumReduce scheduled prologue computes in its own kernel
// (kernel/prologue.h). Not whether that kernel is a matmul with a computed A (kernel/match.cc).
#include "kernel/prologue.h"

#include "kernel/buffer_plan.h"

namespace luminal {

namespace {

bool repeats(const ShapeTracker& v) {
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (is_zero(v.strides[k]) && !is_one(v.dims[k])) return true;
  }
  return false;
}

// A node a prologue may take: elementwise work, or a reduction that is not a matmul (a sum of a
// product of two broadcasts).
bool takes(const Graph& g, const Node& n) {
  for (const auto& [name, value] : n.schedule) {
    if (name == kRowParam) continue;
    if (name != kInlineParam || value != 1) return false;  // a kernel of its own, or stored
  }
  if (is_unary(n.op) || is_binary(n.op) || n.op == OpKind::Cast) return true;
  if (!is_reduce(n.op)) return false;
  const Node& x = g.node(n.inputs[0].node);
  return x.op != OpKind::Mul || !repeats(x.inputs[0].view) || !repeats(x.inputs[1].view);
}

// The cone of `from` that a prologue may take, and whether it holds a reduction loop.
std::set<NodeId> cone(const Graph& g, NodeId from, const std::set<NodeId>& taken, bool& reduces) {
  std::set<NodeId> out;
  std::vector<NodeId> stack = {from};
  while (!stack.empty() && out.size() < kMaxPrologueNodes) {
    NodeId id = stack.back();
    stack.pop_back();
    const Node& n = g.node(id);
    if (out.count(id) || taken.count(id) || !takes(g, n)) continue;
    reduces = reduces || (is_reduce(n.op) && !unrolled_reduce(n));
    out.insert(id);
    for (const Edge& e : n.inputs) stack.push_back(e.node);
  }
  return out;
}

}  // namespace

std::set<NodeId> prologue_region(const Graph& graph, NodeId reduce, const std::set<NodeId>& taken) {
  const Node& root = graph.node(reduce);
  if (root.op != OpKind::SumReduce || unrolled_reduce(root)) return {};
  const Node& product = graph.node(root.inputs[0].node);
  if (product.op != OpKind::Mul) return {};
  for (const Edge& e : product.inputs) {
    bool reduces = false;
    std::set<NodeId> region = cone(graph, e.node, taken, reduces);
    if (reduces) return region;
  }
  return {};
}

}  // namespace luminal
