// The default lowering: decides which nodes get a buffer, then builds one kernel per buffer
// by walking each kernel root's inputs back through views (index arithmetic) until it meets
// a buffer. Views compose into plain affine indices where that is provably exact, else into
// an unravel of the flat offset (div/mod).
#include "kernel/lower.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/errors.h"
#include "ir/scalar_ops.h"
#include "kernel/match.h"

namespace luminal {

Expr program_dim(size_t k) { return Expr::symbol("d" + std::to_string(k)); }

namespace {

std::vector<Expr> row_major_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> out(shape.size());
  Expr s = 1;
  for (size_t m = shape.size(); m-- > 0;) {
    out[m] = s;
    s = s * shape[m];
  }
  return out;
}

// The valid-region condition of a view at logical index `idx` (1 when unmasked).
Expr mask_of(const ShapeTracker& v, const std::vector<Expr>& idx) {
  Expr valid = 1;
  for (size_t k = 0; k < v.rank(); ++k) {
    if (!v.axis_masked(k)) continue;
    valid = logical_and(valid, logical_and(ge(idx[k], v.mask_lo[k]), lt(idx[k], v.mask_hi[k])));
  }
  return valid;
}

Expr physical_index(const ShapeTracker& v, const std::vector<Expr>& idx) {
  Expr p = v.offset;
  for (size_t k = 0; k < v.rank(); ++k) p = p + idx[k] * v.strides[k];
  return p;
}

std::vector<Expr> unravel(const Expr& flat, const std::vector<Expr>& shape) {
  std::vector<Expr> rs = row_major_strides(shape);
  std::vector<Expr> out(shape.size());
  for (size_t m = 0; m < shape.size(); ++m) {
    out[m] = m == 0 ? flat / rs[m] : (flat / rs[m]) % shape[m];
  }
  return out;
}

// An exact multiple c with a == c * b: an integer, or a non-negative expression over the dims
// (a stride d1 * 64 is d1 rows of 64).
std::optional<Expr> stride_ratio(const Expr& a, const Expr& b) {
  auto ca = a.try_const();
  auto cb = b.try_const();
  if (ca && cb) {
    if (*cb == 0 || *ca % *cb != 0) return std::nullopt;
    return Expr(*ca / *cb);
  }
  if (a == b) return Expr(1);
  if (a == -b) return Expr(-1);
  if (is_zero(b)) return std::nullopt;
  Expr q = a / b;
  if (q * b != a || ge(q, 0).try_const() != std::optional<int64_t>(1)) return std::nullopt;
  return q;
}

// The producer index that view `v` reads at consumer index `idx`, as plain affine terms when
// every axis of the view maps onto one producer axis and stays provably inside it.
std::optional<std::vector<Expr>> compose_affine(const ShapeTracker& v,
                                                const std::vector<Expr>& idx,
                                                const std::vector<Expr>& shape) {
  std::vector<Expr> rs = row_major_strides(shape);
  size_t rank = shape.size();
  std::vector<Expr> lo_sum(rank), hi_sum(rank), term(rank);
  // Offset split over producer axes, truncating toward zero from the outermost.
  Expr rest = v.offset;
  for (size_t m = 0; m < rank; ++m) {
    if (is_zero(rest)) break;
    auto r = rest.try_const();
    auto s = rs[m].try_const();
    if (r && s) {
      if (*s == 0) return std::nullopt;
      int64_t q = *r / *s;
      term[m] = q;
      rest = *r - q * *s;
    } else {
      if (is_zero(rs[m])) return std::nullopt;
      Expr q = rest / rs[m];
      term[m] = q;
      rest = rest - q * rs[m];
    }
  }
  if (!is_zero(rest)) return std::nullopt;
  for (size_t m = 0; m < rank; ++m) {
    lo_sum[m] = term[m];
    hi_sum[m] = term[m];
  }
  for (size_t k = 0; k < v.rank(); ++k) {
    if (is_one(v.dims[k]) || is_zero(v.strides[k])) continue;
    // The outermost producer axis whose stride divides the view's: the smallest multiple,
    // the only one that can stay inside its axis (an inner one would overrun it).
    std::optional<size_t> axis;
    Expr c = 0;
    for (size_t m = 0; m < rank; ++m) {
      if (is_one(shape[m])) continue;
      auto ratio = stride_ratio(v.strides[k], rs[m]);
      if (ratio && !is_zero(*ratio)) {
        axis = m;
        c = *ratio;
        break;
      }
    }
    if (!axis) return std::nullopt;
    bool negative = c.try_const() && *c.try_const() < 0;
    Expr lo = v.axis_masked(k) ? max(v.mask_lo[k], Expr(0)) : Expr(0);
    Expr hi = v.axis_masked(k) ? min(v.mask_hi[k], v.dims[k]) - 1 : v.dims[k] - 1;
    term[*axis] = term[*axis] + idx[k] * c;
    lo_sum[*axis] = lo_sum[*axis] + (negative ? hi : lo) * c;
    hi_sum[*axis] = hi_sum[*axis] + (negative ? lo : hi) * c;
  }
  for (size_t m = 0; m < rank; ++m) {
    if (ge(lo_sum[m], 0).try_const() != std::optional<int64_t>(1)) return std::nullopt;
    if (lt(hi_sum[m], shape[m]).try_const() != std::optional<int64_t>(1)) return std::nullopt;
  }
  return term;
}

bool is_identity_view(const ShapeTracker& v, const std::vector<Expr>& shape) {
  if (v.rank() != shape.size() || v.has_mask() || !is_zero(v.offset)) return false;
  std::vector<Expr> rs = row_major_strides(shape);
  for (size_t k = 0; k < v.rank(); ++k) {
    if (v.dims[k] != shape[k]) return false;
    if (v.strides[k] != rs[k] && !is_one(shape[k])) return false;
  }
  return true;
}

// Whether some axis re-reads the producer's elements: stride 0 over more than one valid index
// (an axis padded around a single element, as a stacked pair has, re-reads nothing).
bool broadcasts(const ShapeTracker& v) {
  for (size_t k = 0; k < v.rank(); ++k) {
    if (!is_zero(v.strides[k]) || is_one(v.dims[k])) continue;
    if (v.axis_masked(k)) {
      Expr width = min(v.mask_hi[k], v.dims[k]) - max(v.mask_lo[k], Expr(0));
      auto w = width.try_const();
      if (w && *w <= 1) continue;
    }
    return true;
  }
  return false;
}

// A reduction over a few elements (a constant extent of at most kUnrollReduce), as the max of
// a stacked pair is (maximum, relu, clamp), lowers to an unrolled chain of combines: no loop,
// so it fuses into its consumers like an elementwise op.
constexpr int64_t kUnrollReduce = 4;

bool unrolled_reduce(const Node& n) {
  if (!is_reduce(n.op) || (n.dtype != DType::F32 && n.dtype != DType::Int)) return false;
  auto extent = n.inputs[0].view.dims[static_cast<size_t>(n.axis)].try_const();
  return extent && *extent >= 1 && *extent <= kUnrollReduce;
}

class Lowerer {
 public:
  Lowerer(const Graph& graph, const ScheduleParams& program_schedule)
      : g_(graph), program_schedule_(program_schedule) {}

