// Symbolic integer expressions: canonical nodes, polynomial arithmetic, evaluation, printing.
// Every Expr is a sum of products over atoms (symbols, or opaque ops such as // and min whose
// children are canonical), with constants folded and like terms combined. The rewrites of
// //, %, min, max and comparisons live in symbolic_simplify.cc.

#include "core/symbolic.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/errors.h"
#include "core/symbolic_node.h"

namespace luminal {

// ---------------------------------------------------------------- checked int64 arithmetic

[[noreturn]] static void overflow() {
  throw ShapeError("integer overflow in a symbolic expression");
}

int64_t add_checked(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}

int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

int64_t neg_checked(int64_t a) {
  if (a == kMinInt64) overflow();
  return -a;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw ShapeError("division by zero in a symbolic expression");
  if (b == -1) return neg_checked(a);
  int64_t q = a / b;
  bool inexact = q * b != a;
  if (inexact && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) throw ShapeError("modulo by zero in a symbolic expression");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// ---------------------------------------------------------------- nodes

static size_t mix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

static size_t node_hash(const ExprNode& n) {
  size_t h = mix(static_cast<size_t>(n.kind), static_cast<size_t>(n.value));
  h = mix(h, std::hash<std::string>()(n.name));
  for (const Expr& a : n.args) h = mix(h, a.hash());
  return h;
}

Expr make_node(Kind kind, int64_t value, std::string name, std::vector<Expr> args) {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->value = value;
  node->name = std::move(name);
  node->args = std::move(args);
  Range r = node_range(*node);
  node->lo = r.lo;
  node->hi = std::max(r.lo, r.hi);
  node->hash = node_hash(*node);
  return ExprBuilder::wrap(std::move(node));
}

int compare(const Expr& a, const Expr& b) {
  if (a.node() == b.node()) return 0;
  const ExprNode& x = *a.node();
  const ExprNode& y = *b.node();
  if (x.kind != y.kind) return x.kind < y.kind ? -1 : 1;
  if (x.value != y.value) return x.value < y.value ? -1 : 1;
  if (int c = x.name.compare(y.name)) return c < 0 ? -1 : 1;
  return compare_lists(x.args, y.args);
}

int compare_lists(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = compare(a[i], b[i])) return c;
  }
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

// ---------------------------------------------------------------- polynomials

void add_term(Poly& p, const Monomial& m, int64_t c) {
  if (c == 0) return;
  auto it = p.try_emplace(m, 0).first;
  it->second = add_checked(it->second, c);
  if (it->second == 0) p.erase(it);
}

Poly to_poly(const Expr& e) {
  const ExprNode& n = *e.node();
  Poly p;
  if (n.kind == Kind::kConst) {
    add_term(p, {}, n.value);
  } else if (n.kind == Kind::kAdd) {
    add_term(p, {}, n.value);
    for (const Expr& t : n.args) p = scaled_sum(p, to_poly(t), 1);
  } else if (n.kind == Kind::kMul) {
    add_term(p, n.args, n.value);
  } else {
    add_term(p, {e}, 1);
  }
  return p;
}

Poly scaled_sum(Poly a, const Poly& b, int64_t scale) {
  for (const auto& [m, c] : b) add_term(a, m, mul_checked(c, scale));
  return a;
}

static Poly poly_product(const Poly& a, const Poly& b) {
  auto less = [](const Expr& x, const Expr& y) { return compare(x, y) < 0; };
  Poly p;
  for (const auto& [ma, ca] : a) {
    for (const auto& [mb, cb] : b) {
      Monomial m;
      std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m), less);
      add_term(p, m, mul_checked(ca, cb));
    }
  }
  return p;
}

static Expr term_expr(const Monomial& m, int64_t c) {
  if (c == 1 && m.size() == 1) return m[0];
  return make_node(Kind::kMul, c, "", m);
}

Expr from_poly(Poly p) {
  while (recombine_div_mod(p)) {
  }
  int64_t constant = 0;
  std::vector<Expr> terms;
  for (const auto& [m, c] : p) {
    if (m.empty()) {
      constant = c;
    } else {
      terms.push_back(term_expr(m, c));
    }
  }
  if (terms.empty()) return Expr(constant);
  if (terms.size() == 1 && constant == 0) return terms[0];
  return make_node(Kind::kAdd, constant, "", std::move(terms));
}

