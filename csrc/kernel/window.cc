// window_gather: which Gather a SumReduce scheduled window reads in its own kernel, and
// window_parts: how its load splits (kernel/window.h). Not whether that kernel is a matmul of
// gathered B (kernel/match.cc).
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

namespace {

// `e` as its part that moves with `n` and its part that moves with `r` (first + second), or
// nullopt where it does not split so.
std::optional<std::pair<Expr, Expr>> split_sum(const Expr& e, const std::string& n,
                                               const std::string& r) {
  const Expr moves_n = e.substitute(r, 0);
  const Expr moves_r = e.substitute(n, 0) - e.substitute({{n, 0}, {r, 0}});
  if (moves_n + moves_r != e) return std::nullopt;
  return std::make_pair(moves_n, moves_r);
}

}  // namespace

std::optional<WindowParts> window_parts(const Expr& index, const Expr& valid,
                                        const std::string& n, const std::string& r) {
  WindowParts s;
  std::optional<std::pair<Expr, Expr>> at = split_sum(index, n, r);
  if (!at) return std::nullopt;
  s.parts.push_back(*at);
  for (const Expr& c : conjuncts(valid)) {
    std::optional<std::pair<Expr, Expr>> sides = less_than_sides(c);
    if (!sides) return std::nullopt;
    std::optional<std::pair<Expr, Expr>> part = split_sum(sides->second - sides->first, n, r);
    if (!part) return std::nullopt;
    s.parts.push_back(*part);
  }
  return s;
}

}  // namespace luminal
