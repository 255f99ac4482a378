// element_eval.h: one element of a node at a time, each op as eval_node.cc computes it.
#include "runtime/native/element_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ir/scalar_ops.h"

namespace luminal::native {

namespace {
// Memo entries kept at most: past it the memo starts over (a sample's elements are reused
// within the sample and its neighbours, not across a whole kernel).
constexpr size_t kMemoLimit = size_t{1} << 16;
// Steps an element's computation must take to be memoized: cheaper ones (elementwise ops over
// sources or memoized elements) are recomputed, so they cannot fill the memo and push out the
// reductions worth keeping (the 64-step dot products of an attention's 1500 scores made of
// 200 cheap elements each thrashed it: 1e9 steps for one sample). A DAG reusing a cheap
// element still costs at most a few steps per use before a node above it is memoized.
constexpr int64_t kMemoMinSteps = 4;

void unflatten(int64_t flat, const std::vector<int64_t>& shape, std::vector<int64_t>& idx) {
  idx.resize(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] > 0 ? flat % shape[k] : 0;
    flat = shape[k] > 0 ? flat / shape[k] : 0;
  }
}
// Whether `v` reads an operand row-major with `shape`'s dims from its first element, no
// mask: its element i, for i of that shape flattened, is the operand's element i.
bool row_major_over(const ConcreteView& v, const std::vector<int64_t>& shape) {
  if (v.dims != shape || v.offset != 0) return false;
  int64_t stride = 1;
  for (size_t k = v.dims.size(); k-- > 0;) {
    if ((v.strides[k] != stride && v.dims[k] != 1) || v.lo[k] > 0 || v.hi[k] < v.dims[k]) {
      return false;
    }
    stride *= v.dims[k];
  }
  return true;
}
}  // namespace

ElementEval::ElementEval(const Graph& graph, const DynMap& dims)
    : graph_(graph), dims_(dims), info_(graph.size()), sources_(graph.size()),
      memo_stamp_(graph.size(), 0), numel_(graph.size(), -1) {}

void ElementEval::set_source(NodeId node, ElementSource source) {
  ElementSource& slot = sources_.at(static_cast<size_t>(node));
  if (!slot.data) sourced_.push_back(node);
  slot = source;
  memo_.forget();
}

void ElementEval::clear_sources() {
  for (NodeId node : sourced_) sources_[static_cast<size_t>(node)] = ElementSource{};
  sourced_.clear();
  memo_.forget();
}

void ElementMemo::forget() {
  size_ = 0;
  if (++generation_ == 0) {  // wrapped: no slot may look current
    slots_.assign(slots_.size(), Slot{});
    generation_ = 1;
  }
}

size_t ElementMemo::slot_of(uint64_t key) const {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask;
  while (slots_[i].generation == generation_ && slots_[i].key != key) i = (i + 1) & mask;
  return i;
}

const double* ElementMemo::find(uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const Slot& s = slots_[slot_of(key)];
  return s.generation == generation_ ? &s.value : nullptr;
}

void ElementMemo::insert(uint64_t key, double value) {
  if (2 * (size_ + 1) > slots_.size()) {  // grow: at most half full
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, 2 * old.size()), Slot{});  // generation 0: empty
    const uint32_t live = generation_;  // kept: the entries' stamps (ElementEval) stay true
    size_ = 0;
    for (const Slot& s : old) {
      if (s.generation == live) insert(s.key, s.value);
    }
  }
  Slot& s = slots_[slot_of(key)];
  if (s.generation != generation_) ++size_;
  s = {key, generation_, value};
}

