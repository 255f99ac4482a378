// The reference interpreter. Each node is evaluated in topological order into a dense
// buffer; inputs are read through their views with concrete (dyn_map-evaluated) strides.
// Buffers are freed after their last reader. Elementwise arithmetic is ir/scalar_ops.h's.
#include "runtime/native/native.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/errors.h"
#include "core/quant.h"
#include "core/sizes.h"
#include "ir/scalar_ops.h"

namespace luminal {

namespace {

// A view with every expression evaluated.
struct ConcreteView {
  std::vector<int64_t> dims, strides, lo, hi;
  int64_t offset = 0;
};

ConcreteView evaluate(const ShapeTracker& st, const DynMap& env) {
  ConcreteView v;
  for (size_t k = 0; k < st.rank(); ++k) {
    v.dims.push_back(st.dims[k].eval(env));
    v.strides.push_back(st.strides[k].eval(env));
    v.lo.push_back(st.mask_lo[k].eval(env));
    v.hi.push_back(st.mask_hi[k].eval(env));
  }
  v.offset = st.offset.eval(env);
  return v;
}

std::vector<int64_t> evaluate(const std::vector<Expr>& dims, const DynMap& env) {
  std::vector<int64_t> out;
  for (const Expr& d : dims) {
    int64_t v = d.eval(env);
    if (v < 0) throw ShapeError("dimension " + d.to_string() + " is negative (" +
                                std::to_string(v) + ")");
    out.push_back(v);
  }
  return out;
}

double load_f(const HostBuffer& b, int64_t i) {
  switch (b.dtype) {
    case DType::F32: {
      float v;
      std::memcpy(&v, b.bytes.data() + 4 * i, 4);
      return v;
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, b.bytes.data() + 2 * i, 2);
      return f16_to_f32(v);
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, b.bytes.data() + 2 * i, 2);
      return bf16_to_f32(v);
    }
    case DType::Int: {
      int32_t v;
      std::memcpy(&v, b.bytes.data() + 4 * i, 4);
      return v;
    }
    case DType::Bool:
      return b.bytes[i] ? 1.0 : 0.0;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return dequantize_element(b.dtype, b.bytes.data(), i);
  }
  return 0;
}

int64_t load_i(const HostBuffer& b, int64_t i) {
  if (b.dtype == DType::Int) {
    int32_t v;
    std::memcpy(&v, b.bytes.data() + 4 * i, 4);
    return v;
  }
  if (b.dtype == DType::Bool) return b.bytes[i] ? 1 : 0;
  return float_to_int(load_f(b, i));
}

void store_f(HostBuffer& b, int64_t i, double v) {
  switch (b.dtype) {
    case DType::F32: {
      float f = static_cast<float>(v);
      std::memcpy(b.bytes.data() + 4 * i, &f, 4);
      return;
    }
    case DType::F16: {
      uint16_t h = f32_to_f16(static_cast<float>(v));
      std::memcpy(b.bytes.data() + 2 * i, &h, 2);
      return;
    }
    case DType::BF16: {
      uint16_t h = f32_to_bf16(static_cast<float>(v));
      std::memcpy(b.bytes.data() + 2 * i, &h, 2);
      return;
    }
    case DType::Int:
    case DType::Bool:
      throw InternalError("store_f on an integer buffer");
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      throw InternalError("store_f on a quantized buffer (parameter storage only)");
  }
}

void store_i(HostBuffer& b, int64_t i, int64_t v) {
  if (b.dtype == DType::Bool) {
    b.bytes[i] = v != 0;
    return;
  }
  if (b.dtype != DType::Int) throw InternalError("store_i on a float buffer");
  int32_t w = wrap_to_i32(v);
  std::memcpy(b.bytes.data() + 4 * i, &w, 4);
}

// Stores a value computed in double into any dtype (casts included), as round_to_dtype rounds.
void store_any(HostBuffer& b, int64_t i, double v) {
  if (is_float(b.dtype)) {
    store_f(b, i, v);
  } else {
    store_i(b, i, static_cast<int64_t>(round_to_dtype(v, b.dtype)));
  }
}

// A zeroed buffer of `shape`, its size checked (core/sizes.h) in the name `what` gives.
HostBuffer make_buffer(DType dtype, std::vector<int64_t> shape, const DescribeTensor& what) {
  HostBuffer b;
  b.dtype = dtype;
  b.shape = std::move(shape);
  int64_t bytes = checked_bytes(checked_numel(b.shape, what), dtype, what);
  allocate_bytes(b.bytes, bytes, what);
  return b;
}

// Whether any index of `v` falls in padding (a mask narrower than the dims).
bool has_mask(const ConcreteView& v) {
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (v.lo[k] > 0 || v.hi[k] < v.dims[k]) return true;
  }
  return false;
}

