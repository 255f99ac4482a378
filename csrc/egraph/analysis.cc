// Facts of an e-node from its children: shape and dtype as the HLIR builders give them, a
// folded uniform value computed exactly as the interpreter would (double arithmetic, rounded
// to the dtype on store; Int wraps to 32 bits; Bool Add/Mul are or/and), and non-negativity.
#include "egraph/analysis.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "egraph/egraph.h"

namespace luminal::egraph {

namespace {
double float_to_int(double f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483647.0) return 2147483647.0;
  if (f <= -2147483648.0) return -2147483648.0;
  return std::trunc(f);
}

double unary(OpKind op, double x) {
  switch (op) {
    case OpKind::Log2:
      return std::log2(x);
    case OpKind::Exp2:
      return std::exp2(x);
    case OpKind::Sin:
      return std::sin(x);
    case OpKind::Sqrt:
      return std::sqrt(x);
    default:
      return 1.0 / x;
  }
}

double binary(OpKind op, double a, double b, DType operand) {
  if (is_float(operand)) {
    switch (op) {
      case OpKind::Add:
        return a + b;
      case OpKind::Mul:
        return a * b;
      case OpKind::Mod:
        return std::fmod(a, b);
      default:
        return a < b ? 1.0 : 0.0;
    }
  }
  auto x = static_cast<int64_t>(a);
  auto y = static_cast<int64_t>(b);
  bool boolean = operand == DType::Bool;
  switch (op) {
    case OpKind::Add:
      return static_cast<double>(boolean ? (x || y) : x + y);
    case OpKind::Mul:
      return static_cast<double>(boolean ? (x && y) : x * y);
    case OpKind::Mod:
      return static_cast<double>(y == 0 ? 0 : x % y);
    default:
      return x < y ? 1.0 : 0.0;
  }
}

bool is_nonneg(double v) { return std::isnan(v) || v >= 0; }
}  // namespace

double round_to_dtype(double v, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return static_cast<float>(v);
    case DType::F16:
      return f16_to_f32(f32_to_f16(static_cast<float>(v)));
    case DType::BF16:
      return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
    case DType::Int:
      return static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v)));
    case DType::Bool:
      return (v != 0 || std::isnan(v)) ? 1.0 : 0.0;
  }
  return v;
}

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
        double v = is_float(a.dtype) ? a.value : float_to_int(a.value);
        d.uniform = round_to_dtype(v, a.dtype);
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
      if (auto u = uni(0)) d.uniform = round_to_dtype(unary(n.op, *u), d.dtype);
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
      if (a && b) d.uniform = round_to_dtype(binary(n.op, *a, *b, operand), d.dtype);
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
      if (auto u = uni(0)) {
        double v = *u;
        if (is_float(from) && !is_float(d.dtype) && d.dtype != DType::Bool) v = float_to_int(v);
        d.uniform = round_to_dtype(v, d.dtype);
      }
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
