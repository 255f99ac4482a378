// Symbolic integer expressions for shapes, strides and index arithmetic.
// An Expr is immutable, always kept in a canonical simplified form, so two expressions that
// simplify alike compare equal with ==. Symbols are named and taken to be non-negative
// integers (they stand for dimension sizes and indices). Not a general CAS.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace luminal {

// Values of the symbols, by name: the dyn_map.
using DynMap = std::map<std::string, int64_t>;

struct ExprNode;  // defined in symbolic.cc

class Expr {
 public:
  Expr();                     // the constant 0
  Expr(int64_t value);        // NOLINT: implicit, so shapes read naturally: {s, 64}
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT
  static Expr symbol(const std::string& name);

  bool is_const() const;
  std::optional<int64_t> try_const() const;
  int64_t as_const() const;   // throws ShapeError naming the free symbols if not constant
  bool is_symbol() const;

  // Arithmetic. Division and modulo are floor division / floor modulo (Python's // and %);
  // dividing by a constant 0 throws ShapeError.
  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr operator/(const Expr& a, const Expr& b);
  friend Expr operator%(const Expr& a, const Expr& b);
  Expr operator-() const;
  friend Expr min(const Expr& a, const Expr& b);
  friend Expr max(const Expr& a, const Expr& b);
  // Comparisons and logic give 1 or 0.
  friend Expr lt(const Expr& a, const Expr& b);
  friend Expr le(const Expr& a, const Expr& b);
  friend Expr gt(const Expr& a, const Expr& b);
  friend Expr ge(const Expr& a, const Expr& b);
  friend Expr eq(const Expr& a, const Expr& b);
  friend Expr ne(const Expr& a, const Expr& b);
  friend Expr logical_and(const Expr& a, const Expr& b);
  friend Expr logical_or(const Expr& a, const Expr& b);

  // Replace a symbol by an expression, re-simplifying.
  Expr substitute(const std::string& name, const Expr& value) const;
  Expr substitute(const std::map<std::string, Expr>& values) const;
  // Evaluate with every symbol bound; throws ShapeError("unbound symbol 's'") otherwise.
  int64_t eval(const DynMap& env) const;
  // Names of the free symbols, sorted and unique.
  std::vector<std::string> symbols() const;

  // Readable infix text, e.g. "(s*2 + 1)" -- stable across runs.
  std::string to_string() const;
  // A C expression of int64 arithmetic; each symbol renders as its own name. Floor division
  // and modulo of possibly-negative operands, or by a divisor that may be 0, render as calls
  // to lm_floordiv / lm_floormod, which the C renderer defines (x / 0 and x % 0 give 0 there);
  // a non-negative dividend over a divisor >= 1 renders as plain / and %.
  std::string to_c() const;

  size_t hash() const;
  // Structural equality of canonical forms.
  bool operator==(const Expr& other) const;
  bool operator!=(const Expr& other) const { return !(*this == other); }

  const std::shared_ptr<const ExprNode>& node() const { return node_; }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const ExprNode> node_;  // never null
  friend struct ExprBuilder;              // symbolic.cc builds canonical nodes
};

// Product of a list of dims (1 for an empty list).
Expr product(const std::vector<Expr>& dims);

// Whether `e` is the constant `value` (false for any expression with a free symbol).
bool is_const(const Expr& e, int64_t value);
// Bounds every value of `e` lies in, {lo, hi} (saturated at the int64 limits).
std::pair<int64_t, int64_t> value_range(const Expr& e);
inline bool is_zero(const Expr& e) { return is_const(e, 0); }
inline bool is_one(const Expr& e) { return is_const(e, 1); }

// The stride s of `e` along symbol `var` when e = s * var + rest with neither s nor rest
// depending on var (an index affine in a loop variable); nullopt otherwise. Strides of an
// index over the loops are what the kernel renderers read a load by.
std::optional<Expr> affine_stride(const Expr& e, const std::string& var);

// The conditions whose conjunction `e` is (its `and` operands, flattened); {} for the
// constant 1, {e} for anything that is not an `and`.
std::vector<Expr> conjuncts(const Expr& e);
// {a, b} when `e` is the comparison a < b (le, gt and ge are kept in that form), else nullopt.
std::optional<std::pair<Expr, Expr>> less_than_sides(const Expr& e);
// Parses Expr::to_string's syntax: ints, symbols, + - * // %, min/max, < == !=, and, or.
// Throws CompileError naming the position of what it cannot read (core/symbolic_parse.cc).
Expr parse_expr(const std::string& text);

}  // namespace luminal

template <>
struct std::hash<luminal::Expr> {
  size_t operator()(const luminal::Expr& e) const { return e.hash(); }
};
