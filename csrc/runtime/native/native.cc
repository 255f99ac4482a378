// The reference interpreter. Each node is evaluated in topological order into a dense
// buffer; inputs are read through their views with concrete (dyn_map-evaluated) strides.
// Buffers are freed after their last reader. Elementwise arithmetic is ir/scalar_ops.h's.
#include "runtime/native/native.h"

#include <cmath>
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

// Walks every logical index of `dims` in row-major order, calling f(flat, index).
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    f(flat, idx);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
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

void check_in_bounds(int64_t p, const HostBuffer& src, const char* op) {
  if (p < 0 || p >= src.numel()) {
    throw InternalError(std::string(op) + ": view reads element " + std::to_string(p) +
                        " of a buffer of " + std::to_string(src.numel()));
  }
}

double read_f(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx) {
  int64_t p = locate(v, idx);
  if (p < 0) return 0.0;
  check_in_bounds(p, src, "read");
  return load_f(src, p);
}

int64_t read_i(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx) {
  int64_t p = locate(v, idx);
  if (p < 0) return 0;
  check_in_bounds(p, src, "read");
  return load_i(src, p);
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
        for_each_index(shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
          store_f(out, flat, unary_eval(n.op, read_f(in(0), views[0], idx)));
        });
        break;
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Mod:
      case OpKind::LessThan: {
        DType operand = in(0).dtype;
        for_each_index(shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
          if (is_float(operand)) {
            double a = read_f(in(0), views[0], idx);
            double b = read_f(in(1), views[1], idx);
            store_any(out, flat, binary_float(n.op, a, b));
          } else {
            int64_t a = read_i(in(0), views[0], idx);
            int64_t b = read_i(in(1), views[1], idx);
            store_i(out, flat, binary_int(n.op, a, b, operand));
          }
        });
        break;
      }
      case OpKind::SumReduce:
      case OpKind::MaxReduce: {
        const ConcreteView& v = views[0];
        size_t axis = static_cast<size_t>(n.axis);
        bool is_sum = n.op == OpKind::SumReduce;
        bool floaty = is_float(in(0).dtype);
        std::vector<int64_t> full(v.dims.size());
        for_each_index(shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
          for (size_t k = 0, j = 0; k < full.size(); ++k) full[k] = k == axis ? 0 : idx[j++];
          double acc_f = is_sum ? 0.0 : -INFINITY;
          int64_t acc_i = is_sum ? 0 : std::numeric_limits<int32_t>::min();
          if (!is_sum && in(0).dtype == DType::Bool) acc_i = 0;
          for (int64_t r = 0; r < v.dims[axis]; ++r) {
            full[axis] = r;
            if (floaty) {
              double x = read_f(in(0), v, full);
              if (is_sum) {
                acc_f += x;
              } else if (std::isnan(x) || x > acc_f) {
                acc_f = std::isnan(acc_f) ? acc_f : x;
              }
            } else {
              int64_t x = read_i(in(0), v, full);
              acc_i = is_sum ? acc_i + x : std::max(acc_i, x);
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
        for_each_index(shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
          int64_t g = read_i(in(1), views[1], idx);
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
        for_each_index(shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
          if (from_float) {
            store_any(out, flat, read_f(in(0), views[0], idx));
          } else if (is_float(n.dtype)) {
            store_f(out, flat, static_cast<double>(read_i(in(0), views[0], idx)));
          } else {
            store_i(out, flat, read_i(in(0), views[0], idx));
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
