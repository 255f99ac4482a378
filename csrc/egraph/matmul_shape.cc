// matmul_shape: the stride test on the two views of a Mul under a SumReduce.
#include "egraph/matmul_shape.h"

namespace luminal::egraph {

namespace {
bool zero(const Expr& e) { return e.try_const() == std::optional<int64_t>(0); }
}  // namespace

std::optional<bool> matmul_a_first(const EGraph& g, const EEdge& a, const EEdge& b, int axis) {
  const ShapeTracker& va = g.view(a.view);
  const ShapeTracker& vb = g.view(b.view);
  const size_t rank = va.rank();
  if (rank < 3 || vb.rank() != rank || axis < 0 || static_cast<size_t>(axis) >= rank) {
    return std::nullopt;
  }
  if (g.view_masked(a.view) || g.view_masked(b.view)) return std::nullopt;
  // m and n: the last two output axes (every axis but `axis`).
  const size_t n = axis == static_cast<int>(rank) - 1 ? rank - 2 : rank - 1;
  const size_t m = n - 1 == static_cast<size_t>(axis) ? n - 2 : n - 1;
  const ShapeTracker* x = &va;
  const ShapeTracker* y = &vb;
  if (!zero(x->strides[n]) || !zero(y->strides[m])) std::swap(x, y);
  if (!zero(x->strides[n]) || !zero(y->strides[m])) return std::nullopt;
  if (zero(x->strides[m]) || zero(y->strides[n])) return std::nullopt;
  return x == &va;
}

std::optional<MatmulShape> matmul_shape(const EGraph& g, const EEdge& a, const EEdge& b,
                                        int axis) {
  std::optional<bool> a_first = matmul_a_first(g, a, b, axis);
  if (!a_first) return std::nullopt;
  const ShapeTracker& va = g.view(a.view);
  const ShapeTracker& y = g.view(*a_first ? b.view : a.view);
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(va.rank()); ++i) {
    if (i != axis) out.push_back(i);
  }
  MatmulShape s;
  s.b_shared = true;
  for (size_t i = 0; i + 2 < out.size(); ++i) {
    s.batch = s.batch * va.dims[out[i]];
    if (!zero(y.strides[out[i]]) && va.dims[out[i]].try_const() != std::optional<int64_t>(1)) {
      s.b_shared = false;
    }
  }
  s.m = va.dims[out[out.size() - 2]];
  s.n = va.dims[out.back()];
  s.k = va.dims[axis];
  s.a_first = *a_first;
  s.b_parameter = holds_parameter(g, (*a_first ? b : a).cls, true);
  return s;
}

bool holds_parameter(const EGraph& g, Id c, bool through_cast) {
  for (const ENode& n : g.nodes(c)) {
    if (n.op == OpKind::Input && n.attr >= 0 && g.attr(n.attr).node.parameter) return true;
    if (through_cast && n.op == OpKind::Cast && holds_parameter(g, n.children[0].cls, false)) {
      return true;
    }
  }
  return false;
}

std::optional<MatmulShape> matmul_shape(const EGraph& g, const ENode& reduce) {
  if (reduce.op != OpKind::SumReduce || reduce.attr < 0 || !g.is_identity(reduce.children[0])) {
    return std::nullopt;
  }
  int axis = g.attr(reduce.attr).node.axis;
  for (const ENode& n : g.nodes(reduce.children[0].cls)) {
    if (n.op != OpKind::Mul) continue;
    if (auto s = matmul_shape(g, n.children[0], n.children[1], axis)) return s;
  }
  return std::nullopt;
}

}  // namespace luminal::egraph
