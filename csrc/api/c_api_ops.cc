// The C API's primitive ops and movement (views), over the Graph builders (luminal.h).
#include <optional>
#include <string>
#include <vector>

#include "api/c_api_handles.h"

using namespace luminal;
using namespace luminal::capi;

namespace {

lm_tensor* unary(lm_graph* graph, OpKind op, const lm_tensor* a, const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.unary(op, edge_of(s, a, fn, "a")));
  });
}

lm_tensor* binary(lm_graph* graph, OpKind op, const lm_tensor* a, const lm_tensor* b,
                  const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.binary(op, edge_of(s, a, fn, "a"), edge_of(s, b, fn, "b")));
  });
}

lm_tensor* reduce(lm_graph* graph, OpKind op, const lm_tensor* a, int32_t axis, const char* fn) {
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    return node_tensor(s, s.graph.reduce(op, e, axis_of(axis, e.view.rank())));
  });
}

// Python's slice-bound rule: negatives count from the end, then clamp to [0, n].
Expr clamp_index(int64_t i, const Expr& n) {
  if (i < 0) return max(n + Expr(i), Expr(0));
  return min(Expr(i), n);
}

}  // namespace

extern "C" {

// ---- primitives -------------------------------------------------------------------------

lm_tensor* lm_log2(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Log2, a, "lm_log2");
}
lm_tensor* lm_exp2(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Exp2, a, "lm_exp2");
}
lm_tensor* lm_sin(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Sin, a, "lm_sin");
}
lm_tensor* lm_sqrt(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Sqrt, a, "lm_sqrt");
}
lm_tensor* lm_recip(lm_graph* g, const lm_tensor* a) {
  return unary(g, OpKind::Recip, a, "lm_recip");
}

lm_tensor* lm_add(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::Add, a, b, "lm_add");
}
lm_tensor* lm_mul(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::Mul, a, b, "lm_mul");
}
lm_tensor* lm_mod(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::Mod, a, b, "lm_mod");
}
lm_tensor* lm_less_than(lm_graph* g, const lm_tensor* a, const lm_tensor* b) {
  return binary(g, OpKind::LessThan, a, b, "lm_less_than");
}

lm_status lm_broadcast(lm_graph* graph, const lm_tensor* a, const lm_tensor* b,
                       lm_tensor** a_out, lm_tensor** b_out) {
  const char* fn = "lm_broadcast";
  return guard([&] {
    GraphState& s = state_of(graph, fn);
    Edge ea = edge_of(s, a, fn, "a");
    Edge eb = edge_of(s, b, fn, "b");
    if (!a_out || !b_out) throw InvalidArgument(fn_msg(fn, "a_out or b_out is NULL"));
    std::string shapes = ea.view.dims_string() + " and " + eb.view.dims_string();
    while (ea.view.rank() < eb.view.rank()) ea.view = ea.view.insert_axis(0, Expr(1));
    while (eb.view.rank() < ea.view.rank()) eb.view = eb.view.insert_axis(0, Expr(1));
    for (size_t k = 0; k < ea.view.rank(); ++k) {
      Expr da = ea.view.dims[k];
      Expr db = eb.view.dims[k];
      if (da == db) continue;
      int axis = static_cast<int>(k);
      if (da == Expr(1)) {
        ea.view = ea.view.expand_axis(axis, db);
      } else if (db == Expr(1)) {
        eb.view = eb.view.expand_axis(axis, da);
      } else {
        throw ShapeError(fn_msg(fn, "shapes " + shapes + " do not broadcast (dims " +
                                        da.to_string() + " and " + db.to_string() + ")"));
      }
    }
    *a_out = new_tensor(s, ea.node, ea.view);
    *b_out = new_tensor(s, eb.node, eb.view);
  });
}

