// interior_split: the innermost loop's range where its loads' padding masks hold.
#include "kernel/interior.h"

#include <algorithm>
#include <set>

namespace luminal {

namespace {

bool mentions_any(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& s : e.symbols()) {
    if (names.count(s)) return true;
  }
  return false;
}

// Narrows [lo, hi) to where `atom`, a condition that moves with `var`, holds; false when the
// atom is not a*var + r < b with a constant a.
bool narrow(const Expr& atom, const std::string& var, const std::set<std::string>& bound,
            Expr& lo, Expr& hi) {
  auto sides = less_than_sides(atom);
  if (!sides) return false;
  Expr d = sides->second - sides->first;  // the atom is d >= 1
  auto stride = affine_stride(d, var);
  if (!stride || !stride->is_const() || stride->as_const() == 0) return false;
  int64_t a = stride->as_const();
  Expr r = d - Expr(a) * Expr::symbol(var);
  if (mentions_any(r, bound)) return false;
  if (a > 0) {
    lo = max(lo, (Expr(a) - r) / Expr(a));  // a*v + r >= 1: v >= ceil((1 - r) / a)
  } else {
    hi = min(hi, (r - 1) / Expr(-a) + 1);  // r - |a|*v >= 1: v <= floor((r - 1) / |a|)
  }
  return true;
}

}  // namespace

std::optional<InteriorSplit> interior_split(const Kernel& kernel) {
  if (!kernel.plain_loop_nest()) return std::nullopt;
  const Loop& inner = kernel.loops.back();
  std::set<std::string> run_time;  // symbols bound per element to values read (Gathers)
  for (const Value& v : kernel.values) {
    for (const Bind& b : v.binds) run_time.insert(b.symbol);
  }
  std::set<std::string> bound = run_time;  // and the inner variable: what moves along the row
  bound.insert(inner.var);
  InteriorSplit split{Expr(0), inner.extent, Expr(1), kernel};
  std::vector<Expr> outer;
  bool decided = false;
  for (Value& v : split.inside.values) {
    if ((v.kind != ValueKind::kLoad && v.kind != ValueKind::kSelect) || is_one(v.valid)) continue;
    Expr kept = 1;
    for (const Expr& atom : conjuncts(v.valid)) {
      if (!mentions_any(atom, bound)) {
        if (std::find(outer.begin(), outer.end(), atom) == outer.end()) outer.push_back(atom);
        decided = true;
      } else if (!mentions_any(atom, run_time) &&
                 narrow(atom, inner.var, run_time, split.lo, split.hi)) {
        decided = true;
      } else {
        kept = logical_and(kept, atom);
      }
    }
    v.valid = kept;
  }
  if (!decided) return std::nullopt;
  for (const Expr& atom : outer) split.outer = logical_and(split.outer, atom);
  return split;
}

}  // namespace luminal
