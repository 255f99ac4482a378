// Bounds and rewrites for the atoms of symbolic expressions: //, %, min, max, <, ==, !=, and, or.
// Every rewrite is exact under floor semantics for all int64 values with non-negative symbols,
// and never turns a division by zero into a value; where that can't be shown, the atom stays.
// Not here: polynomial arithmetic and printing (symbolic.cc).

#include <numeric>
#include <algorithm>
#include <optional>
#include <utility>

#include "core/errors.h"
#include "core/symbolic_node.h"

namespace luminal {

// ---------------------------------------------------------------- interval bounds

__extension__ typedef __int128 Wide;  // interval arithmetic runs in 128 bits, then saturates

static int64_t saturate(Wide v) {
  if (v > kMaxInt64) return kMaxInt64;
  if (v < kMinInt64) return kMinInt64;
  return static_cast<int64_t>(v);
}

static Wide floor_div_wide(Wide a, Wide b) {
  Wide q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

static Range span(std::initializer_list<Wide> values) {
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return {saturate(*lo), saturate(*hi)};
}

static Range times(Range a, Range b) {
  return span({Wide(a.lo) * b.lo, Wide(a.lo) * b.hi, Wide(a.hi) * b.lo, Wide(a.hi) * b.hi});
}

// A divisor is never 0 where the quotient has a value, so [0, h] narrows to [1, h].
static Range without_zero(Range b) {
  if (b.lo == 0) b.lo = 1;
  if (b.hi == 0) b.hi = -1;
  return b;
}

static Range div_range(Range a, Range b) {
  b = without_zero(b);
  if (b.lo < 0 && b.hi > 0) return {kMinInt64, kMaxInt64};
  // Floor division is monotone in each argument while the divisor keeps its sign.
  return span({floor_div_wide(a.lo, b.lo), floor_div_wide(a.lo, b.hi), floor_div_wide(a.hi, b.lo),
               floor_div_wide(a.hi, b.hi)});
}

static Range mod_range(Range a, Range b) {
  b = without_zero(b);
  if (b.lo > 0) return {0, std::min(b.hi - 1, a.lo >= 0 ? a.hi : kMaxInt64)};
  if (b.hi < 0) return {std::max(b.lo + 1, a.hi <= 0 ? a.lo : kMinInt64), 0};
  return {b.lo + 1, b.hi - 1};
}

static Range range_of(const Expr& e) { return {lo(e), hi(e)}; }

Range node_range(const ExprNode& n) {
  switch (n.kind) {
    case Kind::kConst: return {n.value, n.value};
    case Kind::kSym: return {0, kMaxInt64};
    case Kind::kAdd: {
      Range r{n.value, n.value};
      for (const Expr& t : n.args) r = {saturate(Wide(r.lo) + lo(t)), saturate(Wide(r.hi) + hi(t))};
      return r;
    }
    case Kind::kMul: {
      Range r{n.value, n.value};
      for (const Expr& a : n.args) r = times(r, range_of(a));
      return r;
    }
    case Kind::kDiv: return div_range(range_of(n.args[0]), range_of(n.args[1]));
    case Kind::kMod: return mod_range(range_of(n.args[0]), range_of(n.args[1]));
    case Kind::kMin:
      return {std::min(lo(n.args[0]), lo(n.args[1])), std::min(hi(n.args[0]), hi(n.args[1]))};
    case Kind::kMax:
      return {std::max(lo(n.args[0]), lo(n.args[1])), std::max(hi(n.args[0]), hi(n.args[1]))};
    default: return {0, 1};
  }
}

// ---------------------------------------------------------------- helpers

static bool provably_nonzero(const Expr& e) { return lo(e) > 0 || hi(e) < 0; }

// The gcd of the coefficients' magnitudes (constant included when with_constant), and k.
static int64_t content(const Poly& p, bool with_constant, int64_t k) {
  uint64_t g = static_cast<uint64_t>(k);
  for (const auto& [m, c] : p) {
    if (m.empty() && !with_constant) continue;
    uint64_t v = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    while (v != 0) {
      uint64_t t = g % v;
      g = v;
      v = t;
    }
  }
  return static_cast<int64_t>(g);
}

static Poly divide_exact(const Poly& p, int64_t g) {
  Poly out;
  for (const auto& [m, c] : p) add_term(out, m, c / g);
  return out;
}

// The single value of e // k over e's range, when there is one (k > 0).
static std::optional<int64_t> fixed_quotient(const Expr& e, int64_t k) {
  int64_t q = floor_div(lo(e), k);
  if (q != floor_div(hi(e), k)) return std::nullopt;
  return q;
}

// The split of r (a polynomial whose coefficients lie in [0, k)) into h*x + low, for the
// largest h > 1 dividing k such that the terms whose coefficients h does not divide sum to
// values in [0, h): then r // k == x // (k / h) and r % k == h * (x % (k / h)) + low, for any
// integer x (a row index times a block plus a position inside the block: (64*i + j % 64) //
// 256 == i // 4). nullopt when there is none.
struct LowSplit {
  int64_t h;
  Poly x;
  Expr low;
};
static std::optional<LowSplit> split_low(const Poly& r, int64_t k) {
  std::vector<int64_t> steps;
  for (const auto& [m, c] : r) {
    const int64_t h = std::gcd(c, k);
    if (h > 1 && h < k && std::find(steps.begin(), steps.end(), h) == steps.end()) {
      steps.push_back(h);
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  for (int64_t h : steps) {
    Poly high, low;
    for (const auto& [m, c] : r) add_term(c % h == 0 ? high : low, m, c % h == 0 ? c / h : c);
    if (high.empty() || low.empty()) continue;
    Expr l = from_poly(low);
    if (lo(l) >= 0 && hi(l) < h) return LowSplit{h, high, l};
  }
  return std::nullopt;
}

// Orders the two sides of a commutative atom: constants last, so "s != 0" and "max(s, 1)".
static std::pair<Expr, Expr> sorted(const Expr& a, const Expr& b) {
  bool swap = a.is_const() != b.is_const() ? a.is_const() : compare(b, a) < 0;
  if (swap) return {b, a};
  return {a, b};
}

static Expr make_binary(Kind kind, const Expr& a, const Expr& b) {
  return make_node(kind, 0, "", {a, b});
}

static bool is_atom_of(const Expr& e, Kind kind) { return kind_of(e) == kind; }

// ---------------------------------------------------------------- division and modulo

// (k*q + r) // k == q + r // k for integer q. Each coefficient c splits as k*(c // k) + c % k,
// so r's coefficients lie in [0, k): (s*5 - t)//4 == s - t + (s + t*3)//4.
static Expr divide_by_const(const Expr& a, int64_t k) {
  if (k < 0) return divide_by_const(-a, neg_checked(k));
  if (auto q = fixed_quotient(a, k)) return Expr(*q);
  Poly whole;
  Poly rest;
  for (const auto& [m, c] : to_poly(a)) {
    add_term(whole, m, floor_div(c, k));
    add_term(rest, m, floor_mod(c, k));
  }
  Expr q = from_poly(whole);
  if (rest.empty()) return q;
  int64_t g = content(rest, true, k);  // (g*r) // (g*k) == r // k
  Expr r = from_poly(divide_exact(rest, g));
  k /= g;
  if (auto c = fixed_quotient(r, k)) return q + Expr(*c);
  if (auto split = split_low(to_poly(r), k)) {
    return q + divide_by_const(from_poly(split->x), k / split->h);
  }
  int64_t k2 = 0;
  bool nested = is_atom_of(r, Kind::kDiv) && r.node()->args[1].is_const();
  if (nested && !__builtin_mul_overflow(k, r.node()->args[1].as_const(), &k2)) {
    return q + divide_by_const(r.node()->args[0], k2);  // (x // k1) // k == x // (k1*k)
  }
  return q + make_binary(Kind::kDiv, r, Expr(k));
}

// The atom x % k1 where k divides k1: then (x % k1) % k == x % k.
static const Expr* finer_mod(const Monomial& m, int64_t k) {
  if (m.size() != 1 || !is_atom_of(m[0], Kind::kMod)) return nullptr;
  std::optional<int64_t> k1 = m[0].node()->args[1].try_const();
  if (!k1 || *k1 % k != 0) return nullptr;
  return &m[0].node()->args[0];
}

// (k*q + r) % k == r % k; coefficients reduce mod k; (g*r) % (g*k) == g * (r % k).
static Expr modulo_by_const(const Expr& a, int64_t k) {
  if (k < 0) return -modulo_by_const(-a, neg_checked(k));
  if (auto q = fixed_quotient(a, k)) return a - Expr(mul_checked(*q, k));
  Poly rest;
  for (const auto& [m, c] : to_poly(a)) {
    const Expr* inner = finer_mod(m, k);
    if (inner) {
      rest = scaled_sum(rest, to_poly(*inner), c);
    } else {
      add_term(rest, m, c);
    }
  }
  Poly reduced;
  for (const auto& [m, c] : rest) add_term(reduced, m, floor_mod(c, k));
  if (reduced.empty()) return Expr(0);
  int64_t g = content(reduced, true, k);
  if (g > 1) return Expr(g) * modulo_by_const(from_poly(divide_exact(reduced, g)), k / g);
  Expr r = from_poly(reduced);
  if (auto q = fixed_quotient(r, k)) return r - Expr(mul_checked(*q, k));
  if (auto split = split_low(reduced, k)) {
    return Expr(split->h) * modulo_by_const(from_poly(split->x), k / split->h) + split->low;
  }
  return make_binary(Kind::kMod, r, Expr(k));
}

// Splits a into b*q + r, q taking the terms that b (a single term) divides.
static std::pair<Expr, Expr> split_multiples(const Expr& a, const Expr& b) {
  Poly pb = to_poly(b);
  if (pb.size() != 1 || pb.begin()->first.empty()) return {Expr(0), a};
  const auto& [mb, cb] = *pb.begin();
  auto less = [](const Expr& x, const Expr& y) { return compare(x, y) < 0; };
  Poly q;
  Poly r;
  for (const auto& [m, c] : to_poly(a)) {
    bool divides =
        floor_mod(c, cb) == 0 && std::includes(m.begin(), m.end(), mb.begin(), mb.end(), less);
    if (!divides) {
      add_term(r, m, c);
      continue;
    }
    Monomial rest;
    std::set_difference(m.begin(), m.end(), mb.begin(), mb.end(), std::back_inserter(rest), less);
    add_term(q, rest, floor_div(c, cb));
  }
  return {from_poly(q), from_poly(r)};
}

Expr divide(const Expr& a, const Expr& b) {
  if (auto k = b.try_const()) {
    if (*k == 0) throw ShapeError("division of '" + a.to_string() + "' by zero");
    if (auto x = a.try_const()) return Expr(floor_div(*x, *k));
    return divide_by_const(a, *k);
  }
  if (!provably_nonzero(b)) return make_binary(Kind::kDiv, a, b);
  if (a == b) return Expr(1);
  auto [q, r] = split_multiples(a, b);
  if (r == Expr(0)) return q;
  if (lo(r) >= 0 && lo(b) > 0 && hi(r) < lo(b)) return q;
  return q + make_binary(Kind::kDiv, r, b);
}

Expr modulo(const Expr& a, const Expr& b) {
  if (auto k = b.try_const()) {
    if (*k == 0) throw ShapeError("modulo of '" + a.to_string() + "' by zero");
    if (auto x = a.try_const()) return Expr(floor_mod(*x, *k));
    return modulo_by_const(a, *k);
  }
  if (!provably_nonzero(b)) return make_binary(Kind::kMod, a, b);
  if (a == b) return Expr(0);
  Expr r = split_multiples(a, b).second;
  if (lo(r) >= 0 && lo(b) > 0 && hi(r) < lo(b)) return r;
  if (r == Expr(0)) return r;
  return make_binary(Kind::kMod, r, b);
}

bool recombine_div_mod(Poly& p) {
  bool has_div = std::any_of(p.begin(), p.end(), [](const auto& term) {
    return term.first.size() == 1 && is_atom_of(term.first[0], Kind::kDiv);
  });
  if (!has_div) return false;
  for (const auto& [m, c] : p) {
    if (m.size() != 1 || !is_atom_of(m[0], Kind::kMod)) continue;
    Expr x = m[0].node()->args[0];
    std::optional<int64_t> k = m[0].node()->args[1].try_const();
    int64_t ck = 0;
    if (!k || __builtin_mul_overflow(c, *k, &ck)) continue;
    auto div_term = p.find({divide(x, Expr(*k))});
    if (div_term == p.end() || div_term->second != ck) continue;
    Poly x_times_c = scaled_sum({}, to_poly(x), c);
    Monomial mod_term = m;  // m refers into p: copy it before erasing
    p.erase(div_term);
    p.erase(mod_term);
    p = scaled_sum(p, x_times_c, 1);
    return true;
  }
  return false;
}

// ---------------------------------------------------------------- min, max, comparisons, logic

Expr choose(Kind kind, const Expr& a, const Expr& b) {
  Expr d = a - b;
  if (hi(d) <= 0) return kind == Kind::kMin ? a : b;
  if (lo(d) >= 0) return kind == Kind::kMin ? b : a;
  auto [x, y] = sorted(a, b);
  return make_binary(kind, x, y);
}

// Splits d into lhs - rhs with every coefficient of lhs and rhs positive.
static std::pair<Expr, Expr> split_signs(const Poly& d) {
  Poly lhs;
  Poly rhs;
  for (const auto& [m, c] : d) {
    if (c > 0) add_term(lhs, m, c);
    if (c < 0) add_term(rhs, m, neg_checked(c));
  }
  return {from_poly(lhs), from_poly(rhs)};
}

// a < b as d = a - b < 0; with g the gcd of d's non-constant coefficients and c its constant,
// g*e + c < 0 iff e + floor(c/g) < 0. So s < t + 1, s <= t and t >= s build one node.
Expr less_than(const Expr& a, const Expr& b) {
  Expr d = a - b;
  if (hi(d) < 0) return Expr(1);
  if (lo(d) >= 0) return Expr(0);
  Poly p = to_poly(d);
  int64_t g = content(p, false, 0);
  auto constant = p.find({});
  int64_t c = constant == p.end() ? 0 : constant->second;
  if (constant != p.end()) p.erase(constant);
  p = divide_exact(p, g);
  add_term(p, {}, floor_div(c, g));
  auto [lhs, rhs] = split_signs(p);
  return make_binary(Kind::kLt, lhs, rhs);
}

// a == b as d = a - b == 0; g*e + c == 0 has no solution unless g divides c.
Expr equality(Kind kind, const Expr& a, const Expr& b) {
  Expr d = a - b;
  bool never = provably_nonzero(d);
  bool always = d == Expr(0);
  if (never || always) return Expr(static_cast<int64_t>((kind == Kind::kEq) == always));
  if (kind == Kind::kNe && lo(d) >= 0 && hi(d) <= 1) return d;  // d in {0, 1}: d != 0 is d
  Poly p = to_poly(d);
  int64_t g = content(p, false, 0);
  auto constant = p.find({});
  if (constant != p.end() && constant->second % g != 0)
    return Expr(static_cast<int64_t>(kind == Kind::kNe));
  auto [lhs, rhs] = split_signs(divide_exact(p, g));
  auto [x, y] = sorted(lhs, rhs);
  return make_binary(kind, x, y);
}

Expr logic(Kind kind, const Expr& a, const Expr& b) {
  Expr x = equality(Kind::kNe, a, Expr(0));  // now 0 or 1
  Expr y = equality(Kind::kNe, b, Expr(0));
  if (x.is_const()) std::swap(x, y);
  if (auto c = y.try_const()) {
    bool absorbs = (kind == Kind::kAnd) == (*c == 0);  // and with 0, or with 1
    return absorbs ? y : x;
  }
  if (x == y) return x;
  auto [first, second] = sorted(x, y);
  return make_binary(kind, first, second);
}

}  // namespace luminal
