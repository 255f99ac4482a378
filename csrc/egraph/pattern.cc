// Pattern parsing, top-down e-matching with backtracking over a class's e-nodes, and building
// a right-hand side into the e-graph.
#include "egraph/pattern.h"

#include <cstdlib>

#include "core/errors.h"

namespace luminal::egraph {

namespace {

// The index of name in names, appended where create is set (up to `most` names, a Subst's
// room); -1 where absent.
int index_in(std::vector<std::string>& names, const std::string& name, bool create,
             size_t most, const char* what) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  if (!create) return -1;
  if (names.size() == most) {
    throw CompileError("a rule binds at most " + std::to_string(most) + " " + what +
                       "; " + name + " is one too many");
  }
  names.push_back(name);
  return static_cast<int>(names.size() - 1);
}

}  // namespace

int Scope::var(const std::string& name, bool create) {
  return index_in(vars, name, create, kMaxRuleVars, "variables (?root included)");
}

int Scope::label(const std::string& name, bool create) {
  return index_in(labels, name, create, kMaxRuleLabels, "labels");
}

namespace {
const char* category_name(OpCategory c) { return c == OpCategory::Unary ? "Unary" : "Binary"; }
}  // namespace

std::string Pattern::to_string(const std::vector<std::string>& vars,
                               const std::vector<std::string>& labels) const {
  switch (kind) {
    case Kind::Var:
      return vars[var];
    case Kind::Literal: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%g", literal);
      return buf;
    }
    case Kind::UniformConst:
      return "(uniform-const " + vars[var] + ")";
    case Kind::UniformScalar:
      return "(uniform-scalar " + vars[var] + ")";
    case Kind::Through:
      return "(through " + vars[var] + " " + children[0].to_string(vars, labels) + ")";
    case Kind::Node:
      break;
  }
  std::string out = std::string("(") + (op_class ? category_name(*op_class) : op_name(op));
  if (label >= 0) out += ":" + labels[label];
  for (const Pattern& c : children) out += " " + c.to_string(vars, labels);
  out += ")";
  if (schedule.empty()) return out;
  return "(schedule (" + schedule_to_string(schedule) + ") " + out + ")";
}

namespace {
// The op classes a pattern may name, and their arity.
const std::pair<const char*, OpCategory> kOpClasses[] = {{"Unary", OpCategory::Unary},
                                                          {"Binary", OpCategory::Binary}};

std::optional<OpCategory> op_class_named(const std::string& name) {
  for (const auto& [n, c] : kOpClasses) {
    if (name == n) return c;
  }
  return std::nullopt;
}

bool needs_attr(OpKind op) {
  return op == OpKind::SumReduce || op == OpKind::MaxReduce || op == OpKind::Cast;
}

bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}
}  // namespace

namespace {
// "(Unary:f p)": an op class, labelled, with its category's arity; on the right its label must
// name a left-hand pattern of the same class (the op to build).
Pattern parse_op_class(const SExpr& e, Pattern p, const std::string& label, Scope& scope,
                       bool create, const std::string& where) {
  auto fail = [&](const std::string& what) -> Pattern {
    throw CompileError(where + " line " + std::to_string(e.line) + ": " + what + " in " +
                       e.to_string());
  };
  const char* name = category_name(*p.op_class);
  if (label.empty()) {
    return fail(std::string("op class ") + name + " needs a label (" + name + ":f)");
  }
  size_t arity = *p.op_class == OpCategory::Unary ? 1 : 2;
  if (e.items.size() - 1 != arity) {
    return fail(std::string(name) + " takes " + std::to_string(arity) + " operands");
  }
  p.label = scope.label(label, create);
  if (p.label < 0) return fail("label " + label + " is not bound on the left");
  if (create) {
    scope.label_classes.resize(scope.labels.size());
    if (scope.label_classes[p.label] && *scope.label_classes[p.label] != *p.op_class) {
      return fail("label " + label + " names two op classes");
    }
    scope.label_classes[p.label] = p.op_class;
  } else if (p.label >= static_cast<int>(scope.label_classes.size()) ||
             scope.label_classes[p.label] != p.op_class) {
    return fail("label " + label + " does not name a left-hand " + name);
  }
  for (size_t i = 1; i < e.items.size(); ++i) {
    p.children.push_back(parse_pattern(e.items[i], scope, create, where));
    if (!create && p.children.back().kind == Pattern::Kind::Literal) {
      return fail("a number on the right must be an operand of a named binary op");
    }
  }
  return p;
}
}  // namespace

