// window_gather: which Gather a SumReduce scheduled window reads in its own kernel
// (kernel/window.h). Not whether that kernel is a matmul of gathered B (kernel/match.cc).
#include "kernel/window.h"

#include "kernel/buffer_plan.h"

namespace luminal {

NodeId window_gather(const Graph& graph, NodeId reduce, const std::vector<int>& uses) {
  const Node& root = graph.node(reduce);
  if (root.op != OpKind::SumReduce || unrolled_reduce(root)) return -1;
  const NodeId product = root.inputs[0].node;
  if (graph.node(product).op != OpKind::Mul || uses[product] != 1) return -1;
  for (const Edge& e : graph.node(product).inputs) {
    const Node& n = graph.node(e.node);
    if (n.op != OpKind::Gather || uses[e.node] != 1 || !n.schedule.empty()) continue;
    if (graph.node(n.inputs[1].node).dtype == DType::Int) return e.node;
  }
  return -1;
}

}  // namespace luminal
