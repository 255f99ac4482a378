// Facts of an e-node from its children: shape and dtype by the HLIR's typing rule (ir/infer.h), a
// folded uniform value computed exactly as the interpreter would (the scalar semantics of
// ir/scalar_ops.h, rounded to the dtype as a store rounds), and non-negativity.
#include "egraph/analysis.h"

#include <cmath>

#include "egraph/egraph.h"
#include "ir/infer.h"

namespace luminal::egraph {

namespace {
bool is_nonneg(double v) { return std::isnan(v) || v >= 0; }
}  // namespace

namespace {
// The attributes of a node without any (an unscheduled elementwise node).
const Node kNoAttrs{OpKind::Add, {}};

// Facts of an elementwise node: its value where every operand is uniform, and its sign.
void elementwise_facts(const ENode& n, const std::vector<std::optional<double>>& uniform,
                       const std::vector<const ClassData*>& kids, ClassData& d) {
  if (is_unary(n.op)) {
    if (uniform[0]) d.uniform = round_to_dtype(unary_eval(n.op, *uniform[0]), d.dtype);
    OpSign sign = op_sign(n.op);
    d.nonneg = sign == OpSign::Always || (sign == OpSign::IfOperand && kids[0]->nonneg);
    return;
  }
  DType operand = kids[0]->dtype;
  if (uniform[0] && uniform[1]) {
    d.uniform = round_to_dtype(binary_eval(n.op, operand, *uniform[0], *uniform[1]), d.dtype);
  }
  bool both = kids[0]->nonneg && kids[1]->nonneg;
  bool square = n.op == OpKind::Mul && is_float(operand) && n.children[0] == n.children[1];
  if (n.op == OpKind::LessThan) {
    d.nonneg = true;
  } else if (n.op == OpKind::Mod) {
    d.nonneg = kids[0]->nonneg;
  } else {
    d.nonneg = (both && (is_float(operand) || operand == DType::Bool)) || square;
  }
}
}  // namespace

ClassData node_facts(const EGraph& g, const ENode& n) {
  ClassData d;
  std::vector<const ClassData*> kids;
  std::vector<Operand> operands;
  // The uniform value of each child read through its view: padding reads as 0.
  std::vector<std::optional<double>> uniform;
  for (const EEdge& e : n.children) {
    const ClassData& c = g.data(e.cls);
    const ShapeTracker& view = g.view(e.view);
    kids.push_back(&c);
    operands.push_back({c.dtype, &view});
    bool padded = c.uniform && view.has_mask() && *c.uniform != 0;
    uniform.push_back(padded ? std::nullopt : c.uniform);
  }
  const Node& attrs = n.attr >= 0 ? g.attr(n.attr).node : kNoAttrs;
  NodeType type = infer(n.op, attrs, operands);
  d.dtype = type.dtype;
  d.shape = std::move(type.shape);
  if (is_unary(n.op) || is_binary(n.op)) {
    elementwise_facts(n, uniform, kids, d);
    return d;
  }
  switch (n.op) {
    case OpKind::Constant:
      d.has_constant = true;
      if (!attrs.expr) {
        d.uniform = round_to_dtype(attrs.value, attrs.dtype);
        d.nonneg = is_nonneg(*d.uniform);
      }
      break;
    case OpKind::SumReduce:
    case OpKind::MaxReduce: {
      const ShapeTracker& view = *operands[0].view;
      auto length = view.dims[attrs.axis].try_const();
      bool some = length && *length > 0;
      if (n.op == OpKind::MaxReduce && some && !view.axis_masked(attrs.axis)) {
        d.uniform = uniform[0];
      }
      bool float_or_bool = is_float(d.dtype) || d.dtype == DType::Bool;
      d.nonneg = kids[0]->nonneg && (n.op == OpKind::SumReduce ? float_or_bool : some);
      break;
    }
    case OpKind::Gather:
      d.nonneg = kids[0]->nonneg;
      break;
    case OpKind::Cast:
    case OpKind::Output:
      if (uniform[0]) d.uniform = round_to_dtype(*uniform[0], d.dtype);
      d.nonneg = kids[0]->nonneg;
      d.has_constant = kids[0]->has_constant && kids[0]->dtype == d.dtype;
      break;
    default:
      break;  // Input, Iota: no facts beyond their type
  }
  return d;
}

bool join_facts(ClassData& a, const ClassData& b, bool* changed) {
  if (a.dtype != b.dtype || a.shape != b.shape) return false;
  if (!a.uniform && b.uniform) {
    a.uniform = b.uniform;
    *changed = true;
  }
  if (!a.nonneg && b.nonneg) {
    a.nonneg = true;
    *changed = true;
  }
  if (!a.has_constant && b.has_constant) {
    a.has_constant = true;
    *changed = true;
  }
  return true;
}

}  // namespace luminal::egraph