const ElementEval::Info& ElementEval::info(NodeId node) {
  Info& i = info_.at(static_cast<size_t>(node));
  if (!i.ready) {
    const Node& n = graph_.node(node);
    i.shape = evaluate(n.shape, dims_);
    i.numel = checked_numel(i.shape, [&] { return "check: node %" + std::to_string(node); });
    for (const Edge& e : n.inputs) {
      const ConcreteView v = evaluate(e.view, dims_);
      i.flat.push_back(row_major_over(v, i.shape));
      i.identity.push_back(row_major_over(v, evaluate(graph_.node(e.node).shape, dims_)));
      i.views.push_back(v);
      i.input_dtypes.push_back(graph_.node(e.node).dtype);
    }
    i.node = &n;
    i.category = is_unary(n.op) ? 'u' : is_binary(n.op) ? 'b' : 0;
    i.float_operand = !i.input_dtypes.empty() && is_float(i.input_dtypes[0]);
    if (n.op == OpKind::Constant) {
      const double v = n.expr ? static_cast<double>(n.expr->eval(dims_)) : n.value;
      i.constant = is_float(n.dtype) ? stored_value(n.dtype, v) : round_to_dtype(v, n.dtype);
    }
    numel_[static_cast<size_t>(node)] = i.numel;
    i.ready = true;
  }
  return i;
}

int64_t ElementEval::numel(NodeId node) {
  const int64_t known = numel_[static_cast<size_t>(node)];
  return known >= 0 ? known : info(node).numel;
}

const std::vector<int64_t>& ElementEval::shape(NodeId node) { return info(node).shape; }

double ElementEval::read(NodeId node, int64_t p, const std::vector<int64_t>* at) {
  if (p < 0) return 0.0;
  if (p >= numel(node)) {
    throw InternalError("check: a view reads element " + std::to_string(p) + " of node %" +
                        std::to_string(node) + " of " + std::to_string(numel(node)));
  }
  return value_at(node, p, at);
}

double ElementEval::value(NodeId node, int64_t flat) { return value_at(node, flat, nullptr); }

double ElementEval::value_at(NodeId node, int64_t flat, const std::vector<int64_t>* at) {
  const ElementSource& s = sources_[static_cast<size_t>(node)];
  if (s.data) {
    if (flat < 0 || flat >= s.numel) {
      throw InternalError("check: element " + std::to_string(flat) + " of a source of " +
                          std::to_string(s.numel));
    }
    return is_float(s.dtype) || is_quantized(s.dtype)
               ? load_f(s.dtype, s.data, flat)
               : static_cast<double>(load_i(s.dtype, s.data, flat));
  }
  const uint64_t key = static_cast<uint64_t>(node) << 40 | static_cast<uint64_t>(flat);
  uint32_t& stamp = memo_stamp_[static_cast<size_t>(node)];
  if (stamp == memo_.generation()) {
    if (const double* hit = memo_.find(key)) return *hit;
  }
  const int64_t before = steps_;
  const double v = compute(node, flat, at);
  if (steps_ - before >= kMemoMinSteps) {
    if (memo_.size() >= kMemoLimit) memo_.forget();
    memo_.insert(key, v);
    stamp = memo_.generation();
  }
  return v;
}

