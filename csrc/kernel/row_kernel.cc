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
  row.present = true;
  return row;
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
