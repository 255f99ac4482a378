// Private to symbolic.cc and symbolic_simplify.cc: the node behind an Expr, its polynomial
// view, and the simplifying constructors. Other code uses only core/symbolic.h.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/symbolic.h"

namespace luminal {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

enum class Kind : uint8_t {
  kConst,
  kSym,
  kAdd,  // constant + terms
  kMul,  // coefficient * atoms
  kDiv,  // floor division; this and all below are atoms with args {lhs, rhs}
  kMod,  // floor modulo
  kMin,
  kMax,
  kLt,  // lhs < rhs as 0/1; le, gt and ge are rewritten into it
  kEq,
  kNe,
  kAnd,  // both non-zero, as 0/1
  kOr,
};

struct ExprNode {
  Kind kind = Kind::kConst;
  // kConst: the value. kMul: the coefficient, never 0, and not 1 with a single atom.
  // kAdd: the constant term. Others: 0.
  int64_t value = 0;
  std::string name;  // kSym: the symbol's name; empty otherwise
  // kAdd: terms (atoms or kMul), sorted by monomial, each monomial once; two or more unless
  // value != 0. kMul: atoms, sorted, repeats allowed. Atoms: {lhs, rhs}, both canonical.
  std::vector<Expr> args;
  // Every value the expression takes, when it has one, lies in [lo, hi]. Saturated at the
  // int64 limits: values are int64, so a saturated bound still holds.
  int64_t lo = 0;
  int64_t hi = 0;
  size_t hash = 0;  // structural: over kind, value, name and args
};

// The only way to wrap a node into an Expr (Expr's node constructor is private).
struct ExprBuilder {
  static Expr wrap(std::shared_ptr<const ExprNode> node) { return Expr(std::move(node)); }
};

struct Range {
  int64_t lo;
  int64_t hi;
};

// Checked arithmetic: ShapeError on overflow or a zero divisor.
int64_t add_checked(int64_t a, int64_t b);
int64_t mul_checked(int64_t a, int64_t b);
int64_t neg_checked(int64_t a);
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

// A node as given, with its range and hash filled in. The caller keeps it canonical.
Expr make_node(Kind kind, int64_t value, std::string name, std::vector<Expr> args);
Range node_range(const ExprNode& n);
inline int64_t lo(const Expr& e) { return e.node()->lo; }
inline int64_t hi(const Expr& e) { return e.node()->hi; }
inline Kind kind_of(const Expr& e) { return e.node()->kind; }

// A total order on canonical expressions, stable across runs; 0 iff structurally equal.
int compare(const Expr& a, const Expr& b);
int compare_lists(const std::vector<Expr>& a, const std::vector<Expr>& b);

// A sum of products: sorted atoms -> coefficient, never 0; the empty monomial is the constant.
using Monomial = std::vector<Expr>;
struct MonomialLess {
  bool operator()(const Monomial& a, const Monomial& b) const { return compare_lists(a, b) < 0; }
};
using Poly = std::map<Monomial, int64_t, MonomialLess>;

void add_term(Poly& p, const Monomial& m, int64_t c);
Poly to_poly(const Expr& e);
Poly scaled_sum(Poly a, const Poly& b, int64_t scale);  // a + scale * b
Expr from_poly(Poly p);
// Rewrites one c*k*(x//k) + c*(x%k) into c*x; false when there is none.
bool recombine_div_mod(Poly& p);

// Simplifying constructors of the atoms (symbolic_simplify.cc).
Expr divide(const Expr& a, const Expr& b);
Expr modulo(const Expr& a, const Expr& b);
Expr choose(Kind kind, const Expr& a, const Expr& b);  // kMin or kMax
Expr less_than(const Expr& a, const Expr& b);
Expr equality(Kind kind, const Expr& a, const Expr& b);  // kEq or kNe
Expr logic(Kind kind, const Expr& a, const Expr& b);     // kAnd or kOr

}  // namespace luminal
