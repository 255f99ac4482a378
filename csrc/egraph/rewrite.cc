// Parsing rule files into Rewrites, checking their conditions, and loading the embedded set.
#include "egraph/rewrite.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "core/errors.h"
#include "egraph/matmul_shape.h"
#include "ir/quant_activations.h"

namespace luminal::egraph {

namespace {
struct CondName {
  const char* name;
  CondKind kind;
  int arity;
};
constexpr CondName kConds[] = {
    {"identity", CondKind::Identity, 1}, {"unmasked", CondKind::Unmasked, 1},
    {"nonneg", CondKind::Nonneg, 1},     {"int", CondKind::Int, 1},
    {"float", CondKind::Float, 1},       {"uniform", CondKind::Uniform, 1},
    {"not-const", CondKind::NotConst, 1}, {"same-dtype", CondKind::SameDtype, 2},
    {"matmul", CondKind::Matmul, 3},
    {"half", CondKind::Half, 1},         {"quantized", CondKind::Quantized, 1},
    {"parameter", CondKind::Parameter, 1}, {"broadcast", CondKind::Broadcast, 1},
    {"pow2", CondKind::Pow2, 1},         {"attention", CondKind::Attention, 3},
    {"quant-dot", CondKind::QuantDot, 3}, {"prologue", CondKind::Prologue, 3},
    {"window", CondKind::Window, 3},      {"read-once", CondKind::ReadOnce, 1}, {"bf16", CondKind::Bf16, 1},
    {"rounds-to-bf16", CondKind::RoundsToBf16, 1},
};

Condition parse_condition(const SExpr& e, Scope& scope, const std::string& where) {
  auto fail = [&](const std::string& what) -> Condition {
    throw CompileError(where + " line " + std::to_string(e.line) + ": " + what + " in " +
                       e.to_string());
  };
  if (!e.is_list || e.items.empty() || e.items[0].is_list) return fail("bad condition");
  for (const CondName& c : kConds) {
    if (e.items[0].atom != c.name) continue;
    if (static_cast<int>(e.items.size()) != c.arity + 1) return fail("wrong operand count");
    Condition cond{c.kind};
    int* slots[2] = {&cond.x, &cond.y};
    bool labelled = c.kind == CondKind::Matmul || c.kind == CondKind::Attention ||
                    c.kind == CondKind::QuantDot || c.kind == CondKind::Prologue ||
                    c.kind == CondKind::Window;
    if (c.kind == CondKind::ReadOnce || c.kind == CondKind::RoundsToBf16) {  // a label only
      const SExpr& l = e.items[1];
      cond.label = l.is_list ? -1 : scope.label(l.atom, false);
      if (cond.label < 0) return fail("the operand is a label bound on the left");
      cond.x = 0;  // ?root
      return cond;
    }
    int vars = labelled ? 2 : c.arity;
    if (labelled) {
      const SExpr& l = e.items[3];
      cond.label = l.is_list ? -1 : scope.label(l.atom, false);
      if (cond.label < 0) return fail("the third operand is a label bound on the left");
    }
    for (int k = 0; k < vars; ++k) {
      const SExpr& v = e.items[k + 1];
      *slots[k] = v.is_list ? -1 : scope.var(v.atom, false);
      if (*slots[k] < 0) return fail("conditions take variables bound on the left");
    }
    return cond;
  }
  return fail("unknown condition '" + e.items[0].atom + "'");
}

// Whether view `v` reads some element more than once (a stride 0 along an axis longer than 1).
bool repeats_elements(const ShapeTracker& v) {
  if (v.has_mask()) return false;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (is_zero(v.strides[k]) && !is_one(v.dims[k])) return true;
  }
  return false;
}

// Whether class `c` is bf16 or holds a Cast of a bf16 class (a bf16 value widened to f32).
bool holds_bf16(const EGraph& g, Id c) {
  if (g.data(c).dtype == DType::BF16) return true;
  for (const ENode& n : g.nodes(c)) {
    if (n.op == OpKind::Cast && g.data(n.children[0].cls).dtype == DType::BF16) return true;
  }
  return false;
}

// Whether class `c` holds an Exp2 or, `through_mul`, a Mul of a class that does (softmax's
// weights e / sum(e)).
bool holds_exp2(const EGraph& g, Id c, bool through_mul) {
  for (const ENode& n : g.nodes(c)) {
    if (n.op == OpKind::Exp2) return true;
    if (!through_mul || n.op != OpKind::Mul) continue;
    for (const EEdge& e : n.children) {
      if (holds_exp2(g, e.cls, false)) return true;
    }
  }
  return false;
}
// Whether class `c` is, within `depth` elementwise steps, a reduction over more than a few
// elements (a row statistic: a norm's sum of squares).
bool holds_reduction(const EGraph& g, Id c, int depth, std::set<Id>& seen) {
  if (!seen.insert(g.find(c)).second) return false;
  for (const ENode& n : g.nodes(c)) {
    if (is_reduce(n.op)) {
      const ShapeTracker& v = g.view(n.children[0].view);
      const size_t axis = static_cast<size_t>(g.attr(n.attr).node.axis);
      std::optional<int64_t> extent = v.dims.at(axis).try_const();
      if (!extent || *extent > 4) return true;  // a loop, not unrolled (kernel/buffer_plan.h)
      continue;
    }
    if (depth == 0 || !is_elementwise(n.op)) continue;
    for (const EEdge& e : n.children) {
      if (holds_reduction(g, e.cls, depth - 1, seen)) return true;
    }
  }
  return false;
}

// Whether class `c` is, within `depth` elementwise steps, elementwise work reading through a
// broadcast a class that holds a reduction (x * r, r a row's statistic).
bool row_scaled(const EGraph& g, Id c, int depth, std::set<Id>& seen) {
  if (!seen.insert(g.find(c)).second) return false;
  for (const ENode& n : g.nodes(c)) {
    if (!is_elementwise(n.op)) continue;
    for (const EEdge& e : n.children) {
      std::set<Id> inner;
      if (repeats_elements(g.view(e.view)) && holds_reduction(g, e.cls, 6, inner)) return true;
      if (depth > 0 && row_scaled(g, e.cls, depth - 1, seen)) return true;
    }
  }
  return false;
}

// The e-graph as ir/quant_activations.h reads it: a class's e-nodes, each structure once (the
// matcher tries both operand orders itself, and reads no schedule: a commuted copy or a
// scheduled variant of an e-node would only repeat its search).
class EGraphQa : public QaGraph {
 public:
  explicit EGraphQa(const EGraph& g) : g_(g) {}
  const std::vector<QaNode>& nodes(int64_t id) const override {
    const Id c = g_.find(static_cast<Id>(id));
    auto [known, fresh] = nodes_.try_emplace(c);
    std::vector<QaNode>& out = known->second;
    if (!fresh) return out;
    std::set<std::vector<std::pair<int64_t, ViewId>>> seen;
    for (const ENode& n : g_.nodes(c)) {
      std::vector<std::pair<int64_t, ViewId>> key = {{static_cast<int64_t>(n.op), -1}};
      for (const EEdge& e : n.children) key.emplace_back(g_.find(e.cls), e.view);
      if (n.op == OpKind::Add || n.op == OpKind::Mul) std::sort(key.begin() + 1, key.end());
      if (n.attr >= 0) key.emplace_back(g_.attr(n.attr).node.axis, -2);  // a reduction's axis
      if (!seen.insert(key).second) continue;
      QaNode q{n.op, g_.data(c).dtype, n.attr >= 0 ? g_.attr(n.attr).node.axis : -1, {}};
      for (const EEdge& e : n.children) {
        q.inputs.push_back(QaEdge{g_.find(e.cls), &g_.view(e.view), g_.is_identity(e)});
      }
      out.push_back(std::move(q));
    }
    return out;
  }
  std::vector<Expr> shape(int64_t id) const override {
    return g_.data(static_cast<Id>(id)).shape;
  }
  std::optional<double> uniform(const QaEdge& e) const override {
    if (e.view->has_mask()) return std::nullopt;
    return g_.data(static_cast<Id>(e.id)).uniform;
  }