// ---------------------------------------------------------------- Expr: construction, arithmetic

Expr::Expr() : Expr(int64_t{0}) {}

Expr::Expr(int64_t value) : Expr(make_node(Kind::kConst, value, "", {})) {}

Expr Expr::symbol(const std::string& name) {
  if (name.empty()) throw ShapeError("a symbol needs a non-empty name");
  return make_node(Kind::kSym, 0, name, {});
}

bool Expr::is_const() const { return node_->kind == Kind::kConst; }

bool Expr::is_symbol() const { return node_->kind == Kind::kSym; }

std::optional<int64_t> Expr::try_const() const {
  if (!is_const()) return std::nullopt;
  return node_->value;
}

int64_t Expr::as_const() const {
  if (is_const()) return node_->value;
  std::string names;
  for (const std::string& s : symbols()) names += (names.empty() ? "" : ", ") + s;
  throw ShapeError("expected a constant, got '" + to_string() + "' (free symbols: " + names + ")");
}

Expr operator+(const Expr& a, const Expr& b) {
  return from_poly(scaled_sum(to_poly(a), to_poly(b), 1));
}

Expr operator-(const Expr& a, const Expr& b) {
  return from_poly(scaled_sum(to_poly(a), to_poly(b), -1));
}

Expr operator*(const Expr& a, const Expr& b) {
  return from_poly(poly_product(to_poly(a), to_poly(b)));
}

Expr Expr::operator-() const { return from_poly(scaled_sum({}, to_poly(*this), -1)); }

Expr operator/(const Expr& a, const Expr& b) { return divide(a, b); }
Expr operator%(const Expr& a, const Expr& b) { return modulo(a, b); }
Expr min(const Expr& a, const Expr& b) { return choose(Kind::kMin, a, b); }
Expr max(const Expr& a, const Expr& b) { return choose(Kind::kMax, a, b); }
Expr lt(const Expr& a, const Expr& b) { return less_than(a, b); }
Expr le(const Expr& a, const Expr& b) { return less_than(a, b + 1); }
Expr gt(const Expr& a, const Expr& b) { return less_than(b, a); }
Expr ge(const Expr& a, const Expr& b) { return less_than(b, a + 1); }
Expr eq(const Expr& a, const Expr& b) { return equality(Kind::kEq, a, b); }
Expr ne(const Expr& a, const Expr& b) { return equality(Kind::kNe, a, b); }
Expr logical_and(const Expr& a, const Expr& b) { return logic(Kind::kAnd, a, b); }
Expr logical_or(const Expr& a, const Expr& b) { return logic(Kind::kOr, a, b); }

Expr product(const std::vector<Expr>& dims) {
  Expr p(1);
  for (const Expr& d : dims) p = p * d;
  return p;
}

std::pair<int64_t, int64_t> value_range(const Expr& e) { return {e.node()->lo, e.node()->hi}; }

bool is_const(const Expr& e, int64_t value) {
  return e.try_const() == std::optional<int64_t>(value);
}

// Whether symbol `var` occurs in e.
static bool mentions(const Expr& e, const std::string& var) {
  if (e.is_symbol()) return e.node()->name == var;
  for (const Expr& a : e.node()->args) {
    if (mentions(a, var)) return true;
  }
  return false;
}

std::optional<Expr> affine_stride(const Expr& e, const std::string& var) {
  if (!mentions(e, var)) return Expr(0);
  // Lowering asks this of the same indices again and again (a model's layers give equal
  // kernels): the answers of this thread's last questions are kept.
  struct Answer {
    Expr e;
    std::string var;
    std::optional<Expr> stride;
  };
  thread_local std::unordered_map<size_t, std::vector<Answer>> answers;
  const size_t key = e.hash() * 31 + std::hash<std::string>{}(var);
  if (answers.size() > 4096) answers.clear();
  std::vector<Answer>& known = answers[key];
  for (const Answer& a : known) {
    if (a.var == var && a.e == e) return a.stride;
  }
  std::optional<Expr> stride = e.substitute(var, 1) - e.substitute(var, 0);
  const Expr rest = e - *stride * Expr::symbol(var);
  if (mentions(rest, var) || mentions(*stride, var)) stride = std::nullopt;
  known.push_back({e, var, stride});
  return stride;
}