  Program run() {
    p_.dims = g_.symbols();
    for (size_t k = 0; k < p_.dims.size(); ++k) rename_[p_.dims[k]] = program_dim(k);
    std::vector<NodeId> order = g_.topo_order();
    plan_buffers(order);
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op == OpKind::Input || buffer_of_[id] < 0 || skipped_.count(id)) continue;
      build_kernel(id);
    }
    return std::move(p_);
  }

 private:
  Expr rn(const Expr& e) const { return rename_.empty() ? e : e.substitute(rename_); }

  std::vector<Expr> rn(const std::vector<Expr>& dims) const {
    std::vector<Expr> out;
    for (const Expr& d : dims) out.push_back(rn(d));
    return out;
  }

  ShapeTracker rn(const ShapeTracker& v) const {
    ShapeTracker out = v;
    out.dims = rn(v.dims);
    out.strides = rn(v.strides);
    out.mask_lo = rn(v.mask_lo);
    out.mask_hi = rn(v.mask_hi);
    out.offset = rn(v.offset);
    return out;
  }

  void add_buffer(NodeId id, BufferRole role) {
    const Node& n = g_.node(id);
    Buffer b;
    b.id = static_cast<BufferId>(p_.buffers.size());
    b.role = role;
    b.dtype = n.dtype;
    b.numel = product(rn(n.shape));
    b.node = id;
    buffer_of_[id] = b.id;
    p_.buffers.push_back(b);
  }

  void plan_buffers(const std::vector<NodeId>& order) {
    buffer_of_.assign(g_.size(), -1);
    std::vector<int> uses(g_.size(), 0);
    std::vector<bool> forced(g_.size(), false);
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Edge& e = n.inputs[k];
        uses[e.node]++;
        if (n.op == OpKind::Gather && k == 0) forced[e.node] = true;
        if (broadcasts(e.view)) forced[e.node] = true;
        if (product(g_.node(e.node).shape).try_const() == std::optional<int64_t>(0)) {
          forced[e.node] = true;
        }
      }
    }
    // An Output that is the only reader of a computed node, through an identity view, takes
    // over that node's kernel: the node stores straight into the output buffer.
    std::vector<NodeId> output_of(g_.size(), -1);
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op != OpKind::Output) continue;
      const Edge& e = n.inputs[0];
      OpKind src = g_.node(e.node).op;
      if (src == OpKind::Input || uses[e.node] != 1 || forced[e.node]) continue;
      if (!is_identity_view(e.view, g_.node(e.node).shape)) continue;
      output_of[e.node] = id;
      skipped_.insert(id);
    }
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      bool source = n.op == OpKind::Constant || n.op == OpKind::Iota;
      if (skipped_.count(id)) continue;
      if (output_of[id] >= 0) {
        add_buffer(output_of[id], BufferRole::kOutput);
        buffer_of_[id] = buffer_of_[output_of[id]];
      } else if (n.op == OpKind::Input) {
        add_buffer(id, BufferRole::kInput);
      } else if (n.op == OpKind::Output) {
        add_buffer(id, BufferRole::kOutput);
      } else if (is_reduce(n.op) && !unrolled_reduce(n)) {
        add_buffer(id, BufferRole::kTemp);
      } else if (source ? (forced[id] && n.op == OpKind::Iota)
                        : ((uses[id] > 1 && !recomputed(id)) || forced[id] || roots_kernel(n))) {
        add_buffer(id, BufferRole::kTemp);
      }
    }
  }

  // Fusion of nodes read by several kernels: an elementwise node whose inlined cone (up to
  // buffers) costs at most kRecomputeCost is recomputed by each reader instead of stored once
  // and loaded by each: a few flops are cheaper than a pass over memory and a kernel launch.
  static constexpr int kRecomputeCost = 16;

  bool cheap_to_recompute(NodeId id) const { return inline_cost(id, kRecomputeCost) >= 0; }

  // The cost of computing node `id` where it is read (0 for a buffer), or -1 when over `budget`
  // or not recomputable (a reduction loop, a gather, an output). Weights: ops.def's recompute.
  int inline_cost(NodeId id, int budget) const {
    const Node& n = g_.node(id);
    if (buffer_of_[id] >= 0 || n.op == OpKind::Constant) return 0;
    int own = op_recompute_weight(n.op);
    if (is_reduce(n.op)) {
      auto extent = n.inputs[0].view.dims[static_cast<size_t>(n.axis)].try_const();
      own = unrolled_reduce(n) ? own * static_cast<int>(*extent) : -1;
    }
    if (own < 0) return -1;
    int total = own;
    for (const Edge& e : n.inputs) {
      if (total > budget) return -1;
      int c = inline_cost(e.node, budget - total);
      if (c < 0) return -1;
      total += c;
    }
    return total > budget ? -1 : total;
  }

  ValueId add(Value v) {
    std::string key = value_key(v);
    auto it = cse_.find(key);
    if (it != cse_.end()) return it->second;
    ValueId id = static_cast<ValueId>(k_.values.size());
    k_.values.push_back(std::move(v));
    cse_.emplace(std::move(key), id);
    return id;
  }

  static std::string value_key(const Value& v) {
    std::string key = std::to_string(static_cast<int>(v.kind)) + " " + dtype_name(v.dtype) +
                      " " + dtype_name(v.operand) + " " + op_name(v.op) + " " +
                      std::to_string(v.buffer) + " [" + v.index.to_string() + "] [" +
                      v.valid.to_string() + "] ";
    char num[40];
    std::snprintf(num, sizeof num, "%.17g", v.number);
    key += num;
    for (ValueId a : v.args) key += " %" + std::to_string(a);
    for (const Bind& b : v.binds) key += " " + b.symbol + "=" + std::to_string(b.value);
    return key;
  }

  ValueId zero(DType dtype) {
    Value v;
    v.kind = ValueKind::kConst;
    v.dtype = dtype;
    return add(std::move(v));
  }

  ValueId load(BufferId buffer, const Expr& index, const Expr& valid) {
    if (is_zero(valid)) return zero(p_.buffers[buffer].dtype);
    Value v;
    v.kind = ValueKind::kLoad;
    v.dtype = p_.buffers[buffer].dtype;
    v.buffer = buffer;
    v.index = index;
    v.valid = valid;
    return add(std::move(v));
  }

  ValueId select(ValueId x, const Expr& valid) {
    if (is_one(valid)) return x;
    if (is_zero(valid)) return zero(k_.values[x].dtype);
    Value v;
    v.kind = ValueKind::kSelect;
    v.dtype = k_.values[x].dtype;
    v.args = {x};
    v.valid = valid;
    return add(std::move(v));
  }

  // The value of edge `e` at consumer index `idx`, under condition `ctx`.
  ValueId read_edge(const Edge& e, const std::vector<Expr>& idx, const Expr& ctx) {
    ShapeTracker v = rn(e.view);
    Expr vmask = mask_of(v, idx);
    Expr cond = logical_and(ctx, vmask);
    NodeId src = e.node;
    if (buffer_of_[src] >= 0) return load(buffer_of_[src], physical_index(v, idx), cond);
    if (g_.node(src).op == OpKind::Constant) return select(emit_node(src, {}, cond), vmask);
    std::vector<Expr> shape = rn(g_.node(src).shape);
    std::vector<Expr> pidx;
    if (is_identity_view(v, shape)) {
      pidx = idx;
    } else if (auto composed = compose_affine(v, idx, shape)) {
      pidx = *composed;
    } else {
      pidx = unravel(physical_index(v, idx), shape);
    }
    return select(emit_node(src, pidx, cond), vmask);
  }

  ValueId emit_node(NodeId id, const std::vector<Expr>& idx, const Expr& ctx) {
    const Node& n = g_.node(id);
    Value v;
    v.dtype = n.dtype;
    switch (n.op) {
      case OpKind::Constant:
        if (n.expr) {
          v.kind = ValueKind::kIndex;
          Expr e = rn(*n.expr);
          if (n.dtype == DType::Int) e = min(max(e, Expr(INT32_MIN)), Expr(INT32_MAX));
          v.index = e;
        } else {
          v.kind = ValueKind::kConst;
          v.number = round_to_dtype(n.value, n.dtype);
        }
        return add(std::move(v));
      case OpKind::Iota: {
        std::map<std::string, Expr> env = rename_;
        env["z"] = idx[0];
        v.kind = ValueKind::kIndex;
        v.index = n.expr->substitute(env);
        return add(std::move(v));
      }
      case OpKind::Log2:
      case OpKind::Exp2:
      case OpKind::Sin:
      case OpKind::Sqrt:
      case OpKind::Recip:
        v.kind = ValueKind::kUnary;
        v.op = n.op;
        v.operand = n.dtype;
        v.args = {read_edge(n.inputs[0], idx, ctx)};
        return add(std::move(v));
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Mod:
      case OpKind::LessThan:
        v.kind = ValueKind::kBinary;
        v.op = n.op;
        v.operand = g_.node(n.inputs[0].node).dtype;
        v.args = {read_edge(n.inputs[0], idx, ctx), read_edge(n.inputs[1], idx, ctx)};
        return add(std::move(v));
      case OpKind::Cast:
      case OpKind::Output: {
        ValueId x = read_edge(n.inputs[0], idx, ctx);
        DType from = g_.node(n.inputs[0].node).dtype;
        if (from == n.dtype) return x;
        v.kind = ValueKind::kCast;
        v.operand = from;
        v.args = {x};
        return add(std::move(v));
      }
      case OpKind::Gather:
        return emit_gather(n, idx, ctx);
      case OpKind::SumReduce:
      case OpKind::MaxReduce:
        return unrolled_reduce(n) ? emit_unrolled_reduce(n, idx, ctx) : emit_reduce(n, idx);
      case OpKind::Input:
        break;
    }
    throw InternalError(std::string("lowering: cannot inline ") + op_name(n.op));
  }

  ValueId emit_gather(const Node& n, const std::vector<Expr>& idx, const Expr& ctx) {
    ValueId index = read_edge(n.inputs[1], idx, ctx);
    ShapeTracker v = rn(n.inputs[0].view);
    std::string symbol = "g" + std::to_string(index);
    std::vector<Expr> didx = unravel(Expr::symbol(symbol), v.dims);
    Value load;
    load.kind = ValueKind::kLoad;
    load.buffer = buffer_of_[n.inputs[0].node];
    load.dtype = p_.buffers[load.buffer].dtype;
    load.index = physical_index(v, didx);
    load.valid = logical_and(ctx, mask_of(v, didx));
    load.binds.push_back(Bind{symbol, index, product(v.dims)});
    return add(std::move(load));
  }

  ValueId emit_reduce(const Node& n, const std::vector<Expr>& idx) {
    ShapeTracker v = rn(n.inputs[0].view);
    size_t axis = static_cast<size_t>(n.axis);
    k_.reduce.push_back(Loop{"r0", v.dims[axis]});
    std::vector<Expr> full = idx;
    full.insert(full.begin() + static_cast<long>(axis), Expr::symbol("r0"));
    ValueId x = read_edge(n.inputs[0], full, 1);
    Value r;
    r.kind = ValueKind::kReduce;
    r.op = n.op;
    r.dtype = n.dtype;
    r.operand = n.dtype;
    r.args = {x};
    ValueId id = add(std::move(r));
    k_.reduce_at = id;
    return id;
  }

  // The reduction in the order of the loop emit_reduce would run: a float sum starts from
  // 0.0f (so -0.0 sums to +0.0 as there), a max from the first element.
  ValueId emit_unrolled_reduce(const Node& n, const std::vector<Expr>& idx, const Expr& ctx) {
    size_t axis = static_cast<size_t>(n.axis);
    int64_t extent = *n.inputs[0].view.dims[axis].try_const();
    ValueId acc = -1;
    if (n.op == OpKind::SumReduce && n.dtype == DType::F32) acc = zero(n.dtype);
    for (int64_t j = 0; j < extent; ++j) {
      std::vector<Expr> full = idx;
      full.insert(full.begin() + static_cast<long>(axis), Expr(j));
      ValueId x = read_edge(n.inputs[0], full, ctx);
      if (acc < 0) {
        acc = x;
        continue;
      }
      Value c;
      c.kind = ValueKind::kCombine;
      c.op = n.op;
      c.dtype = n.dtype;
      c.operand = n.dtype;
      c.args = {acc, x};
      acc = add(std::move(c));
    }
    return acc;
  }

  void build_kernel(NodeId id) {
    const Node& n = g_.node(id);
    k_ = Kernel{};
    cse_.clear();
    k_.name = "k" + std::to_string(p_.kernels.size());
    k_.root = id;
    std::vector<Expr> shape = rn(n.shape);
    std::vector<Expr> idx;
    for (size_t k = 0; k < shape.size(); ++k) {
      std::string var = "i" + std::to_string(k);
      k_.loops.push_back(Loop{var, shape[k]});
      idx.push_back(Expr::symbol(var));
    }
    emit_node(id, idx, 1);
    k_.out = buffer_of_[id];
    std::vector<Expr> rs = row_major_strides(shape);
    k_.out_index = 0;
    for (size_t k = 0; k < idx.size(); ++k) k_.out_index = k_.out_index + idx[k] * rs[k];
    apply_schedule(n.schedule);
    k_.matmul = match_matmul(k_);
    p_.kernels.push_back(std::move(k_));
  }

  // Schedule parameter kInlineParam = 1: an elementwise node read by several kernels is
  // recomputed in each instead of stored once (a fusion choice of the search); = 0 stores it.
  // Without the parameter, cheap nodes are recomputed (cheap_to_recompute).
  bool recomputed(NodeId id) const {
    std::optional<int64_t> choice = schedule_param(g_.node(id).schedule, kInlineParam);
    return choice ? *choice == 1 : cheap_to_recompute(id);
  }

  // Any other schedule parameter makes the node the root of its own kernel.
  static bool roots_kernel(const Node& n) {
    for (const auto& [name, value] : n.schedule) {
      if (name != kInlineParam) return true;
    }
    return false;
  }

  // The kernel's schedule: the program-wide one, then its root node's own (from a runtime's
  // rules), so that a renderer reading the entries in order lets the node's override.
  void apply_schedule(const ScheduleParams& own) {
    k_.schedule = program_schedule_;
    k_.schedule.insert(k_.schedule.end(), own.begin(), own.end());
  }

  const Graph& g_;
  ScheduleParams program_schedule_;
  Program p_;
  std::map<std::string, Expr> rename_;
  std::vector<BufferId> buffer_of_;
  std::set<NodeId> skipped_;  // Output nodes whose producer writes their buffer
  Kernel k_;
  std::map<std::string, ValueId> cse_;
};

}  // namespace

Program lower_graph(const Graph& graph, const ScheduleParams& program_schedule) {
  return Lowerer(graph, program_schedule).run();
}

}  // namespace luminal