double ElementEval::compute(NodeId node, int64_t flat, const std::vector<int64_t>* at) {
  if (++steps_ > step_limit_ && step_limit_ >= 0) throw StepLimitReached{};
  const Info& in = info(node);
  const Node& n = *in.node;
  // Index vectors of this depth of the recursion, reused (no allocation per element).
  ++depth_;
  struct Leave {
    size_t& depth;
    ~Leave() { --depth; }
  } leave{depth_};
  if (scratch_.size() < 3 * depth_) scratch_.resize(3 * depth_);  // a deque: no moves
  std::vector<int64_t>& idx = scratch_[3 * depth_ - 3];
  auto index = [&]() -> const std::vector<int64_t>& {
    if (!at) {
      unflatten(flat, in.shape, idx);
      at = &idx;
    }
    return *at;
  };
  auto dtype_of = [&](size_t k) { return in.input_dtypes[k]; };
  // Operand k at this element (0 in its view's padding): no index where its view is flat.
  auto arg = [&](size_t k) {
    const NodeId child = n.inputs[k].node;
    return in.flat[k] ? read(child, flat) : read(child, locate(in.views[k], index()));
  };
  if (in.category == 'u') return stored_value(n.dtype, unary_eval(n.op, arg(0)));
  if (in.category == 'b') {
    const DType operand_dtype = dtype_of(0);
    const double a = arg(0);
    const double b = arg(1);
    if (in.float_operand) {
      const double r = binary_float(n.op, a, b);
      return is_float(n.dtype) ? stored_value(n.dtype, r) : round_to_dtype(r, n.dtype);
    }
    return stored_value(n.dtype, binary_int(n.op, static_cast<int64_t>(a),
                                            static_cast<int64_t>(b), operand_dtype));
  }
  switch (n.op) {
    case OpKind::Input:
      throw InternalError("check: input %" + std::to_string(node) + " has no data");
    case OpKind::Constant:
      return in.constant;
    case OpKind::Iota: {
      if (iota_env_.empty()) iota_env_ = dims_;
      iota_env_["z"] = flat;
      return stored_value(n.dtype, static_cast<double>(n.expr->eval(iota_env_)));
    }
    case OpKind::SumReduce:
    case OpKind::MaxReduce: {
      const ConcreteView& v = in.views[0];
      const size_t axis = static_cast<size_t>(n.axis);
      const bool is_sum = n.op == OpKind::SumReduce;
      const DType from = dtype_of(0);
      const NodeId child = n.inputs[0].node;
      std::vector<int64_t>& full = scratch_[3 * depth_ - 2];
      full.resize(v.dims.size());
      const std::vector<int64_t>& kept = index();
      for (size_t k = 0, j = 0; k < full.size(); ++k) full[k] = k == axis ? 0 : kept[j++];
      // The operand read in its own layout: its index is `full`, its element a stride on.
      const bool identity = in.identity[0];
      int64_t along = 1;
      for (size_t k = axis + 1; k < v.dims.size(); ++k) along *= v.dims[k];
      const int64_t first = identity ? locate(v, full) : 0;
      if (is_float(from)) {
        double acc = is_sum ? 0.0 : -INFINITY;
        for (int64_t r = 0; r < v.dims[axis]; ++r) {
          full[axis] = r;
          ++steps_;
          const double x = identity ? read(child, first + r * along, &full)
                                    : read(child, locate(v, full));
          if (is_sum) {
            acc += x;
          } else if (std::isnan(x) || x > acc) {
            acc = std::isnan(acc) ? acc : x;
          }
        }
        return stored_value(n.dtype, acc);
      }
      int64_t acc = is_sum || from == DType::Bool ? 0 : std::numeric_limits<int32_t>::min();
      for (int64_t r = 0; r < v.dims[axis]; ++r) {
        full[axis] = r;
        ++steps_;
        const auto x = static_cast<int64_t>(read(child, locate(v, full)));
        acc = is_sum ? acc + x : std::max(acc, x);
      }
      return stored_value(n.dtype, static_cast<double>(acc));
    }
    case OpKind::Gather: {
      const ConcreteView& dv = in.views[0];
      const int64_t data_numel = checked_numel(dv.dims, [&] {
        return "check: the data Gather %" + std::to_string(node) + " reads";
      });
      int64_t g = static_cast<int64_t>(arg(1));
      if (g < 0 || g >= data_numel) {
        throw ShapeError("Gather: index " + std::to_string(g) + " is out of range for data of " +
                         std::to_string(data_numel) + " elements (shape " +
                         dims_to_string(n.inputs[0].view.dims) + ")");
      }
      std::vector<int64_t>& didx = scratch_[3 * depth_ - 1];
      didx.resize(dv.dims.size());
      for (size_t k = dv.dims.size(); k-- > 0;) {
        didx[k] = g % dv.dims[k];
        g /= dv.dims[k];
      }
      return stored_value(n.dtype, read(n.inputs[0].node, locate(dv, didx)));
    }
    case OpKind::Cast:
    case OpKind::Output: {
      const double x = arg(0);
      const DType from = dtype_of(0);
      if (is_float(from) || is_quantized(from)) {
        return is_float(n.dtype) ? stored_value(n.dtype, x) : round_to_dtype(x, n.dtype);
      }
      return stored_value(n.dtype, x);
    }
    default:
      throw InternalError(std::string("check: ") + op_name(n.op) + " is not computed");
  }
}

}  // namespace luminal::native