static void collect_conjuncts(const Expr& e, std::vector<Expr>& out) {
  if (is_one(e)) return;
  if (kind_of(e) != Kind::kAnd) {
    out.push_back(e);
    return;
  }
  for (const Expr& a : e.node()->args) collect_conjuncts(a, out);
}

std::vector<Expr> conjuncts(const Expr& e) {
  std::vector<Expr> out;
  collect_conjuncts(e, out);
  return out;
}

std::optional<std::pair<Expr, Expr>> less_than_sides(const Expr& e) {
  if (kind_of(e) != Kind::kLt) return std::nullopt;
  return std::make_pair(e.node()->args[0], e.node()->args[1]);
}

size_t Expr::hash() const { return node_->hash; }

bool Expr::operator==(const Expr& other) const {
  if (node_ == other.node_) return true;
  if (node_->hash != other.node_->hash) return false;
  return compare(*this, other) == 0;
}

// ---------------------------------------------------------------- substitution, evaluation

// Re-applies a node's op to new children, simplifying again.
static Expr apply(Kind kind, int64_t value, const std::vector<Expr>& args) {
  switch (kind) {
    case Kind::kAdd: {
      Expr sum(value);
      for (const Expr& a : args) sum = sum + a;
      return sum;
    }
    case Kind::kMul: {
      Expr prod(value);
      for (const Expr& a : args) prod = prod * a;
      return prod;
    }
    case Kind::kDiv: return divide(args[0], args[1]);
    case Kind::kMod: return modulo(args[0], args[1]);
    case Kind::kMin: return min(args[0], args[1]);
    case Kind::kMax: return max(args[0], args[1]);
    case Kind::kLt: return less_than(args[0], args[1]);
    case Kind::kEq: return equality(Kind::kEq, args[0], args[1]);
    case Kind::kNe: return equality(Kind::kNe, args[0], args[1]);
    case Kind::kAnd: return logic(Kind::kAnd, args[0], args[1]);
    case Kind::kOr: return logic(Kind::kOr, args[0], args[1]);
    case Kind::kConst:
    case Kind::kSym: break;
  }
  throw InternalError("symbolic: apply on a leaf node");
}

static Expr rebuild(const Expr& e, const std::map<std::string, Expr>& values) {
  const ExprNode& n = *e.node();
  if (n.kind == Kind::kConst) return e;
  if (n.kind == Kind::kSym) {
    auto it = values.find(n.name);
    return it == values.end() ? e : it->second;
  }
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr& a : n.args) {
    args.push_back(rebuild(a, values));
    changed = changed || args.back().node() != a.node();
  }
  if (!changed) return e;
  return apply(n.kind, n.value, args);
}

Expr Expr::substitute(const std::string& name, const Expr& value) const {
  return rebuild(*this, {{name, value}});
}

Expr Expr::substitute(const std::map<std::string, Expr>& values) const {
  return rebuild(*this, values);
}

static int64_t eval_binary(Kind kind, int64_t x, int64_t y) {
  switch (kind) {
    case Kind::kDiv: return floor_div(x, y);
    case Kind::kMod: return floor_mod(x, y);
    case Kind::kMin: return std::min(x, y);
    case Kind::kMax: return std::max(x, y);
    case Kind::kLt: return x < y;
    case Kind::kEq: return x == y;
    case Kind::kNe: return x != y;
    case Kind::kAnd: return x != 0 && y != 0;
    case Kind::kOr: return x != 0 || y != 0;
    default: break;
  }
  throw InternalError("symbolic: eval_binary on a non-binary node");
}

int64_t Expr::eval(const DynMap& env) const {
  const ExprNode& n = *node_;
  switch (n.kind) {
    case Kind::kConst: return n.value;
    case Kind::kSym: {
      auto it = env.find(n.name);
      if (it == env.end()) throw ShapeError("unbound symbol '" + n.name + "'");
      return it->second;
    }
    case Kind::kAdd: {
      int64_t sum = n.value;
      for (const Expr& t : n.args) sum = add_checked(sum, t.eval(env));
      return sum;
    }
    case Kind::kMul: {
      int64_t prod = n.value;
      for (const Expr& a : n.args) prod = mul_checked(prod, a.eval(env));
      return prod;
    }
    default: break;
  }
  int64_t x = n.args[0].eval(env);
  int64_t y = n.args[1].eval(env);
  if ((n.kind == Kind::kDiv || n.kind == Kind::kMod) && y == 0) {
    throw ShapeError("division by zero evaluating '" + to_string() + "'");
  }
  return eval_binary(n.kind, x, y);
}