lm_tensor* lm_sum_reduce(lm_graph* g, const lm_tensor* a, int32_t axis) {
  return reduce(g, OpKind::SumReduce, a, axis, "lm_sum_reduce");
}
lm_tensor* lm_max_reduce(lm_graph* g, const lm_tensor* a, int32_t axis) {
  return reduce(g, OpKind::MaxReduce, a, axis, "lm_max_reduce");
}

lm_tensor* lm_cast(lm_graph* graph, const lm_tensor* a, lm_dtype dtype) {
  const char* fn = "lm_cast";
  return build(graph, fn, [&](GraphState& s) {
    return node_tensor(s, s.graph.cast(edge_of(s, a, fn, "a"), dtype_of(dtype, fn)));
  });
}

lm_tensor* lm_gather(lm_graph* graph, const lm_tensor* data, const lm_tensor* indices) {
  const char* fn = "lm_gather";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& d = edge_of(s, data, fn, "data");
    return node_tensor(s, s.graph.gather(d, edge_of(s, indices, fn, "indices")));
  });
}

// ---- movement ---------------------------------------------------------------------------

lm_tensor* lm_permute(lm_graph* graph, const lm_tensor* a, const int32_t* axes, int32_t n_axes) {
  const char* fn = "lm_permute";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    if (n_axes < 0 || (n_axes > 0 && !axes)) throw InvalidArgument(fn_msg(fn, "bad axes"));
    std::vector<int> order;
    for (int32_t k = 0; k < n_axes; ++k) order.push_back(axis_of(axes[k], e.view.rank()));
    return new_tensor(s, e.node, e.view.permute(order));
  });
}

lm_tensor* lm_reshape(lm_graph* graph, const lm_tensor* a, const int64_t* dims, int32_t rank) {
  const char* fn = "lm_reshape";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    std::vector<Expr> shape = dims_of(dims, rank, fn);
    if (std::optional<ShapeTracker> view = e.view.reshape(shape)) {
      return new_tensor(s, e.node, *view);
    }
    // The view cannot express it: materialize a contiguous copy, which always reshapes.
    NodeId copy = s.graph.cast(e, s.graph.node(e.node).dtype);
    return new_tensor(s, copy, ShapeTracker::contiguous(shape));
  });
}

lm_tensor* lm_insert_axis(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t size) {
  const char* fn = "lm_insert_axis";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    std::vector<Expr> size_dim = dims_of(&size, 1, fn);
    int position = axis_of(axis, e.view.rank() + 1);
    return new_tensor(s, e.node, e.view.insert_axis(position, size_dim[0]));
  });
}

lm_tensor* lm_expand_axis(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t size) {
  const char* fn = "lm_expand_axis";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    std::vector<Expr> size_dim = dims_of(&size, 1, fn);
    return new_tensor(s, e.node, e.view.expand_axis(axis_of(axis, e.view.rank()), size_dim[0]));
  });
}

lm_tensor* lm_remove_axis(lm_graph* graph, const lm_tensor* a, int32_t axis) {
  const char* fn = "lm_remove_axis";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    return new_tensor(s, e.node, e.view.remove_axis(axis_of(axis, e.view.rank())));
  });
}

lm_tensor* lm_slice(lm_graph* graph, const lm_tensor* a, int32_t axis, int64_t start,
                    int64_t stop, int64_t step) {
  const char* fn = "lm_slice";
  return build(graph, fn, [&](GraphState& s) {
    const Edge& e = edge_of(s, a, fn, "a");
    int ax = axis_of(axis, e.view.rank());
    if (ax < 0 || static_cast<size_t>(ax) >= e.view.rank()) {
      throw ShapeError(fn_msg(fn, "axis " + std::to_string(axis) + " is out of range for shape " +
                                      e.view.dims_string()));
    }
    const Expr& n = e.view.dims[ax];
    ShapeTracker view = e.view.slice(ax, clamp_index(start, n), clamp_index(stop, n), step);
    return new_tensor(s, e.node, view);
  });
}

}  // extern "C"