int64_t locate(const ConcreteView& v, const std::vector<int64_t>& idx);

// One loop of a walk over an index space: `size` steps of `step` along dim `dim`.
struct Loop {
  size_t dim;
  int64_t size, step;
};

constexpr int64_t kTile = 32;

// The loops of a walk over `dims`: row-major; or, where a view reads some dim b with unit
// stride and the last dim with a larger one (a transposed read, such as a matmul's weight
// under its broadcast product), dims b and last in kTile x kTile tiles, so that both the
// view and the row-major output stay in cache.
std::vector<Loop> walk(const std::vector<int64_t>& dims,
                       const std::vector<const ConcreteView*>& views) {
  size_t rank = dims.size();
  size_t b = rank;
  if (rank >= 2 && dims[rank - 1] > 1) {
    for (const ConcreteView* v : views) {
      if (std::llabs(v->strides[rank - 1]) <= 1) continue;
      for (size_t k = 0; k + 1 < rank; ++k) {
        if (dims[k] > 1 && std::llabs(v->strides[k]) == 1) b = k;
      }
    }
  }
  std::vector<Loop> loops;
  for (size_t k = 0; k < rank; ++k) {
    if (k != b && !(b < rank && k == rank - 1)) loops.push_back({k, dims[k], 1});
  }
  if (b < rank) {
    loops.push_back({b, (dims[b] + kTile - 1) / kTile, kTile});
    loops.push_back({rank - 1, (dims[rank - 1] + kTile - 1) / kTile, kTile});
    loops.push_back({b, kTile, 1});
    loops.push_back({rank - 1, kTile, 1});
  }
  return loops;
}

// Walks every logical index of `dims` once (walk's order), calling f(flat, index, at): flat
// is the index's row-major position, at[k] the physical element of views[k] (each of rank
// dims.size()) there, or -1 in its padding. Unmasked views' elements advance by their
// strides as the index does; masked ones are located afresh.
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, const std::vector<const ConcreteView*>& views,
                    F f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  size_t rank = dims.size();
  std::vector<int64_t> row_major(rank, 1);
  for (size_t k = rank; k-- > 1;) row_major[k - 1] = row_major[k] * dims[k];
  std::vector<int64_t> idx(rank, 0), at(views.size()), base(views.size());
  std::vector<char> masked(views.size());
  for (size_t v = 0; v < views.size(); ++v) {
    if (views[v]->dims.size() != rank) throw InternalError("a view's rank is not its node's");
    masked[v] = has_mask(*views[v]);
    base[v] = views[v]->offset;
  }
  std::vector<Loop> loops = walk(dims, views);
  bool tiled = loops.size() > rank;
  std::vector<int64_t> count(loops.size(), 0);
  int64_t flat = 0;
  while (true) {
    bool inside = !tiled || (idx[loops.back().dim] < dims[loops.back().dim] &&
                             idx[loops[loops.size() - 2].dim] < dims[loops[loops.size() - 2].dim]);
    if (inside) {
      for (size_t v = 0; v < views.size(); ++v) at[v] = masked[v] ? locate(*views[v], idx) : base[v];
      f(flat, idx, at);
    }
    size_t j = loops.size();
    while (j-- > 0) {
      const Loop& l = loops[j];
      if (++count[j] < l.size) {
        idx[l.dim] += l.step;
        flat += row_major[l.dim] * l.step;
        for (size_t v = 0; v < views.size(); ++v) base[v] += views[v]->strides[l.dim] * l.step;
        break;
      }
      int64_t back = (l.size - 1) * l.step;
      count[j] = 0;
      idx[l.dim] -= back;
      flat -= row_major[l.dim] * back;
      for (size_t v = 0; v < views.size(); ++v) base[v] -= views[v]->strides[l.dim] * back;
    }
    if (j == static_cast<size_t>(-1)) return;
  }
}

// Physical element of a logical index, or -1 when the index falls in padding.
int64_t locate(const ConcreteView& v, const std::vector<int64_t>& idx) {
  int64_t p = v.offset;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < v.lo[k] || idx[k] >= v.hi[k]) return -1;
    p += v.strides[k] * idx[k];
  }
  return p;
}

// Whether a reduction over `axis` of `v` reads memory in order with the axis outermost: its
// stride is larger than that of the innermost kept dim (of more than one element).
bool reduce_axis_outer(const ConcreteView& v, size_t axis) {
  for (size_t k = v.dims.size(); k-- > 0;) {
    if (k == axis || v.dims[k] == 1) continue;
    return std::llabs(v.strides[axis]) > std::llabs(v.strides[k]);
  }
  return false;
}

