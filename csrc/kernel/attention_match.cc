// match_attention: whether a kernel lowered from an attention region (kernel/attention.h) has
// the value graph the fused renderings need, read from which value feeds which and which loop
// variables each depends on. Not the region itself (attention_region.cc).
#include <algorithm>
#include <string>

#include "kernel/attention.h"

namespace luminal {

namespace {

constexpr int64_t kMaxFeatures = 256;  // the most q/k features and v features a kernel holds

// Per value: the loop variables it depends on (through its args and indices).
std::vector<std::set<std::string>> loop_uses(const Kernel& k) {
  std::set<std::string> vars;
  for (const Loop& l : k.loops) vars.insert(l.var);
  for (const Loop& l : k.reduce) vars.insert(l.var);
  std::vector<std::set<std::string>> uses(k.values.size());
  for (size_t i = 0; i < k.values.size(); ++i) {
    const Value& v = k.values[i];
    std::set<std::string>& u = uses[i];
    for (ValueId a : v.args) u.insert(uses[a].begin(), uses[a].end());
    for (const Bind& b : v.binds) u.insert(uses[b.value].begin(), uses[b.value].end());
    for (const Expr* e : {&v.index, &v.valid}) {
      for (const std::string& s : e->symbols()) {
        if (vars.count(s)) u.insert(s);
      }
    }
    // A reduction no longer depends on its own loop: the dot's (reduce[0], the first loop
    // lowering closes) or the keys' (reduce[1], the root's, shared by the max and the sum).
    if (v.kind == ValueKind::kReduce && k.reduce.size() == 2) {
      if (!u.erase(k.reduce[0].var)) u.erase(k.reduce[1].var);
    }
  }
  return uses;
}

bool is_const(const Kernel& k, ValueId id, double number) {
  const Value& v = k.values[id];
  return v.kind == ValueKind::kConst && v.number == number;
}

// Whether every value of the cone of `from` (stopping at `stops`) is f32 or an index-like
// dtype, and none of them is a reduction.
bool plain_cone(const Kernel& k, ValueId from, const std::set<ValueId>& stops) {
  for (ValueId i : attention_cone(k, from, stops)) {
    if (k.values[i].kind == ValueKind::kReduce) return false;
  }
  return true;
}

// Sets a.bias and a.dot_scale where a.score = dot * c + bias (either order, c optional).
void split_score(const Kernel& k, AttentionInfo& a) {
  const Value& add = k.values[a.score];
  if (add.kind != ValueKind::kBinary || add.op != OpKind::Add) return;
  for (int side = 0; side < 2; ++side) {
    ValueId scaled = add.args[side];
    ValueId bias = add.args[1 - side];
    std::vector<ValueId> bias_cone = attention_cone(k, bias, {});
    if (std::find(bias_cone.begin(), bias_cone.end(), a.dot) != bias_cone.end()) continue;
    if (scaled == a.dot) {
      a.bias = bias;
      return;
    }
    const Value& mul = k.values[scaled];
    if (mul.kind != ValueKind::kBinary || mul.op != OpKind::Mul) continue;
    for (int c = 0; c < 2; ++c) {
      if (mul.args[1 - c] != a.dot || k.values[mul.args[c]].kind != ValueKind::kConst) continue;
      a.bias = bias;
      a.dot_scale = mul.args[c];
      return;
    }
  }
}

}  // namespace

std::vector<ValueId> attention_cone(const Kernel& kernel, ValueId from,
                                    const std::set<ValueId>& stops) {
  std::set<ValueId> seen;
  std::vector<ValueId> stack = {from};
  while (!stack.empty()) {
    ValueId id = stack.back();
    stack.pop_back();
    if (stops.count(id) || !seen.insert(id).second) continue;
    const Value& v = kernel.values[id];
    for (ValueId a : v.args) stack.push_back(a);
    for (const Bind& b : v.binds) stack.push_back(b.value);
  }
  return std::vector<ValueId>(seen.begin(), seen.end());
}

namespace {

// The loop variables the match reads and, per value, the loop variables it reads.
struct AttentionVars {
  std::string key, dot, value;
  std::vector<std::set<std::string>> uses;
  bool reads(ValueId v, const std::string& var) const { return uses[v].count(var) > 0; }
};

// The reductions: the root's over the keys (its loop is the last pushed), the dot's, and
// optionally a max and a sum over the keys (sharing the root's loop).
bool find_reductions(const Kernel& k, const AttentionVars& vars, AttentionInfo& a) {
  for (size_t i = 0; i + 1 < k.values.size(); ++i) {
    const Value& v = k.values[i];
    if (v.kind != ValueKind::kReduce) continue;
    if (v.dtype != DType::F32) return false;
    if (vars.reads(v.args[0], vars.dot)) {
      if (a.dot >= 0 || v.op != OpKind::SumReduce) return false;
      a.dot = ValueId(i);
    } else if (v.op == OpKind::MaxReduce && a.max < 0) {
      a.max = ValueId(i);
    } else if (v.op == OpKind::SumReduce && a.sum < 0) {
      a.sum = ValueId(i);
    } else {
      return false;
    }
  }
  return a.dot >= 0;
}

// root = sum over keys of prob * value, prob = weight or weight * norm
bool find_value_product(const Kernel& k, const AttentionVars& vars, AttentionInfo& a) {
  const Value& product = k.values[k.values.back().args[0]];
  if (product.kind != ValueKind::kBinary || product.op != OpKind::Mul) return false;
  for (int side = 0; side < 2 && a.value < 0; ++side) {
    ValueId prob = product.args[side];
    ValueId value = product.args[1 - side];
    if (vars.reads(prob, vars.value) || !vars.reads(value, vars.key)) continue;
    ValueId weight = prob;
    ValueId norm = -1;
    const Value& p = k.values[prob];
    if (p.kind == ValueKind::kBinary && p.op == OpKind::Mul) {
      for (int n = 0; n < 2 && norm < 0; ++n) {
        if (!vars.reads(p.args[n], vars.key)) {
          norm = p.args[n];
          weight = p.args[1 - n];
        }
      }
    }
    a.value = value;
    a.weight = weight;
    a.norm = norm;
  }
  return a.value >= 0;
}

// weight = exp2(c * (score + (-1 * shift)))
bool find_exp_weight(const Kernel& k, AttentionInfo& a) {
  const Value& exp = k.values[a.weight];
  if (exp.kind != ValueKind::kUnary || exp.op != OpKind::Exp2) return false;
  const Value& scaled = k.values[exp.args[0]];
  if (scaled.kind != ValueKind::kBinary || scaled.op != OpKind::Mul) return false;
  for (int c = 0; c < 2 && a.scale < 0; ++c) {
    const Value& sv = k.values[scaled.args[c]];
    if (sv.kind != ValueKind::kConst || !(sv.number > 0)) continue;
    const Value& add = k.values[scaled.args[1 - c]];
    if (add.kind != ValueKind::kBinary || add.op != OpKind::Add) continue;
    for (int n = 0; n < 2 && a.scale < 0; ++n) {
      const Value& neg = k.values[add.args[n]];
      if (neg.kind != ValueKind::kBinary || neg.op != OpKind::Mul) continue;
      for (int m = 0; m < 2 && a.scale < 0; ++m) {
        if (!is_const(k, neg.args[1 - m], -1)) continue;
        a.shift = neg.args[m];
        a.score = add.args[1 - n];
        a.scale = scaled.args[c];
      }
    }
  }
  return a.scale >= 0;
}

// The dot: sum over the dot's variable of q * k, q not over the keys, k over them.
bool find_dot_operands(const Kernel& k, const AttentionVars& vars, AttentionInfo& a) {
  const Value& qk = k.values[k.values[a.dot].args[0]];
  if (qk.kind != ValueKind::kBinary || qk.op != OpKind::Mul || qk.operand != DType::F32) {
    return false;
  }
  for (int side = 0; side < 2 && a.q < 0; ++side) {
    if (vars.reads(qk.args[side], vars.key) || !vars.reads(qk.args[1 - side], vars.key)) {
      continue;
    }
    a.q = qk.args[side];
    a.k = qk.args[1 - side];
  }
  return a.q >= 0;
}

// Which loop each part may read; the max and sum are the scores' and the weights', read only
// by the shift and the norm; every part a plain cone.
bool parts_are_separable(const Kernel& k, const AttentionVars& vars, const AttentionInfo& a) {
  if (vars.reads(a.q, vars.value) || vars.reads(a.k, vars.value) ||
      vars.reads(a.score, vars.value)) {
    return false;
  }
  if (vars.reads(a.value, vars.dot) || !vars.reads(a.score, vars.key)) return false;
  for (ValueId row : {a.shift, a.norm}) {
    if (row >= 0 && (vars.reads(row, vars.key) || vars.reads(row, vars.value) ||
                     vars.reads(row, vars.dot))) {
      return false;
    }
  }
  if (a.max >= 0 && k.values[a.max].args[0] != a.score) return false;
  if (a.sum >= 0 && k.values[a.sum].args[0] != a.weight) return false;
  std::set<ValueId> shift_cone;
  for (ValueId v : attention_cone(k, a.shift, {})) shift_cone.insert(v);
  if (a.max >= 0 && !shift_cone.count(a.max)) return false;
  if (a.sum >= 0 && shift_cone.count(a.sum)) return false;
  if (a.sum >= 0) {
    if (a.norm < 0) return false;
    std::vector<ValueId> norm_cone = attention_cone(k, a.norm, {});
    if (std::find(norm_cone.begin(), norm_cone.end(), a.sum) == norm_cone.end()) return false;
    if (!plain_cone(k, a.norm, {a.sum, a.max})) return false;
  }
  if (!plain_cone(k, a.score, {a.dot}) || !plain_cone(k, a.value, {})) return false;
  if (!plain_cone(k, a.q, {}) || !plain_cone(k, a.k, {})) return false;
  if (a.max >= 0 && !plain_cone(k, a.shift, {a.max})) return false;
  if (a.max < 0 && !plain_cone(k, a.shift, {})) return false;
  return true;
}

}  // namespace

AttentionInfo match_attention(const Kernel& k) {
  AttentionInfo a;
  if (k.loops.empty() || k.reduce.size() != 2 || k.values.empty()) return {};
  const Value& out = k.values.back();
  if (out.kind != ValueKind::kReduce || out.op != OpKind::SumReduce) return {};
  if (out.dtype != DType::F32) return {};
  a.key_reduce = 1;
  a.dot_reduce = 0;
  a.value_loop = static_cast<int>(k.loops.size()) - 1;
  const AttentionVars vars{k.reduce[1].var, k.reduce[0].var, k.loops[a.value_loop].var,
                           loop_uses(k)};
  if (!find_reductions(k, vars, a) || !find_value_product(k, vars, a)) return {};
  if (!find_exp_weight(k, a) || !find_dot_operands(k, vars, a)) return {};
  if (!parts_are_separable(k, vars, a)) return {};
  // Constant extents for the features, held in arrays of the kernel.
  for (const Expr* e : {&k.reduce[0].extent, &k.loops[a.value_loop].extent}) {
    auto c = e->try_const();
    if (!c || *c < 1 || *c > kMaxFeatures) return {};
  }
  // The query rows: the last loop but d that k does not read (every row shares its keys).
  for (int l = a.value_loop - 1; l >= 0 && a.query_loop < 0; --l) {
    if (!vars.reads(a.k, k.loops[l].var)) a.query_loop = l;
  }
  if (a.query_loop < 0) return {};
  split_score(k, a);
  // k and v read no query row: a tile of keys and values serves every tile of query rows
  if (vars.reads(a.k, k.loops[a.query_loop].var)) return {};
  if (vars.reads(a.value, k.loops[a.query_loop].var)) return {};
  for (size_t l = 0; l < k.loops.size(); ++l) {
    if (static_cast<int>(l) != a.value_loop) a.rows.push_back(static_cast<int>(l));
  }
  a.shift_cone = attention_cone(k, a.shift, {a.max});
  if (a.norm >= 0) a.norm_cone = attention_cone(k, a.norm, {a.sum, a.max});
  a.present = true;
  return a;
}

}  // namespace luminal
