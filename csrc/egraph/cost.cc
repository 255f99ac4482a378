// CostModel::node_cost: per-op weights (transcendentals cost more than adds) times elements,
// plus reads priced by their view: contiguous 1, strided 1.5, padded 2, a broadcast scalar 0.1.
#include "egraph/cost.h"

#include <algorithm>

namespace luminal::egraph {

double CostModel::elements(const std::vector<Expr>& shape) const {
  Expr n = product(shape);
  DynMap env = dims;
  for (const std::string& s : n.symbols()) env.emplace(s, kDefaultDim);
  return static_cast<double>(std::max<int64_t>(n.eval(env), 1));
}

namespace {
double op_weight(OpKind op) {
  switch (op) {
    case OpKind::Exp2:
    case OpKind::Log2:
    case OpKind::Sin:
      return 4;
    case OpKind::Sqrt:
    case OpKind::Recip:
    case OpKind::Mod:
    case OpKind::Gather:
      return 2;
    case OpKind::Cast:
      return 0.5;
    default:
      return 1;
  }
}
}  // namespace

double CostModel::node_cost(const EGraph& g, const ENode& n) const {
  if (n.op == OpKind::Input || n.op == OpKind::Constant) return 0;
  auto read = [&](const EEdge& e) {
    const ClassData& d = g.data(e.cls);
    if (d.shape.empty()) return 0.1;  // a scalar, broadcast
    const ShapeTracker& v = g.view(e.view);
    if (v.has_mask()) return 2.0;
    if (g.is_identity(e)) return 1.0;
    return 1.5;
  };
  if (n.op == OpKind::Iota) return launch + elements(g.attr(n.attr).node.shape);
  if (is_reduce(n.op)) {
    return launch + elements(g.view(n.children[0].view).dims) * (1 + read(n.children[0]));
  }
  // Elementwise, Cast, Gather: one output element per element of the last operand's view.
  double count = elements(g.view(n.children.back().view).dims);
  double per = op_weight(n.op);
  for (const EEdge& e : n.children) per += read(e);
  return launch + count * per;
}

double graph_work(const Graph& graph, const DynMap& dims) {
  CostModel model;
  model.dims = dims;
  double total = 0;
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    double most = model.elements(n.shape);
    for (const Edge& e : n.inputs) most = std::max(most, model.elements(e.view.dims));
    total += most;
  }
  return total;
}

}  // namespace luminal::egraph