Pattern parse_pattern(const SExpr& e, Scope& scope, bool create, const std::string& where) {
  auto fail = [&](const std::string& what) -> Pattern {
    throw CompileError(where + " line " + std::to_string(e.line) + ": " + what + " in " +
                       e.to_string());
  };
  Pattern p;
  if (!e.is_list) {
    if (!e.atom.empty() && e.atom[0] == '?') {
      p.kind = Pattern::Kind::Var;
      p.var = scope.var(e.atom, create);
      if (p.var < 0) return fail("variable " + e.atom + " is not bound on the left");
      return p;
    }
    p.kind = Pattern::Kind::Literal;
    if (!parse_number(e.atom, &p.literal)) return fail("'" + e.atom + "' is not a pattern");
    return p;
  }
  if (e.items.empty() || e.items[0].is_list) return fail("a pattern list starts with an op");
  std::string head = e.items[0].atom;
  if (head == "uniform-const" || head == "uniform-scalar") {
    if (create || e.items.size() != 2 || e.items[1].is_list) {
      return fail(head + " takes one variable and only on the right");
    }
    p.kind = head == "uniform-const" ? Pattern::Kind::UniformConst
                                     : Pattern::Kind::UniformScalar;
    p.var = scope.var(e.items[1].atom, false);
    if (p.var < 0) return fail("variable " + e.items[1].atom + " is not bound on the left");
    return p;
  }
  if (head == "through") {
    if (create || e.items.size() != 3 || e.items[1].is_list) {
      return fail("through takes a variable and a pattern, and only on the right");
    }
    p.kind = Pattern::Kind::Through;
    p.var = scope.var(e.items[1].atom, false);
    if (p.var < 0) return fail("variable " + e.items[1].atom + " is not bound on the left");
    p.children.push_back(parse_pattern(e.items[2], scope, create, where));
    if (p.children[0].kind != Pattern::Kind::Node) return fail("through applies to an op pattern");
    return p;
  }
  if (head == "schedule") {
    if (create || e.items.size() != 3 || !e.items[1].is_list) {
      return fail("schedule takes a parameter list and a pattern, and only on the right");
    }
    ScheduleParams params;
    for (const SExpr& item : e.items[1].items) {
      double v = 0;
      if (!item.is_list || item.items.size() != 2 || item.items[0].is_list ||
          item.items[1].is_list || !parse_number(item.items[1].atom, &v) ||
          v != static_cast<double>(static_cast<int64_t>(v))) {
        return fail("a schedule parameter is (name integer), got " + item.to_string());
      }
      params.push_back({item.items[0].atom, static_cast<int64_t>(v)});
    }
    Pattern inner = parse_pattern(e.items[2], scope, create, where);
    if (inner.kind != Pattern::Kind::Node) return fail("schedule applies to an op pattern");
    inner.schedule = std::move(params);
    return inner;
  }
  std::string label;
  if (size_t colon = head.find(':'); colon != std::string::npos) {
    label = head.substr(colon + 1);
    head = head.substr(0, colon);
  }
  p.kind = Pattern::Kind::Node;
  p.op_class = op_class_named(head);
  if (p.op_class) return parse_op_class(e, std::move(p), label, scope, create, where);
  try {
    p.op = op_from_name(head);
  } catch (const LuminalError&) {
    return fail("unknown op '" + head + "'");
  }
  if (p.op == OpKind::Input || p.op == OpKind::Constant || p.op == OpKind::Iota ||
      p.op == OpKind::Output) {
    return fail(head + " cannot appear in a pattern (use a number for constants)");
  }
  if (static_cast<int>(e.items.size()) - 1 != op_arity(p.op)) {
    return fail(head + " takes " + std::to_string(op_arity(p.op)) + " operands");
  }
  if (!label.empty()) {
    p.label = scope.label(label, create);
    if (p.label < 0) return fail("label " + label + " is not bound on the left");
  } else if (!create && needs_attr(p.op)) {
    return fail(head + " on the right needs a label naming a left-hand " + head);
  }
  for (size_t i = 1; i < e.items.size(); ++i) {
    p.children.push_back(parse_pattern(e.items[i], scope, create, where));
  }
  if (!create) {
    int literals = 0;
    for (const Pattern& c : p.children) {
      literals += c.kind == Pattern::Kind::Literal || c.kind == Pattern::Kind::UniformScalar;
    }
    if (literals && (!is_binary(p.op) || literals == 2)) {
      return fail("a number on the right must be one operand of a binary op");
    }
  }
  return p;
}

