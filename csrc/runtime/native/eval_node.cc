// The interpreter's meaning of each computed op: one function per kind of op, each walking the
// output's index space and reading its operands through their evaluated views. Elementwise
// arithmetic is ir/scalar_ops.h's. Not here: the order of nodes, buffers' lifetimes (native.cc).
#include "runtime/native/eval_node.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/scalar_ops.h"

namespace luminal::native {

namespace {
void eval_unary(const NodeEval& e) {
  for_each_index(e.shape, {&e.views[0]}, [&](int64_t flat, const auto&, const auto& at) {
    store_f(e.out, flat, unary_eval(e.n.op, read_f(e.input(0), at[0])));
  });
}

void eval_binary(const NodeEval& e) {
  DType operand = e.input(0).dtype;
  const std::vector<const ConcreteView*> views = {&e.views[0], &e.views[1]};
  for_each_index(e.shape, views, [&](int64_t flat, const auto&, const auto& at) {
    if (is_float(operand)) {
      double a = read_f(e.input(0), at[0]);
      double b = read_f(e.input(1), at[1]);
      store_any(e.out, flat, binary_float(e.n.op, a, b));
    } else {
      int64_t a = read_i(e.input(0), at[0]);
      int64_t b = read_i(e.input(1), at[1]);
      store_i(e.out, flat, binary_int(e.n.op, a, b, operand));
    }
  });
}

void eval_reduce(const NodeEval& e) {
  // Each output folds its elements in the order r = 0, 1, ... of the reduced axis:
  // per output (the axis innermost in memory), or over every output at once per r (a
  // strided axis, such as a matmul's k, which would miss the cache on every element).
  const ConcreteView& v = e.views[0];
  size_t axis = static_cast<size_t>(e.n.axis);
  bool is_sum = e.n.op == OpKind::SumReduce;
  bool floaty = is_float(e.input(0).dtype);
  double init_f = is_sum ? 0.0 : -INFINITY;
  int64_t init_i = is_sum || e.input(0).dtype == DType::Bool
                       ? 0 : std::numeric_limits<int32_t>::min();
  auto fold_f = [&](double& acc, int64_t p) {
    double x = read_f(e.input(0), p);
    if (is_sum) {
      acc += x;
    } else if (std::isnan(x) || x > acc) {
      acc = std::isnan(acc) ? acc : x;
    }
  };
  auto fold_i = [&](int64_t& acc, int64_t p) {
    int64_t x = read_i(e.input(0), p);
    acc = is_sum ? acc + x : std::max(acc, x);
  };
  if (reduce_axis_outer(v, axis)) {
    ConcreteView row = without_axis(v, axis);
    int64_t count = e.out.numel();
    std::vector<double> acc_f(floaty ? count : 0, init_f);
    std::vector<int64_t> acc_i(floaty ? 0 : count, init_i);
    for (int64_t r = 0; r < v.dims[axis]; ++r) {
      row.offset = v.offset + r * v.strides[axis];
      bool padding = r < v.lo[axis] || r >= v.hi[axis];
      for_each_index(e.shape, {&row}, [&](int64_t flat, const auto&, const auto& at) {
        int64_t p = padding ? -1 : at[0];
        if (floaty) {
          fold_f(acc_f[flat], p);
        } else {
          fold_i(acc_i[flat], p);
        }
      });
    }
    for (int64_t flat = 0; flat < count; ++flat) {
      if (floaty) {
        store_f(e.out, flat, acc_f[flat]);
      } else {
        store_i(e.out, flat, acc_i[flat]);
      }
    }
    return;
  }
  bool masked = has_mask(v);
  std::vector<int64_t> full(v.dims.size());
  for_each_index(e.shape, {}, [&](int64_t flat, const std::vector<int64_t>& idx,
                                const auto&) {
    for (size_t k = 0, j = 0; k < full.size(); ++k) full[k] = k == axis ? 0 : idx[j++];
    int64_t first = masked ? -1 : locate(v, full);
    double acc_f = init_f;
    int64_t acc_i = init_i;
    for (int64_t r = 0; r < v.dims[axis]; ++r) {
      full[axis] = r;
      int64_t p = masked ? locate(v, full) : first + r * v.strides[axis];
      if (floaty) {
        fold_f(acc_f, p);
      } else {
        fold_i(acc_i, p);
      }
    }
    if (floaty) {
      store_f(e.out, flat, acc_f);
    } else {
      store_i(e.out, flat, acc_i);
    }
  });
}

void eval_gather(const NodeEval& e) {
  const ConcreteView& dv = e.views[0];
  int64_t data_numel = checked_numel(dv.dims, [&] {
    return "execute: the data Gather %" + std::to_string(e.id) + " reads";
  });
  std::vector<int64_t> didx(dv.dims.size());
  for_each_index(e.shape, {&e.views[1]}, [&](int64_t flat, const auto&, const auto& at) {
    int64_t g = read_i(e.input(1), at[0]);
    if (g < 0 || g >= data_numel) {
      throw ShapeError("Gather: index " + std::to_string(g) + " is out of range for data of " +
                       std::to_string(data_numel) + " elements (shape " +
                       dims_to_string(e.n.inputs[0].view.dims) + ")");
    }
    for (size_t k = dv.dims.size(); k-- > 0;) {
      didx[k] = g % dv.dims[k];
      g /= dv.dims[k];
    }
    if (is_float(e.n.dtype)) {
      store_f(e.out, flat, read_f(e.input(0), dv, didx));
    } else {
      store_i(e.out, flat, read_i(e.input(0), dv, didx));
    }
  });
}

// A Cast, or an Output (a copy in the operand's dtype).
void eval_cast(const NodeEval& e) {
  bool from_float = is_float(e.input(0).dtype) || is_quantized(e.input(0).dtype);
  for_each_index(e.shape, {&e.views[0]}, [&](int64_t flat, const auto&, const auto& at) {
    if (from_float) {
      store_any(e.out, flat, read_f(e.input(0), at[0]));
    } else if (is_float(e.n.dtype)) {
      store_f(e.out, flat, static_cast<double>(read_i(e.input(0), at[0])));
    } else {
      store_i(e.out, flat, read_i(e.input(0), at[0]));
    }
  });
}
}  // namespace

void eval_node(const NodeEval& e, const DynMap& dyn_map) {
  const Node& n = e.n;
  if (is_unary(n.op)) return eval_unary(e);
  if (is_binary(n.op)) return eval_binary(e);
  switch (n.op) {
    case OpKind::Constant:
      store_any(e.out, 0, n.expr ? static_cast<double>(n.expr->eval(dyn_map)) : n.value);
      return;
    case OpKind::Iota: {
      DynMap env = dyn_map;
      for (int64_t i = 0; i < e.shape[0]; ++i) {
        env["z"] = i;
        store_i(e.out, i, n.expr->eval(env));
      }
      return;
    }
    case OpKind::SumReduce:
    case OpKind::MaxReduce:
      return eval_reduce(e);
    case OpKind::Gather:
      return eval_gather(e);
    case OpKind::Cast:
    case OpKind::Output:
      return eval_cast(e);
    default:
      throw InternalError(std::string("eval_node: ") + op_name(n.op) + " is not computed");
  }
}

}  // namespace luminal::native
