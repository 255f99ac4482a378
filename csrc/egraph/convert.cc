// Graph -> e-graph and extracted program -> Graph.
#include "egraph/convert.h"

#include <unordered_map>

#include "core/errors.h"
#include "egraph/program_text.h"
#include "ir/node_text.h"

namespace luminal::egraph {

std::vector<EEdge> add_graph(EGraph& g, const Graph& graph, std::vector<Id>* classes) {
  std::unordered_map<NodeId, int> input_pos;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    input_pos[graph.inputs()[i]] = static_cast<int>(i);
  }
  std::vector<Id> cls(graph.size(), 0xFFFFFFFFu);
  auto attr_of = [&](const Node& n, NodeId id) -> AttrId {
    if (!has_attributes(n.op) && n.schedule.empty()) return -1;
    Attr a;
    a.node = attributes_of(n);
    if (n.op == OpKind::Input) a.input_index = input_pos.at(id);
    // A float constant is its value rounded to its dtype (as every store rounds it), so
    // constants that are equal in their dtype are one e-node.
    if (n.op == OpKind::Constant && !n.expr && is_float(n.dtype)) {
      a.node.value = round_to_dtype(n.value, n.dtype);
    }
    return g.intern_attr(a);
  };
  // Every input, used or not, so programs can recreate all of them.
  for (NodeId id : graph.inputs()) {
    cls[id] = g.add(ENode{OpKind::Input, attr_of(graph.node(id), id), {}});
  }
  std::vector<EEdge> roots;
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    if (n.op == OpKind::Input) continue;
    std::vector<EEdge> kids;
    for (const Edge& e : n.inputs) kids.push_back({cls[e.node], g.intern_view(e.view)});
    if (n.op == OpKind::Output) continue;
    cls[id] = g.add(ENode{n.op, attr_of(n, id), std::move(kids)});
  }
  for (NodeId id : graph.outputs()) {
    const Edge& e = graph.node(id).inputs[0];
    roots.push_back({cls[e.node], g.intern_view(e.view)});
  }
  if (classes) *classes = std::move(cls);
  return roots;
}

Candidate to_candidate(const EGraph& g, const Extracted& ex, const std::vector<EEdge>& roots,
                       const Graph& original) {
  Candidate p;
  p.cost = ex.cost;
  for (NodeId id : original.inputs()) {
    const Node& n = original.node(id);
    p.inputs.push_back(p.graph.input(n.name, n.shape, n.dtype, n.parameter));
  }
  std::unordered_map<Id, NodeId> made;
  auto edge = [&](const EEdge& e) {
    return Edge{made.at(g.find(e.cls)), g.view(e.view)};
  };
  for (const auto& [cls, n] : ex.order) {
    if (n.op == OpKind::Output) throw InternalError("extract: an Output node in the e-graph");
    NodeId id = -1;
    if (n.op == OpKind::Input) {
      id = p.inputs.at(g.attr(n.attr).input_index);
    } else {
      std::vector<Edge> inputs;
      for (const EEdge& e : n.children) inputs.push_back(edge(e));
      id = p.graph.add_like(n.attr >= 0 ? g.attr(n.attr).node : Node{n.op, {}}, inputs);
    }
    made[g.find(cls)] = id;
    if (n.op != OpKind::Input) {
      p.node_class.resize(p.graph.size(), -1);
      p.node_class[id] = g.find(cls);
    }
  }
  for (const EEdge& r : roots) p.outputs.push_back(p.graph.output(edge(r)));
  p.node_class.resize(p.graph.size(), -1);
  return canonical_candidate(p, original);
}

Candidate identity_program(const Graph& original) {
  Candidate p;
  p.graph = original;
  p.inputs = original.inputs();
  p.outputs = original.outputs();
  p.node_class.assign(original.size(), -1);
  return p;
}

}  // namespace luminal::egraph
