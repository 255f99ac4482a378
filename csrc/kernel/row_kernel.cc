// match_row: which loop each value of a row kernel runs in, from the loop variables its value
// depends on (kernel/row_kernel.h).
#include "kernel/row_kernel.h"

#include <map>
#include <set>
#include <string>

namespace luminal {

namespace {

// The loops a value depends on: reduction loops (indices into Kernel::reduce) and output
// loops (indices into Kernel::loops).
struct Uses {
  std::set<int> inner;
  std::set<int> outer;
};

}  // namespace

RowInfo match_row(const Kernel& kernel) {
  RowInfo none;
  std::map<std::string, int> inner_var;
  std::map<std::string, int> outer_var;
  for (size_t k = 0; k < kernel.reduce.size(); ++k) inner_var[kernel.reduce[k].var] = int(k);
  for (size_t k = 0; k < kernel.loops.size(); ++k) outer_var[kernel.loops[k].var] = int(k);
  RowInfo row;
  for (size_t i = 0; i < kernel.values.size(); ++i) {
    if (kernel.values[i].kind == ValueKind::kReduce) row.reductions.push_back(ValueId(i));
  }
  if (row.reductions.empty() || row.reductions.size() != kernel.reduce.size()) return none;
  std::vector<Uses> uses(kernel.values.size());
  auto add_symbols = [&](const Expr& e, Uses& u) {
    for (const std::string& s : e.symbols()) {
      if (auto it = inner_var.find(s); it != inner_var.end()) u.inner.insert(it->second);
      if (auto it = outer_var.find(s); it != outer_var.end()) u.outer.insert(it->second);
    }
  };
  int stage = 0;
  for (size_t i = 0; i < kernel.values.size(); ++i) {
    const Value& v = kernel.values[i];
    Uses& u = uses[i];
    for (ValueId a : v.args) {
      u.inner.insert(uses[a].inner.begin(), uses[a].inner.end());
      u.outer.insert(uses[a].outer.begin(), uses[a].outer.end());
    }
    for (const Bind& b : v.binds) {
      u.inner.insert(uses[b.value].inner.begin(), uses[b.value].inner.end());
      u.outer.insert(uses[b.value].outer.begin(), uses[b.value].outer.end());
    }
    if (v.kind == ValueKind::kLoad || v.kind == ValueKind::kIndex) add_symbols(v.index, u);
    if (v.kind == ValueKind::kLoad || v.kind == ValueKind::kSelect) add_symbols(v.valid, u);
    if (v.kind == ValueKind::kReduce) u.inner.erase(stage++);
    if (u.inner.size() > 1) return none;
  }
  // The output loops the reductions run under are the row's; the one left is the row.
  std::set<int> row_axes;
  for (size_t i = 0; i < kernel.values.size(); ++i) {
    bool reducing = !uses[i].inner.empty() || kernel.values[i].kind == ValueKind::kReduce;
    if (reducing) row_axes.insert(uses[i].outer.begin(), uses[i].outer.end());
  }
  std::vector<int> left;
  for (size_t k = 0; k < kernel.loops.size(); ++k) {
    if (!row_axes.count(int(k))) left.push_back(int(k));
  }
  if (left.size() > 1) return none;
  row.row_loop = left.empty() ? -1 : left[0];
  int final_scope = static_cast<int>(row.reductions.size());
  for (size_t i = 0; i < kernel.values.size(); ++i) {
    const Uses& u = uses[i];
    if (!u.inner.empty()) {
      row.scope.push_back(*u.inner.begin());
    } else if (row.row_loop >= 0 && u.outer.count(row.row_loop)) {
      row.scope.push_back(final_scope);
    } else {
      row.scope.push_back(RowInfo::kRowScope);
    }
  }
  // The stored value runs where the store does: in the row loop, or once per row.
  int stored = row.scope.back();
  if (stored != final_scope && stored != RowInfo::kRowScope) return none;
  for (size_t k = 0; k < kernel.loops.size(); ++k) {
    if (static_cast<int>(k) != row.row_loop) row.rows.push_back(static_cast<int>(k));
  }
  row.present = true;
  return row;
}

namespace {

// Whether value `a` (over loop variable `va`) is value `b` (over `vb`): the same tree, loads
// and indices alike up to the renaming, row-scope leaves the same values.
bool same_value(const Kernel& k, ValueId a, const std::string& va, ValueId b,
                const std::string& vb) {
  if (a == b) return true;
  const Value& x = k.values[a];
  const Value& y = k.values[b];
  if (k.row.scope[a] == RowInfo::kRowScope || k.row.scope[b] == RowInfo::kRowScope) return false;
  if (x.kind != y.kind || x.dtype != y.dtype || x.operand != y.operand || x.op != y.op) {
    return false;
  }
  if (x.buffer != y.buffer || x.number != y.number || x.args.size() != y.args.size()) {
    return false;
  }
  if (!x.binds.empty() || !y.binds.empty()) return false;
  Expr rename = Expr::symbol(va);
  if (x.index.to_string() != y.index.substitute(vb, rename).to_string()) return false;
  if (x.valid.to_string() != y.valid.substitute(vb, rename).to_string()) return false;
  for (size_t i = 0; i < x.args.size(); ++i) {
    if (!same_value(k, x.args[i], va, y.args[i], vb)) return false;
  }
  return true;
}

// The other argument of binary `v` (op `op`) when one of them is `arg`, else -1.
ValueId other_arg(const Value& v, OpKind op, ValueId arg) {
  if (v.kind != ValueKind::kBinary || v.op != op) return -1;
  if (v.args[0] == arg) return v.args[1];
  if (v.args[1] == arg) return v.args[0];
  return -1;
}

bool is_const_value(const Kernel& k, ValueId id, double number) {
  const Value& v = k.values[id];
  return v.kind == ValueKind::kConst && v.number == number;
}

// The values of loop `step` reachable from `from` without leaving the loop.
void loop_cone(const Kernel& k, ValueId from, int step, std::set<ValueId>& out) {
  if (k.row.scope[from] != step || !out.insert(from).second) return;
  for (ValueId a : k.values[from].args) loop_cone(k, a, step, out);
}

// Loops s (a max) and s + 1 (the sum of exp2 of the shifted value) as match_online says; the
// scale constant, or -1.
ValueId online_pair(const Kernel& k, int s) {
  const RowInfo& row = k.row;
  const Value& max = k.values[row.reductions[s]];
  const Value& sum = k.values[row.reductions[s + 1]];
  if (max.op != OpKind::MaxReduce || sum.op != OpKind::SumReduce) return -1;
  if (max.dtype != DType::F32 || sum.dtype != DType::F32) return -1;
  // sum's body: exp2(c * (x' + (-1 * m)))
  const Value& exp = k.values[sum.args[0]];
  if (exp.kind != ValueKind::kUnary || exp.op != OpKind::Exp2) return -1;
  const Value& scaled = k.values[exp.args[0]];
  if (scaled.kind != ValueKind::kBinary || scaled.op != OpKind::Mul) return -1;
  for (int c = 0; c < 2; ++c) {
    ValueId scale = scaled.args[c];
    ValueId shifted = scaled.args[1 - c];
    const Value& sv = k.values[scale];
    if (sv.kind != ValueKind::kConst || !(sv.number > 0)) continue;
    const Value& add = k.values[shifted];
    if (add.kind != ValueKind::kBinary || add.op != OpKind::Add) continue;
    for (int n = 0; n < 2; ++n) {
      ValueId negated = add.args[n];
      ValueId x = add.args[1 - n];
      ValueId minus_one = other_arg(k.values[negated], OpKind::Mul, row.reductions[s]);
      if (minus_one < 0 || !is_const_value(k, minus_one, -1)) continue;
      const std::string& vs = k.reduce[s].var;
      const std::string& vn = k.reduce[s + 1].var;
      if (!same_value(k, max.args[0], vs, x, vn)) continue;
      std::set<ValueId> body;
      loop_cone(k, x, s + 1, body);
      body.insert({shifted, exp.args[0], sum.args[0]});
      if (body.size() != values_in(k, s + 1).size()) continue;
      return scale;
    }
  }
  return -1;
}

}  // namespace

void match_online(Kernel& kernel) {
  RowInfo& row = kernel.row;
  for (int s = 0; s + 1 < static_cast<int>(row.reductions.size()); ++s) {
    ValueId scale = online_pair(kernel, s);
    if (scale < 0) continue;
    row.online = s;
    row.online_scale = scale;
    row.online_max = row.reductions[s];
    row.online_sum = row.reductions[s + 1];
    row.online_x = kernel.values[row.online_max].args[0];
    return;
  }
}

namespace {
bool special_in_cone(const Kernel& k, ValueId v, int step) {
  std::set<ValueId> cone;
  loop_cone(k, v, step, cone);
  for (ValueId i : cone) {
    if (k.values[i].kind == ValueKind::kUnary) return true;  // every unary op is a call
  }
  return false;
}
}  // namespace

RowStash match_stash(const Kernel& kernel) {
  const RowInfo& row = kernel.row;
  RowStash none;
  if (!row.present || row.row_loop < 0 || row.reductions.empty() || row.online >= 0) return none;
  const int last = static_cast<int>(row.reductions.size()) - 1;
  const int steps = last + 1;
  const Loop& rl = kernel.loops[row.row_loop];
  const Loop& red = kernel.reduce[last];
  if (!(rl.extent == red.extent)) return none;
  // The output's elements along the row at unit stride: one per iteration, in order.
  if (!(kernel.out_index.substitute(rl.var, Expr(0)) + Expr::symbol(rl.var) ==
        kernel.out_index)) {
    return none;
  }
  std::vector<ValueId> in_row = values_in(kernel, steps);
  std::vector<ValueId> in_red = values_in(kernel, last);
  for (auto v = in_row.rbegin(); v != in_row.rend(); ++v) {
    const Value& x = kernel.values[*v];
    if (x.dtype != DType::F32 || x.kind == ValueKind::kLoad || x.kind == ValueKind::kConst) {
      continue;
    }
    if (!special_in_cone(kernel, *v, steps)) continue;
    for (ValueId u : in_red) {
      if (same_value(kernel, u, red.var, *v, rl.var)) return RowStash{*v, u};
    }
  }
  return none;
}

std::vector<ValueId> row_values_before(const Kernel& kernel, int step) {
  const RowInfo& row = kernel.row;
  int last = static_cast<int>(row.reductions.size());
  ValueId from = step == 0 ? 0 : row.reductions[step - 1] + 1;
  ValueId to = step == last ? ValueId(kernel.values.size()) : row.reductions[step];
  std::vector<ValueId> out;
  for (ValueId i = from; i < to; ++i) {
    if (row.scope[i] == RowInfo::kRowScope) out.push_back(i);
  }
  return out;
}

std::vector<ValueId> values_in(const Kernel& kernel, int step) {
  std::vector<ValueId> out;
  for (size_t i = 0; i < kernel.values.size(); ++i) {
    if (kernel.row.scope[i] == step) out.push_back(ValueId(i));
  }
  return out;
}

}  // namespace luminal