static void collect_symbols(const Expr& e, std::set<std::string>& out) {
  if (e.is_symbol()) out.insert(e.node()->name);
  for (const Expr& a : e.node()->args) collect_symbols(a, out);
}

std::vector<std::string> Expr::symbols() const {
  std::set<std::string> names;
  collect_symbols(*this, names);
  return {names.begin(), names.end()};
}

// ---------------------------------------------------------------- printing

// How loosely a rendered text binds, loosest first; a child looser than its slot gets ().
enum Prec : int { kPrecLogic, kPrecCompare, kPrecSum, kPrecProduct, kPrecAtom };

static std::pair<int64_t, std::vector<Expr>> coef_and_atoms(const Expr& term) {
  if (kind_of(term) == Kind::kMul) return {term.node()->value, term.node()->args};
  return {1, {term}};
}

// |v| as text, exact for the most negative int64 too.
static std::string magnitude(int64_t v) {
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  return std::to_string(m);
}

static std::pair<std::string, int> text(const Expr& e);

static std::string text_in(const Expr& e, int slot) {
  auto [s, prec] = text(e);
  return prec < slot ? "(" + s + ")" : s;
}

// |coef| * atoms, as "s*t*2". A lone atom without a coefficient takes lone_slot: kPrecProduct
// after " + ", but kPrecAtom after a unary "-", since -x//4 is (-x)//4 in Python.
static std::string term_text(int64_t coef, const std::vector<Expr>& atoms, int lone_slot) {
  bool lone = atoms.size() == 1 && (coef == 1 || coef == -1);
  std::string s;
  for (const Expr& a : atoms)
    s += (s.empty() ? "" : "*") + text_in(a, lone ? lone_slot : kPrecAtom);
  if (coef != 1 && coef != -1) s += "*" + magnitude(coef);
  return s;
}

static std::string sum_text(const ExprNode& n) {
  std::string s;
  for (const Expr& t : n.args) {
    auto [coef, atoms] = coef_and_atoms(t);
    if (s.empty() && coef < 0) {
      s = "-" + term_text(coef, atoms, kPrecAtom);
    } else {
      s += (s.empty() ? "" : coef < 0 ? " - " : " + ") + term_text(coef, atoms, kPrecProduct);
    }
  }
  if (n.value != 0) s += (n.value < 0 ? " - " : " + ") + magnitude(n.value);
  return s;
}

static std::string binary_text(const ExprNode& n, const char* op, int slot) {
  return text_in(n.args[0], slot) + op + text_in(n.args[1], slot);
}

// Python-compatible infix: evaluating the text with Python ints gives the same value.
static std::pair<std::string, int> text(const Expr& e) {
  const ExprNode& n = *e.node();
  switch (n.kind) {
    case Kind::kConst: return {std::to_string(n.value), n.value < 0 ? kPrecSum : kPrecAtom};
    case Kind::kSym: return {n.name, kPrecAtom};
    case Kind::kMul: {
      std::string body = term_text(n.value, n.args, kPrecAtom);
      if (n.value < 0) return {"-" + body, kPrecSum};
      return {body, kPrecProduct};
    }
    case Kind::kAdd: return {sum_text(n), kPrecSum};
    case Kind::kDiv:
      return {text_in(n.args[0], kPrecProduct) + "//" + text_in(n.args[1], kPrecAtom),
              kPrecProduct};
    case Kind::kMod:
      return {text_in(n.args[0], kPrecProduct) + "%" + text_in(n.args[1], kPrecAtom), kPrecProduct};
    case Kind::kMin: return {"min(" + binary_text(n, ", ", kPrecLogic) + ")", kPrecAtom};
    case Kind::kMax: return {"max(" + binary_text(n, ", ", kPrecLogic) + ")", kPrecAtom};
    case Kind::kLt: return {binary_text(n, " < ", kPrecSum), kPrecCompare};
    case Kind::kEq: return {binary_text(n, " == ", kPrecSum), kPrecCompare};
    case Kind::kNe: return {binary_text(n, " != ", kPrecSum), kPrecCompare};
    case Kind::kAnd: return {binary_text(n, " and ", kPrecCompare), kPrecLogic};
    case Kind::kOr: return {binary_text(n, " or ", kPrecCompare), kPrecLogic};
  }
  throw InternalError("symbolic: unknown node kind");
}