namespace {
std::vector<Subst> match_in(EGraph& g, const Pattern& p, EEdge e, bool nested,
                            std::vector<Subst> in) {
  std::vector<Subst> out;
  switch (p.kind) {
    case Pattern::Kind::Var:
      out.reserve(in.size());
      for (Subst& s : in) {
        EEdge& slot = s.vars[p.var];
        if (slot.cls == Subst::kUnbound) {
          slot = e;
          out.push_back(std::move(s));
        } else if (g.find(slot.cls) == g.find(e.cls) && slot.view == e.view) {
          out.push_back(std::move(s));
        }
      }
      return out;
    case Pattern::Kind::Literal: {
      const ClassData& d = g.data(e.cls);
      if (d.uniform && *d.uniform == p.literal && !g.view(e.view).has_mask()) return in;
      return out;
    }
    case Pattern::Kind::UniformConst:
    case Pattern::Kind::Through:
    case Pattern::Kind::UniformScalar:
      return out;
    case Pattern::Kind::Node:
      break;
  }
  if (nested && !g.is_identity(e)) return out;
  for (const ENode& n : g.nodes(e.cls)) {
    if (p.op_class ? op_category(n.op) != *p.op_class : n.op != p.op) continue;
    std::vector<Subst> cur;
    cur.reserve(in.size());
    for (const Subst& s : in) {
      if (p.label >= 0) {
        AttrId bound = s.labels[p.label];
        if (bound != -2 && (bound != n.attr || s.label_ops[p.label] != n.op)) continue;
        Subst t = s;
        t.labels[p.label] = n.attr;
        t.label_ops[p.label] = n.op;
        cur.push_back(std::move(t));
      } else {
        cur.push_back(s);
      }
    }
    for (size_t k = 0; k < p.children.size() && !cur.empty(); ++k) {
      cur = match_in(g, p.children[k], n.children[k], true, std::move(cur));
    }
    for (Subst& s : cur) out.push_back(std::move(s));
  }
  return out;
}

ShapeTracker broadcast_scalar(const std::vector<Expr>& dims) {
  ShapeTracker v = ShapeTracker::contiguous({});
  for (size_t k = 0; k < dims.size(); ++k) v = v.insert_axis(static_cast<int>(k), dims[k]);
  return v;
}

Id scalar_constant(EGraph& g, double value, DType dtype) {
  Attr a;
  a.node = Node{OpKind::Constant, {}, dtype, {}};
  a.node.value = value;
  return g.add(ENode{OpKind::Constant, g.intern_attr(a), {}});
}

EEdge build(EGraph& g, const Pattern& p, const Subst& s) {
  switch (p.kind) {
    case Pattern::Kind::Var:
      return s.vars[p.var];
    case Pattern::Kind::UniformConst: {
      const ClassData d = g.data(s.vars[p.var].cls);
      if (!d.uniform) throw InternalError("uniform-const of a class with no uniform value");
      Id c = constant_tensor(g, *d.uniform, d.dtype, d.shape);
      return {c, g.identity_view(c)};
    }
    case Pattern::Kind::Literal:
    case Pattern::Kind::UniformScalar:
      throw InternalError("a number must be an operand of a binary op on the right");
    case Pattern::Kind::Through: {
      const EEdge x = s.vars[p.var];
      Subst inner = s;
      inner.vars[p.var] = {x.cls, g.identity_view(x.cls)};
      const EEdge made = build(g, p.children[0], inner);
      if (g.data(made.cls).shape != g.data(x.cls).shape) {
        throw InternalError("through: the pattern changes its operand's shape");
      }
      return {made.cls, x.view};
    }
    case Pattern::Kind::Node:
      break;
  }
  std::vector<EEdge> kids(p.children.size());
  int sibling = -1;
  auto scalar = [](const Pattern& c) {
    return c.kind == Pattern::Kind::Literal || c.kind == Pattern::Kind::UniformScalar;
  };
  for (size_t k = 0; k < p.children.size(); ++k) {
    if (scalar(p.children[k])) continue;
    kids[k] = build(g, p.children[k], s);
    sibling = static_cast<int>(k);
  }
  for (size_t k = 0; k < p.children.size(); ++k) {
    const Pattern& c = p.children[k];
    if (!scalar(c)) continue;
    if (sibling < 0) throw InternalError("a number needs a sibling that is not a number");
    DType dtype = g.data(kids[sibling].cls).dtype;
    std::vector<Expr> dims = g.view(kids[sibling].view).dims;
    double value = c.literal;
    if (c.kind == Pattern::Kind::UniformScalar) {
      const ClassData& d = g.data(s.vars[c.var].cls);
      if (!d.uniform) throw InternalError("uniform-scalar of a class with no uniform value");
      value = *d.uniform;
    }
    Id c0 = scalar_constant(g, value, dtype);
    kids[k] = {c0, g.intern_view(broadcast_scalar(dims))};
  }
  // An op class's label gives the op only: an elementwise op's attribute is a schedule, which
  // the right-hand side states itself.
  AttrId attr = p.label >= 0 && !p.op_class ? s.labels[p.label] : -1;
  OpKind op = p.op_class ? s.label_ops[p.label] : p.op;
  if (!p.schedule.empty()) {
    Attr a;
    if (attr >= 0) a = g.attr(attr);
    a.node.op = op;
    a.node.schedule = p.schedule;
    attr = g.intern_attr(a);
  }
  Id c = g.add(ENode{op, attr, std::move(kids)});
  return {c, g.identity_view(c)};
}
}  // namespace