 private:
  const EGraph& g_;
  mutable std::unordered_map<int64_t, std::vector<QaNode>> nodes_;  // by canonical class
};

// Whether class `c` holds a Gather whose index is Int: a window of the data (a convolution's
// columns, nn/_grid.gather_linear), which the lowering reads as a view where the index is
// index arithmetic of its loops.
bool holds_window(const EGraph& g, Id c) {
  for (const ENode& n : g.nodes(c)) {
    if (n.op == OpKind::Gather && g.data(n.children[1].cls).dtype == DType::Int) return true;
  }
  return false;
}

// Whether class `c` holds a Cast of a quantized class (a weight dequantized for a matmul).
bool holds_dequantized(const EGraph& g, Id c) {
  for (const ENode& n : g.nodes(c)) {
    if (n.op == OpKind::Cast && is_quantized(g.data(n.children[0].cls).dtype)) return true;
  }
  return false;
}

bool quant_dot(const EGraph& g, const EEdge& a, const EEdge& b) {
  const std::array<int64_t, 5> key{0, g.find(a.cls), a.view, g.find(b.cls), b.view};
  auto [known, fresh] = g.condition_answers().try_emplace(key, false);
  if (!fresh) return known->second;
  EGraphQa qa(g);
  for (const auto& [act, weight] : {std::pair{a, b}, std::pair{b, a}}) {
    if (holds_dequantized(g, weight.cls) && match_q8_0_activations(qa, g.find(act.cls))) {
      known->second = true;
      return true;
    }
  }
  return false;
}

// (read-once r): whether every class holding the reduction labelled r (its `attr`) among the
// children of `root`'s e-nodes (at least one) is read by no class but `root`. Folding the
// root's work into the reduction then duplicates nothing; where another class reads it (a
// SiLU's x * sigmoid(-x) of a matmul), the fold would compute the matmul twice.
bool read_only_by(const EGraph& g, Id root, AttrId attr) {
  root = g.find(root);
  std::set<Id> labelled;
  for (const ENode& n : g.nodes(root)) {
    for (const EEdge& e : n.children) {
      for (const ENode& m : g.nodes(e.cls)) {
        bool reduction = m.op == OpKind::SumReduce || m.op == OpKind::MaxReduce;
        if (reduction && m.attr == attr) labelled.insert(g.find(e.cls));
      }
    }
  }
  if (labelled.empty()) return false;
  for (Id c : labelled) {
    for (Id reader : g.readers(c)) {
      if (reader != root) return false;
    }
  }
  return true;
}
}  // namespace

