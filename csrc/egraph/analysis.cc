// Facts of an e-node from its children: shape and dtype as the HLIR builders give them, a
// folded uniform value computed exactly as the interpreter would (the scalar semantics of
// ir/scalar_ops.h, rounded to the dtype as a store rounds), and non-negativity.
#include "egraph/analysis.h"

#include <cmath>

#include "egraph/egraph.h"

namespace luminal::egraph {

namespace {
bool is_nonneg(double v) { return std::isnan(v) || v >= 0; }
}  // namespace

ClassData node_facts(const EGraph& g, const ENode& n) {
  ClassData d;
  auto child = [&](size_t k) -> const ClassData& { return g.data(n.children[k].cls); };
  auto view = [&](size_t k) -> const ShapeTracker& { return g.view(n.children[k].view); };
  // The uniform value read through child k's view: padding reads as 0.
  auto uni = [&](size_t k) -> std::optional<double> {
    const auto& u = child(k).uniform;
    if (!u || (view(k).has_mask() && *u != 0)) return std::nullopt;
    return u;
  };
  switch (n.op) {
    case OpKind::Input:
      d.dtype = g.attr(n.attr).node.dtype;
      d.shape = g.attr(n.attr).node.shape;
      break;
    case OpKind::Constant: {
      const Node& a = g.attr(n.attr).node;
      d.dtype = a.dtype;
      d.has_constant = true;
      if (!a.expr) {
        d.uniform = round_to_dtype(a.value, a.dtype);
        d.nonneg = is_nonneg(*d.uniform);
      }
      break;
    }
    case OpKind::Iota:
      d.dtype = DType::Int;
      d.shape = g.attr(n.attr).node.shape;
      break;
    case OpKind::Log2:
    case OpKind::Exp2:
    case OpKind::Sin:
    case OpKind::Sqrt:
    case OpKind::Recip:
      d.dtype = child(0).dtype;
      d.shape = view(0).dims;
      if (auto u = uni(0)) d.uniform = round_to_dtype(unary_eval(n.op, *u), d.dtype);
      d.nonneg = n.op == OpKind::Exp2 || n.op == OpKind::Sqrt ||
                 (n.op == OpKind::Recip && child(0).nonneg);
      break;
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::Mod:
    case OpKind::LessThan: {
      DType operand = child(0).dtype;
      d.dtype = n.op == OpKind::LessThan ? DType::Bool : operand;
      d.shape = view(0).dims;
      auto a = uni(0);
      auto b = uni(1);
      if (a && b) d.uniform = round_to_dtype(binary_eval(n.op, operand, *a, *b), d.dtype);
      bool both = child(0).nonneg && child(1).nonneg;
      bool square = n.op == OpKind::Mul && is_float(operand) && n.children[0] == n.children[1];
      if (n.op == OpKind::LessThan) {
        d.nonneg = true;
      } else if (n.op == OpKind::Mod) {
        d.nonneg = child(0).nonneg;
      } else {
        d.nonneg = (both && (is_float(operand) || operand == DType::Bool)) || square;
      }
      break;
    }
    case OpKind::SumReduce:
    case OpKind::MaxReduce: {
      int axis = g.attr(n.attr).node.axis;
      d.dtype = child(0).dtype;
      d.shape = view(0).dims;
      d.shape.erase(d.shape.begin() + axis);
      auto length = view(0).dims[axis].try_const();
      bool some = length && *length > 0;
      if (n.op == OpKind::MaxReduce && some && !view(0).axis_masked(axis)) d.uniform = uni(0);
      bool float_or_bool = is_float(d.dtype) || d.dtype == DType::Bool;
      d.nonneg = child(0).nonneg && (n.op == OpKind::SumReduce ? float_or_bool : some);
      break;
    }
    case OpKind::Gather:
      d.dtype = child(0).dtype;
      d.shape = view(1).dims;
      d.nonneg = child(0).nonneg;
      break;
    case OpKind::Cast:
    case OpKind::Output: {
      d.dtype = n.op == OpKind::Cast ? g.attr(n.attr).node.dtype : child(0).dtype;
      d.shape = view(0).dims;
      DType from = child(0).dtype;
      if (auto u = uni(0)) d.uniform = round_to_dtype(*u, d.dtype);
      d.nonneg = child(0).nonneg;
      d.has_constant = child(0).has_constant && from == d.dtype;
      break;
    }
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
