// The default lowering: takes the buffer plan (buffer_plan.h: which nodes are stored), then
// builds one kernel per buffer by walking each kernel root's inputs back through views
// (view_index.h) until it meets a buffer, emitting the fused body in SSA form with CSE, and
// marks recognized patterns (match.h) and row kernels (row_kernel.h). A kernel that reads a
// fused reduction but cannot run as a row kernel has that reduction stored instead: the plan
// is made again without it.
#include "kernel/lower.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/errors.h"
#include "ir/scalar_ops.h"
#include "kernel/attention.h"
#include "kernel/buffer_plan.h"
#include "kernel/epilogue.h"
#include "kernel/match.h"
#include "kernel/quant_dot.h"
#include "kernel/row_kernel.h"
#include "kernel/view_index.h"

namespace luminal {

Expr program_dim(size_t k) { return Expr::symbol("d" + std::to_string(k)); }

namespace {

class Lowerer {
 public:
  Lowerer(const Graph& graph, const ScheduleParams& program_schedule)
      : g_(graph), program_schedule_(program_schedule) {}

  // Lowers with the buffer plan's row fusions; where kernels turn out not to be row kernels,
  // lowers again with each one's innermost fused reduction stored, until none is left (one
  // pass per nesting level, not per kernel: a 16-layer model's dozens of such kernels cost a
  // lowering or two, not one each).
  Program run() {
    std::set<NodeId> unfused;  // reductions stored whatever their `row` schedule says
    while (true) {
      Program p = lower(unfused);
      if (not_row_.empty() && not_attention_.empty() && not_quant_dot_.empty() &&
          not_prologue_.empty() && not_window_.empty()) {
        return p;
      }
      for (std::set<NodeId>* s : {&not_row_, &not_attention_, &not_quant_dot_, &not_prologue_,
                                  &not_window_}) {
        unfused.insert(s->begin(), s->end());
        s->clear();
      }
    }
  }

 private:
  Program lower(const std::set<NodeId>& unfused) {
    p_ = Program{};
    p_.dims = g_.symbols();
    for (size_t k = 0; k < p_.dims.size(); ++k) rename_[p_.dims[k]] = program_dim(k);
    std::vector<NodeId> order = g_.topo_order();
    add_buffers(plan_buffers(g_, order, unfused));
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op == OpKind::Input || buffer_of_[id] < 0 || skipped_.count(id)) continue;
      build_kernel(id);
    }
    return std::move(p_);
  }

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

  // The program's buffers from the plan, their sizes over the renamed dims.
  void add_buffers(const BufferPlan& plan) {
    for (const PlannedBuffer& pb : plan.buffers) {
      const Node& n = g_.node(pb.node);
      Buffer b;
      b.id = static_cast<BufferId>(p_.buffers.size());
      b.role = pb.role;
      b.dtype = n.dtype;
      b.numel = product(rn(n.shape));
      b.node = pb.node;
      p_.buffers.push_back(b);
    }
    buffer_of_ = plan.buffer_of;
    skipped_ = plan.skipped;
    attention_keys_ = plan.attention_keys;
    attention_roots_ = plan.attention_roots;
    quant_dots_ = plan.quant_dots;
    prologues_ = plan.prologues;
    windows_ = plan.windows;
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
    if (src == quant_out_) {
      // quantized activations (kernel/quant_dot.h): x, read where the formula reads it
      return select(read_edge(quant_x_, producer_index(v, idx, rn(g_.node(src).shape)), cond),
                    vmask);
    }
    if (buffer_of_[src] >= 0) return load(buffer_of_[src], physical_index(v, idx), cond);
    if (g_.node(src).op == OpKind::Constant) return select(emit_node(src, {}, cond), vmask);
    std::vector<Expr> pidx = producer_index(v, idx, rn(g_.node(src).shape));
    return select(emit_node(src, pidx, cond), vmask);
  }

  // The logical index of a producer of `shape` that view `v` reads at consumer index `idx`.
  static std::vector<Expr> producer_index(const ShapeTracker& v, const std::vector<Expr>& idx,
                                          const std::vector<Expr>& shape) {
    if (is_identity_view(v, shape)) return idx;
    if (auto composed = compose_affine(v, idx, shape)) return *composed;
    return unravel(physical_index(v, idx), shape);
  }