bool Rewrite::holds(const EGraph& g, const Subst& s) const {
  for (const Condition& c : conditions) {
    const EEdge& x = s.vars[c.x];
    const ClassData& d = g.data(x.cls);
    bool ok = true;
    switch (c.kind) {
      case CondKind::Identity:
        ok = g.is_identity(x);
        break;
      case CondKind::Unmasked:
        ok = !g.view_masked(x.view);
        break;
      case CondKind::Nonneg:
        ok = d.nonneg;
        break;
      case CondKind::Int:
        ok = !is_float(d.dtype);
        break;
      case CondKind::Float:
        ok = is_float(d.dtype);
        break;
      case CondKind::Uniform:
        ok = d.uniform.has_value() && !g.view_masked(x.view);
        break;
      case CondKind::NotConst:
        ok = !d.has_constant;
        break;
      case CondKind::SameDtype:
        ok = d.dtype == g.data(s.vars[c.y].cls).dtype;
        break;
      case CondKind::Half:
        ok = d.dtype == DType::F16 || d.dtype == DType::BF16;
        break;
      case CondKind::Quantized:
        ok = is_quantized(d.dtype);
        break;
      case CondKind::Bf16:
        ok = holds_bf16(g, x.cls);
        break;
      case CondKind::Parameter:
        ok = holds_parameter(g, x.cls, true);
        break;
      case CondKind::ReadOnce:
        ok = read_only_by(g, x.cls, s.labels[c.label]);
        break;
      case CondKind::RoundsToBf16: {
        const AttrId a = s.labels[c.label];
        ok = a >= 0 && g.attr(a).node.op == OpKind::Cast && g.attr(a).node.dtype == DType::BF16;
        break;
      }
      case CondKind::Pow2: {
        int exponent = 0;
        ok = d.uniform.has_value() && *d.uniform != 0 && std::isfinite(*d.uniform) &&
             std::fabs(std::frexp(*d.uniform, &exponent)) == 0.5;
        break;
      }
      case CondKind::Broadcast:
        ok = repeats_elements(g.view(x.view));
        break;
      case CondKind::Matmul:
      case CondKind::Attention:
      case CondKind::QuantDot:
      case CondKind::Prologue:
      case CondKind::Window: {
        AttrId attr = s.labels[c.label];
        const EEdge& y = s.vars[c.y];
        std::optional<bool> a_first;
        if (attr >= 0) a_first = matmul_a_first(g, x, y, g.attr(attr).node.axis);
        ok = a_first.has_value();
        if (ok && c.kind == CondKind::Attention) {
          ok = holds_exp2(g, x.cls, true) || holds_exp2(g, y.cls, true);
        }
        if (ok && c.kind == CondKind::QuantDot) ok = quant_dot(g, x, y);
        if (ok && c.kind == CondKind::Prologue) {
          std::set<Id> seen;
          ok = row_scaled(g, (*a_first ? x : y).cls, 3, seen);
        }
        if (ok && c.kind == CondKind::Window) ok = holds_window(g, (*a_first ? y : x).cls);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

std::vector<Rewrite> parse_rules(const std::string& text, const std::string& source) {
  std::vector<Rewrite> rules;
  for (const SExpr& e : read_sexprs(text, source)) {
    auto fail = [&](const std::string& what) {
      throw CompileError(source + " line " + std::to_string(e.line) + ": " + what);
    };
    if (!e.is_list || e.items.size() < 4 || e.items.size() > 5 || e.items[0].is_list ||
        e.items[0].atom != "rule" || e.items[1].is_list) {
      fail("expected (rule NAME LHS RHS) or (rule NAME LHS RHS (if COND...)), got " +
           e.to_string());
    }
    Rewrite r;
    r.name = e.items[1].atom;
    r.source = source;
    r.text = e.to_string();
    r.lhs = parse_pattern(e.items[2], r.scope, true, source);
    if (r.lhs.kind == Pattern::Kind::Literal) fail("rule " + r.name + ": LHS is a number");
    r.rhs = parse_pattern(e.items[3], r.scope, false, source);
    if (e.items.size() == 5) {
      const SExpr& conds = e.items[4];
      if (!conds.is_list || conds.items.empty() || conds.items[0].atom != "if") {
        fail("rule " + r.name + ": the fifth item must be (if COND...)");
      }
      for (size_t i = 1; i < conds.items.size(); ++i) {
        r.conditions.push_back(parse_condition(conds.items[i], r.scope, source));
      }
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

std::vector<Rewrite> load_rules(const std::string& extra, const std::string& extra_source) {
  std::vector<Rewrite> all;
  for (const auto& [name, text] : builtin_rule_files()) {
    for (Rewrite& r : parse_rules(text, name)) all.push_back(std::move(r));
  }
  if (!extra.empty()) {
    for (Rewrite& r : parse_rules(extra, extra_source)) all.push_back(std::move(r));
  }
  std::set<std::string> names;
  for (const Rewrite& r : all) {
    if (!names.insert(r.name).second) {
      throw CompileError("rule name '" + r.name + "' (" + r.source + ") is used twice");
    }
  }
  return all;
}

}  // namespace luminal::egraph