// `v` without dim `axis` (the view of one slice along it, before its offset is moved).
ConcreteView without_axis(const ConcreteView& v, size_t axis) {
  ConcreteView row;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (k == axis) continue;
    row.dims.push_back(v.dims[k]);
    row.strides.push_back(v.strides[k]);
    row.lo.push_back(v.lo[k]);
    row.hi.push_back(v.hi[k]);
  }
  row.offset = v.offset;
  return row;
}

void check_in_bounds(int64_t p, const HostBuffer& src, const char* op) {
  if (p < 0 || p >= src.numel()) {
    throw InternalError(std::string(op) + ": view reads element " + std::to_string(p) +
                        " of a buffer of " + std::to_string(src.numel()));
  }
}

// The element at physical position p (-1: padding, which reads as zero).
double read_f(const HostBuffer& src, int64_t p) {
  if (p < 0) return 0.0;
  check_in_bounds(p, src, "read");
  return load_f(src, p);
}

int64_t read_i(const HostBuffer& src, int64_t p) {
  if (p < 0) return 0;
  check_in_bounds(p, src, "read");
  return load_i(src, p);
}

double read_f(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx) {
  return read_f(src, locate(v, idx));
}

int64_t read_i(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx) {
  return read_i(src, locate(v, idx));
}

}  // namespace

void NativeRuntime::compile(const Graph& graph, const TuningChoice& choice) {
  if (!choice.params.empty()) {
    throw CompileError("native runtime has no tuning parameters, got " + choice.to_string());
  }
  graph_ = graph;
  order_ = graph_.topo_order();
  last_use_.assign(graph_.size(), -1);
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    for (const Edge& e : graph_.node(order_[pos]).inputs) last_use_[e.node] = static_cast<int>(pos);
  }
  inputs_.clear();
  outputs_.clear();
  compiled_ = true;
}

void NativeRuntime::set_data(NodeId input, const void* data, int64_t count, DType dtype) {
  check_set_data(graph_, compiled_, input, count, dtype);
  HostBuffer b;
  b.dtype = dtype;
  b.shape = {count};
  b.bytes.resize(static_cast<size_t>(storage_bytes(dtype, count)));
  if (count > 0) std::memcpy(b.bytes.data(), data, b.bytes.size());
  inputs_[input] = std::move(b);
}

void NativeRuntime::clear_data() {
  inputs_.clear();
  outputs_.clear();
}

void NativeRuntime::check_ready(const DynMap& dyn_map) const {
  check_compiled(compiled_, "execute");
  check_symbols(graph_.symbols(), dyn_map);
  for (NodeId id : order_) {
    const Node& n = graph_.node(id);
    if (n.op != OpKind::Input) continue;
    auto it = inputs_.find(id);
    int64_t count = it == inputs_.end() ? -1 : it->second.numel();
    check_input_count(graph_, id, count, product(n.shape).eval(dyn_map));
  }
}