std::vector<Subst> match_root(EGraph& g, const Pattern& p, Id c, const Scope& scope) {
  Subst s;
  s.vars.assign(scope.vars.size(), EEdge{Subst::kUnbound, -1});
  s.labels.assign(scope.labels.size(), -2);
  s.label_ops.assign(scope.labels.size(), OpKind::Add);
  EEdge root{g.find(c), g.identity_view(c)};
  s.vars[0] = root;
  return match_in(g, p, root, false, {s});
}

Id constant_tensor(EGraph& g, double value, DType dtype, const std::vector<Expr>& shape) {
  Id c0 = scalar_constant(g, value, dtype);
  if (shape.empty()) return c0;
  Attr cast;
  cast.node = Node{OpKind::Cast, {}, dtype, {}};
  EEdge e{c0, g.intern_view(broadcast_scalar(shape))};
  return g.add(ENode{OpKind::Cast, g.intern_attr(cast), {e}});
}

Id instantiate(EGraph& g, const Pattern& p, const Subst& s, Id root) {
  if (p.kind == Pattern::Kind::Literal) {
    const ClassData d = g.data(root);
    return constant_tensor(g, p.literal, d.dtype, d.shape);
  }
  EEdge e = build(g, p, s);
  if (g.is_identity(e)) return g.find(e.cls);
  Attr cast;
  cast.node = Node{OpKind::Cast, {}, g.data(e.cls).dtype, {}};
  return g.add(ENode{OpKind::Cast, g.intern_attr(cast), {e}});
}

}  // namespace luminal::egraph