std::string Expr::to_string() const { return text(*this).first; }

// An int64 literal for C; "LL" past the int range, and the most negative value spelt out.
static std::string c_literal(int64_t v) {
  if (v == kMinInt64) return "(-9223372036854775807LL - 1)";
  std::string s = std::to_string(v);
  if (v > INT32_MAX || v < INT32_MIN) s += "LL";
  return v < 0 ? "(" + s + ")" : s;
}

static std::string c_text(const Expr& e);

// coef * atoms, as "s * t * 2", "-s * 2" or "-s".
static std::string c_term(int64_t coef, const std::vector<Expr>& atoms) {
  std::string s;
  for (const Expr& a : atoms) s += (s.empty() ? "" : " * ") + c_text(a);
  if (coef == kMinInt64) return s + " * " + c_literal(coef);
  if (coef != 1 && coef != -1) s += " * " + magnitude(coef);
  return coef < 0 ? "-" + s : s;
}

static std::string c_sum(const ExprNode& n) {
  std::string s;
  for (const Expr& t : n.args) {
    auto [coef, atoms] = coef_and_atoms(t);
    if (s.empty() || coef > 0 || coef == kMinInt64) {
      s += (s.empty() ? "" : " + ") + c_term(coef, atoms);
    } else {
      s += " - " + c_term(-coef, atoms);
    }
  }
  if (n.value > 0 || n.value == kMinInt64) s += " + " + c_literal(n.value);
  if (n.value < 0 && n.value != kMinInt64) s += " - " + c_literal(-n.value);
  return s;
}

// Plain C / and % agree with floor semantics when neither operand is negative; a divisor that
// may be 0 (a symbol bound to 0) goes through the helper, which gives 0 there, not SIGFPE.
static std::string c_div_mod(const ExprNode& n, const char* op, const char* helper) {
  std::string a = c_text(n.args[0]);
  std::string b = c_text(n.args[1]);
  if (lo(n.args[0]) >= 0 && lo(n.args[1]) >= 1) return "(" + a + op + b + ")";
  return std::string(helper) + "(" + a + ", " + b + ")";
}

static std::string c_binary(const ExprNode& n, const char* op) {
  return "(" + c_text(n.args[0]) + op + c_text(n.args[1]) + ")";
}

static std::string c_select(const ExprNode& n, const char* op) {
  std::string a = c_text(n.args[0]);
  std::string b = c_text(n.args[1]);
  return "(" + a + op + b + " ? " + a + " : " + b + ")";
}

// Fully parenthesised: every compound renders inside ( ) or as a call.
static std::string c_text(const Expr& e) {
  const ExprNode& n = *e.node();
  switch (n.kind) {
    case Kind::kConst: return c_literal(n.value);
    case Kind::kSym: return n.name;
    case Kind::kMul: return "(" + c_term(n.value, n.args) + ")";
    case Kind::kAdd: return "(" + c_sum(n) + ")";
    case Kind::kDiv: return c_div_mod(n, " / ", "lm_floordiv");
    case Kind::kMod: return c_div_mod(n, " % ", "lm_floormod");
    case Kind::kMin: return c_select(n, " < ");
    case Kind::kMax: return c_select(n, " > ");
    case Kind::kLt: return c_binary(n, " < ");
    case Kind::kEq: return c_binary(n, " == ");
    case Kind::kNe: return c_binary(n, " != ");
    case Kind::kAnd: return c_binary(n, " && ");
    case Kind::kOr: return c_binary(n, " || ");
  }
  throw InternalError("symbolic: unknown node kind");
}

std::string Expr::to_c() const { return c_text(*this); }
}  // namespace luminal
