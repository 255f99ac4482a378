// matmul_shape: the stride test on the two views of a Mul under a SumReduce.
#include "egraph/matmul_shape.h"

namespace luminal::egraph {

namespace {
bool zero(const Expr& e) { return e.try_const() == std::optional<int64_t>(0); }
}  // namespace

std::optional<MatmulShape> matmul_shape(const EGraph& g, const EEdge& a, const EEdge& b,
                                        int axis) {
  const ShapeTracker& va = g.view(a.view);
  const ShapeTracker& vb = g.view(b.view);
  int rank = static_cast<int>(va.rank());
  if (rank < 3 || vb.rank() != va.rank() || axis < 0 || axis >= rank) return std::nullopt;
  if (va.has_mask() || vb.has_mask()) return std::nullopt;
  std::vector<int> out;
  for (int i = 0; i < rank; ++i) {
    if (i != axis) out.push_back(i);
  }
  int m = out[out.size() - 2];
  int n = out.back();
  const ShapeTracker* x = &va;
  const ShapeTracker* y = &vb;
  if (!zero(x->strides[n]) || !zero(y->strides[m])) std::swap(x, y);
  if (!zero(x->strides[n]) || !zero(y->strides[m])) return std::nullopt;
  if (zero(x->strides[m]) || zero(y->strides[n])) return std::nullopt;
  MatmulShape s;
  s.b_shared = true;
  for (size_t i = 0; i + 2 < out.size(); ++i) {
    s.batch = s.batch * va.dims[out[i]];
    if (!zero(y->strides[out[i]]) && va.dims[out[i]].try_const() != std::optional<int64_t>(1)) {
      s.b_shared = false;
    }
  }
  s.m = va.dims[m];
  s.n = va.dims[n];
  s.k = va.dims[axis];
  s.a_first = x == &va;
  return s;
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