void NativeRuntime::execute(const DynMap& dyn_map) {
  check_ready(dyn_map);
  std::vector<HostBuffer> values(graph_.size());
  outputs_.clear();
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    NodeId id = order_[pos];
    const Node& n = graph_.node(id);
    std::vector<int64_t> shape = evaluate(n.shape, dyn_map);
    std::vector<ConcreteView> views;
    for (const Edge& e : n.inputs) views.push_back(evaluate(e.view, dyn_map));
    HostBuffer out =
        make_buffer(n.dtype, shape, [&] { return "execute: " + node_desc(graph_, id, dyn_map); });
    auto in = [&](size_t k) -> const HostBuffer& { return values[n.inputs[k].node]; };
    switch (n.op) {
      case OpKind::Input:
        out.bytes = inputs_.at(id).bytes;
        break;
      case OpKind::Constant:
        store_any(out, 0, n.expr ? static_cast<double>(n.expr->eval(dyn_map)) : n.value);
        break;
      case OpKind::Iota: {
        DynMap env = dyn_map;
        for (int64_t i = 0; i < shape[0]; ++i) {
          env["z"] = i;
          store_i(out, i, n.expr->eval(env));
        }
        break;
      }
      case OpKind::Log2:
      case OpKind::Exp2:
      case OpKind::Sin:
      case OpKind::Sqrt:
      case OpKind::Recip:
        for_each_index(shape, {&views[0]}, [&](int64_t flat, const auto&, const auto& at) {
          store_f(out, flat, unary_eval(n.op, read_f(in(0), at[0])));
        });
        break;
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Mod:
      case OpKind::LessThan: {
        DType operand = in(0).dtype;
        for_each_index(shape, {&views[0], &views[1]}, [&](int64_t flat, const auto&,
                                                           const auto& at) {
          if (is_float(operand)) {
            double a = read_f(in(0), at[0]);
            double b = read_f(in(1), at[1]);
            store_any(out, flat, binary_float(n.op, a, b));
          } else {
            int64_t a = read_i(in(0), at[0]);
            int64_t b = read_i(in(1), at[1]);
            store_i(out, flat, binary_int(n.op, a, b, operand));
          }
        });
        break;
      }
      case OpKind::SumReduce:
      case OpKind::MaxReduce: {
        // Each output folds its elements in the order r = 0, 1, ... of the reduced axis:
        // per output (the axis innermost in memory), or over every output at once per r (a
        // strided axis, such as a matmul's k, which would miss the cache on every element).
        const ConcreteView& v = views[0];
        size_t axis = static_cast<size_t>(n.axis);
        bool is_sum = n.op == OpKind::SumReduce;
        bool floaty = is_float(in(0).dtype);
        double init_f = is_sum ? 0.0 : -INFINITY;
        int64_t init_i = is_sum || in(0).dtype == DType::Bool
                             ? 0 : std::numeric_limits<int32_t>::min();
        auto fold_f = [&](double& acc, int64_t p) {
          double x = read_f(in(0), p);
          if (is_sum) {
            acc += x;
          } else if (std::isnan(x) || x > acc) {
            acc = std::isnan(acc) ? acc : x;
          }
        };
        auto fold_i = [&](int64_t& acc, int64_t p) {
          int64_t x = read_i(in(0), p);
          acc = is_sum ? acc + x : std::max(acc, x);
        };
        if (reduce_axis_outer(v, axis)) {
          ConcreteView row = without_axis(v, axis);
          int64_t count = out.numel();
          std::vector<double> acc_f(floaty ? count : 0, init_f);
          std::vector<int64_t> acc_i(floaty ? 0 : count, init_i);
          for (int64_t r = 0; r < v.dims[axis]; ++r) {
            row.offset = v.offset + r * v.strides[axis];
            bool padding = r < v.lo[axis] || r >= v.hi[axis];
            for_each_index(shape, {&row}, [&](int64_t flat, const auto&, const auto& at) {
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
              store_f(out, flat, acc_f[flat]);
            } else {
              store_i(out, flat, acc_i[flat]);
            }
          }
          break;
        }
        bool masked = has_mask(v);
        std::vector<int64_t> full(v.dims.size());
        for_each_index(shape, {}, [&](int64_t flat, const std::vector<int64_t>& idx,
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
            store_f(out, flat, acc_f);
          } else {
            store_i(out, flat, acc_i);
          }
        });
        break;
      }
      case OpKind::Gather: {
        const ConcreteView& dv = views[0];
        int64_t data_numel = checked_numel(dv.dims, [&] {
          return "execute: the data Gather %" + std::to_string(id) + " reads";
        });
        std::vector<int64_t> didx(dv.dims.size());
        for_each_index(shape, {&views[1]}, [&](int64_t flat, const auto&, const auto& at) {
          int64_t g = read_i(in(1), at[0]);
          if (g < 0 || g >= data_numel) {
            throw ShapeError("Gather: index " + std::to_string(g) + " is out of range for data of " +
                             std::to_string(data_numel) + " elements (shape " +
                             dims_to_string(n.inputs[0].view.dims) + ")");
          }
          for (size_t k = dv.dims.size(); k-- > 0;) {
            didx[k] = g % dv.dims[k];
            g /= dv.dims[k];
          }
          if (is_float(n.dtype)) {
            store_f(out, flat, read_f(in(0), dv, didx));
          } else {
            store_i(out, flat, read_i(in(0), dv, didx));
          }
        });
        break;
      }
      case OpKind::Cast:
      case OpKind::Output: {
        bool from_float = is_float(in(0).dtype) || is_quantized(in(0).dtype);
        for_each_index(shape, {&views[0]}, [&](int64_t flat, const auto&, const auto& at) {
          if (from_float) {
            store_any(out, flat, read_f(in(0), at[0]));
          } else if (is_float(n.dtype)) {
            store_f(out, flat, static_cast<double>(read_i(in(0), at[0])));
          } else {
            store_i(out, flat, read_i(in(0), at[0]));
          }
        });
        break;
      }
    }
    if (n.op == OpKind::Output) {
      outputs_[id] = std::move(out);
    } else {
      values[id] = std::move(out);
    }
    for (const Edge& e : n.inputs) {
      if (last_use_[e.node] == static_cast<int>(pos)) values[e.node] = HostBuffer{};
    }
  }
}

const HostBuffer& NativeRuntime::get(NodeId output) const {
  return output_value(outputs_, output);
}

}  // namespace luminal