  ValueId emit_node(NodeId id, const std::vector<Expr>& idx, const Expr& ctx) {
    const Node& n = g_.node(id);
    Value v;
    v.dtype = n.dtype;
    if (is_unary(n.op) || is_binary(n.op)) {
      v.kind = is_unary(n.op) ? ValueKind::kUnary : ValueKind::kBinary;
      v.op = n.op;
      v.operand = g_.node(n.inputs[0].node).dtype;
      for (const Edge& e : n.inputs) v.args.push_back(read_edge(e, idx, ctx));
      return add(std::move(v));
    }
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
        const ValueId at = add(std::move(v));
        // An element read at a coordinate that is not a loop variable (a window's Iota read
        // through a reshape: r0 // 9) also as an Expr of an atom of the Iota's extent, which
        // emit_gather may unravel where the coordinate itself does not.
        std::optional<int64_t> length = rn(n.shape[0]).try_const();
        if (!idx[0].is_symbol() && !idx[0].is_const() && is_one(ctx) && length) {
          auto [it, fresh] = atom_name_.emplace(idx[0].to_string(), "");
          if (fresh) {
            it->second = "lm_atom" + std::to_string(atom_of_.size());
            atom_of_[it->second] = idx[0];
            atom_extent_[it->second] = *length;
          }
          env["z"] = Expr::symbol(it->second);
          atomized_[at] = n.expr->substitute(env);
        }
        return at;
      }
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
        return unrolled_reduce(n) ? emit_unrolled_reduce(n, idx, ctx) : emit_reduce(id, idx);
      default:
        break;  // Input; elementwise ops above
    }
    throw InternalError(std::string("lowering: cannot inline ") + op_name(n.op));
  }

  // A Gather's data is a buffer, or a Cast widened in its readers (buffer_plan) of one read
  // through an unmasked view: then the load is of the Cast's source, widened after it.
  // An index that is index arithmetic of the loop variables (Iotas, constants, their sums and
  // products; a conv's or a pool's window, nn/_grid.gather_linear) and provably lands inside
  // the data (unravel_affine) is read as a view: no run-time symbol, no division of a flat
  // index, no bounds check (it cannot fail).
  ValueId emit_gather(const Node& n, const std::vector<Expr>& idx, const Expr& ctx) {
    ValueId index = read_edge(n.inputs[1], idx, ctx);
    ShapeTracker v = rn(n.inputs[0].view);
    std::string symbol = "g" + std::to_string(index);
    std::optional<std::vector<Expr>> affine;
    if (std::optional<Expr> flat = index_expr(index)) {
      affine = unravel_affine(*flat, v.dims, var_extent_);
    }
    std::optional<Expr> atomized;  // the index again, where some Iota of it has an atom
    if (!affine && !atomized_.empty()) atomized = index_expr(index, true);
    if (atomized) {
      std::map<std::string, Expr> extents = var_extent_;
      extents.insert(atom_extent_.begin(), atom_extent_.end());
      affine = unravel_affine(*atomized, v.dims, extents);
      if (affine) {
        for (Expr& part : *affine) part = part.substitute(atom_of_);
      }
    }
    std::vector<Expr> didx = affine ? *affine : unravel(Expr::symbol(symbol), v.dims);
    NodeId data = n.inputs[0].node;
    Value load;
    load.kind = ValueKind::kLoad;
    load.index = physical_index(v, didx);
    load.valid = logical_and(ctx, mask_of(v, didx));
    if (!affine) load.binds.push_back(Bind{symbol, index, product(v.dims), ctx});
    const Node& cast = g_.node(data);
    if (buffer_of_[data] < 0 && cast.op == OpKind::Cast) {
      ShapeTracker source = rn(cast.inputs[0].view);
      if (source.has_mask()) throw InternalError("lowering: a Gather through a masked Cast");
      load.index = physical_index(source, unravel(load.index, rn(cast.shape)));
      load.buffer = buffer_of_[cast.inputs[0].node];
      load.dtype = p_.buffers[load.buffer].dtype;
      ValueId raw = add(std::move(load));
      Value widened;
      widened.kind = ValueKind::kCast;
      widened.dtype = cast.dtype;
      widened.operand = k_.values[raw].dtype;
      widened.args = {raw};
      return add(std::move(widened));
    }
    load.buffer = buffer_of_[data];
    load.dtype = p_.buffers[load.buffer].dtype;
    return add(std::move(load));
  }

  // Value `id` as an Expr of the loop variables, where it is index arithmetic: an Iota's
  // element, an integral constant, a sum or product of such (Int: C's wrapping arithmetic
  // agrees with the Expr's wherever the result fits, which unravel_affine makes sure of).
  // `atoms`: each Iota element as an Expr of its atom where it has one (atomized_).
  std::optional<Expr> index_expr(ValueId id, bool atoms = false) const {
    const Value& x = k_.values[static_cast<size_t>(id)];
    if (x.dtype != DType::Int) return std::nullopt;
    if (x.kind == ValueKind::kIndex && atoms) {
      auto it = atomized_.find(id);
      return it == atomized_.end() ? x.index : it->second;
    }
    if (x.kind == ValueKind::kIndex) return x.index;
    if (x.kind == ValueKind::kConst) return Expr(static_cast<int64_t>(x.number));
    if (x.kind != ValueKind::kBinary || (x.op != OpKind::Add && x.op != OpKind::Mul)) {
      return std::nullopt;
    }
    std::optional<Expr> a = index_expr(x.args[0], atoms), b = index_expr(x.args[1], atoms);
    if (!a || !b) return std::nullopt;
    return x.op == OpKind::Add ? *a + *b : *a * *b;
  }

  // Whether `idx` is an element of `shape`: 1 where each index is a loop variable of this
  // kernel over exactly that extent, or a constant inside it; else the bounds it must meet.
  Expr inside(const std::vector<Expr>& idx, const std::vector<Expr>& shape) const {
    Expr valid = 1;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (auto c = idx[k].try_const(), d = shape[k].try_const(); c && d && *c >= 0 && *c < *d) {
        continue;
      }
      // an attention kernel's key loop, pushed after its body
      bool loop_var = !key_var_.empty() && idx[k] == Expr::symbol(key_var_) &&
                      key_extent_ == shape[k];
      for (const std::vector<Loop>* loops : {&k_.loops, &k_.reduce}) {
        for (const Loop& l : *loops) {
          loop_var = loop_var || (idx[k] == Expr::symbol(l.var) && l.extent == shape[k]);
        }
      }
      if (!loop_var) valid = logical_and(valid, logical_and(ge(idx[k], 0), lt(idx[k], shape[k])));
    }
    return valid;
  }

  // A reduction loop: the kernel's root, or a reduction fused into it (row_kernel.h, or an
  // epilogue's matmul, epilogue.h), emitted once per index it is read at. Its loop is added
  // after its body, whose own fused reductions come first, so the loops are in the order of
  // their kReduce values.
  ValueId emit_reduce(NodeId id, const std::vector<Expr>& idx) {
    const Node& n = g_.node(id);
    // An epilogue's readers read the matmul's sum at their own element, maybe through index
    // Exprs that differ (a size-1 axis as 0): it is one value with one loop.
    if (epilogue_sum_.first == id) return epilogue_sum_.second;
    // An attention kernel's max and sum over its keys (kernel/attention.h) run in its root's
    // loop: one value per row, whatever index reads it.
    bool keys = attention_keys_.count(id) > 0 && !key_var_.empty();
    std::string memo = std::to_string(id);
    if (!keys) {
      for (const Expr& e : idx) memo += " " + e.to_string();
    }
    if (auto it = reduced_.find(memo); it != reduced_.end()) return it->second;
    bool epilogue = schedule_param(n.schedule, kEpilogueParam) == std::optional<int64_t>(1);
    if (id != k_.root && !epilogue && !keys) fused_.push_back(id);  // a row kernel's
    ShapeTracker v = rn(n.inputs[0].view);
    size_t axis = static_cast<size_t>(n.axis);
    std::string var = keys ? key_var_ : "r" + std::to_string(reduce_vars_++);
    if (id == k_.root && attention_roots_.count(id)) {
      key_var_ = var;
      key_extent_ = v.dims[axis];
    }
    std::vector<Expr> full = idx;
    full.insert(full.begin() + static_cast<long>(axis), Expr::symbol(var));
    // Read wherever the kernel reads it, so under the condition that idx is one of its
    // elements (a piece of a cat reads it shifted, outside it for the other pieces' elements):
    // a condition of idx alone, so every reader at idx shares the one loop.
    var_extent_[var] = v.dims[axis];
    // An epilogue's matmul of quantized activations (kernel/quant_dot.h) reads x as a root's
    // would; inlined, the round trip's formula was emitted once per path through its nodes.
    auto quant = quant_dots_.find(id);
    if (id != k_.root && epilogue && quant != quant_dots_.end()) {
      quant_out_ = quant->second.first;
      quant_x_ = quant->second.second;
    }
    ValueId x = read_edge(n.inputs[0], full, inside(idx, rn(n.shape)));
    if (!keys) k_.reduce.push_back(Loop{var, v.dims[axis]});
    Value r;
    r.kind = ValueKind::kReduce;
    r.op = n.op;
    r.dtype = n.dtype;
    r.operand = n.dtype;
    r.args = {x};
    ValueId out = add(std::move(r));
    k_.reduce_at = out;
    reduced_.emplace(std::move(memo), out);
    // A matmul fused into its readers (an epilogue) brings its schedule to their kernel.
    if (id != k_.root && epilogue) {
      reduce_schedule_ = n.schedule;
      epilogue_sum_ = {id, out};
    }
    return out;
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
    reduce_schedule_.clear();
    epilogue_sum_ = {-1, -1};
    reduced_.clear();
    fused_.clear();
    reduce_vars_ = 0;
    key_var_.clear();
    quant_out_ = -1;
    auto quant = quant_dots_.find(id);
    if (quant != quant_dots_.end()) {
      quant_out_ = quant->second.first;
      quant_x_ = quant->second.second;
    }
    var_extent_.clear();
    atomized_.clear();
    atom_name_.clear();
    atom_of_.clear();
    atom_extent_.clear();
    k_.name = "k" + std::to_string(p_.kernels.size());
    k_.root = id;
    std::vector<Expr> shape = rn(n.shape);
    std::vector<Expr> idx;
    for (size_t k = 0; k < shape.size(); ++k) {
      std::string var = "i" + std::to_string(k);
      k_.loops.push_back(Loop{var, shape[k]});
      var_extent_[var] = shape[k];
      idx.push_back(Expr::symbol(var));
    }
    emit_node(id, idx, 1);
    k_.out = buffer_of_[id];
    std::vector<Expr> rs = row_major_strides(shape);
    k_.out_index = 0;
    for (size_t k = 0; k < idx.size(); ++k) k_.out_index = k_.out_index + idx[k] * rs[k];
    apply_schedule(n.schedule);
    k_.schedule.insert(k_.schedule.end(), reduce_schedule_.begin(), reduce_schedule_.end());
    reduction_first(k_);
    k_.matmul = match_matmul(k_);
    if (quant_out_ >= 0) {
      // a quant_dot kernel: a matmul whose a is x, or the SumReduce is lowered as by default
      if (!quant_dot_shaped(k_, buffer_of_[quant_x_.node])) {
        not_quant_dot_.insert(id);
        return;
      }
      k_.matmul.a_q8_0 = true;
    }
    if (!key_var_.empty()) {
      // an attention kernel: its fused reductions are the scores' dot and the keys' max and
      // sum; where its value graph is not attention's, the SumReduce is lowered as by default
      k_.attention = match_attention(k_);
      if (!k_.attention.present) {
        not_attention_.insert(id);
        return;
      }
      k_.matmul = MatmulInfo{};
      p_.kernels.push_back(std::move(k_));
      return;
    }
    const NodeId sum = epilogue_sum_.first >= 0 ? epilogue_sum_.first : id;
    if (windows_.count(sum)) {
      // an implicit GEMM (kernel/window.h): a matmul gathering its b; where it is not, the
      // SumReduce is lowered as by default
      if (!k_.matmul.present || !k_.matmul.b_window || !fused_.empty()) {
        not_window_.insert(sum);
        return;
      }
      p_.kernels.push_back(std::move(k_));
      return;
    }
    if (prologues_.count(sum)) {
      // a prologue kernel (kernel/prologue.h): a matmul computing its a, whose row reductions
      // (if any) also make a row kernel (the fallback of a renderer without prologues); where
      // it is not, the SumReduce is lowered as by default
      if (k_.matmul.present && !fused_.empty()) k_.row = match_row(k_);
      if (!k_.matmul.present || (!fused_.empty() && !k_.row.present)) {
        not_prologue_.insert(sum);
        return;
      }
      p_.kernels.push_back(std::move(k_));
      return;
    }
    if (!fused_.empty()) {
      k_.row = match_row(k_);
      if (!k_.row.present) {
        // no row kernel: `fused_.back()`, the last fused (the innermost of nested ones: a
        // matmul's sum read along the row of a softmax's max), is to be stored
        not_row_.insert(fused_.back());
        return;
      }
      if (wants_online()) match_online(k_);
    }
    p_.kernels.push_back(std::move(k_));
  }

  // Whether a reduction fused into the kernel is scheduled row 2: its max and sum online.
  bool wants_online() const {
    for (NodeId id : fused_) {
      if (schedule_param(g_.node(id).schedule, kRowParam) == std::optional<int64_t>(2)) {
        return true;
      }
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
  std::vector<int> buffer_of_;  // per node: its buffer (BufferId), -1 computed inline
  std::set<NodeId> skipped_;  // Output nodes whose producer writes their buffer
  Kernel k_;
  std::map<std::string, ValueId> cse_;
  ScheduleParams reduce_schedule_;  // of the kernel's epilogue matmul (not the root)
  std::pair<NodeId, ValueId> epilogue_sum_{-1, -1};  // that matmul's node and its kReduce
  std::map<std::string, ValueId> reduced_;  // emit_reduce's: node and index -> its kReduce
  std::vector<NodeId> fused_;  // reductions emitted in the kernel other than its root
  std::set<NodeId> not_row_;   // this lowering's failed row fusions (their reductions)
  std::set<NodeId> not_attention_;  // this lowering's SumReduces not attention-shaped
  std::set<NodeId> attention_keys_;  // the plan's: reductions run in an attention root's loop
  std::set<NodeId> attention_roots_;  // the plan's: SumReduces computing an attention region
  std::map<NodeId, std::pair<NodeId, Edge>> quant_dots_;  // the plan's (buffer_plan.h)
  std::set<NodeId> not_quant_dot_;  // this lowering's quant_dot SumReduces not matmul-shaped
  std::set<NodeId> prologues_;  // the plan's: SumReduces computing their A (kernel/prologue.h)
  std::set<NodeId> not_prologue_;  // this lowering's prologue SumReduces not matmul-shaped
  std::set<NodeId> windows_;  // the plan's: SumReduces gathering their B (kernel/window.h)
  std::set<NodeId> not_window_;  // this lowering's window SumReduces not matmul-shaped
  NodeId quant_out_ = -1;  // the kernel's quantized activations, read as x; -1 for none
  Edge quant_x_{-1, ShapeTracker{}};
  std::string key_var_;  // the kernel's attention loop (its root's), "" for none
  Expr key_extent_;      // its extent
  int reduce_vars_ = 0;        // reduction loops named so far: r0, r1, ...
  std::map<std::string, Expr> var_extent_;  // the kernel's loop variables so far: extents
  // Iota elements read at coordinates that are not loop variables, as Exprs of atoms: a fresh
  // symbol per coordinate (its text: atom_name_), standing for the coordinate (atom_of_) and
  // ranging over the Iota's extent (atom_extent_); emit_gather's unravel reads them.
  std::map<ValueId, Expr> atomized_;
  std::map<std::string, std::string> atom_name_;
  std::map<std::string, Expr> atom_of_;
  std::map<std::string, Expr> atom_extent_;
};

}  // namespace

Program lower_graph(const Graph& graph, const ScheduleParams& program_schedule) {
  return Lowerer(graph, program_schedule).run();
}

}  // namespace luminal
