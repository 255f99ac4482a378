// The typing rule of every op: a node's dtype and shape from its op, its own attributes and its
// operands' dtypes and views. The one definition that the graph builders (ir/graph.cc, which
// check their operands first and raise the user's errors) and the e-graph's analysis
// (egraph/analysis.cc) both call. Not here: checking operands, facts about values.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace luminal {

// An operand as the typing rule sees it: its dtype, read through `view`.
struct Operand {
  DType dtype;
  const ShapeTracker* view;
};

struct NodeType {
  DType dtype;
  std::vector<Expr> shape;
};

// `attrs` holds the node's own attributes: dtype (Input, Constant, Cast), shape (Input, Iota),
// axis (reductions); the other fields are not read.
NodeType infer(OpKind op, const Node& attrs, const std::vector<Operand>& operands);

}  // namespace luminal
