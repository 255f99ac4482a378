// block_split: see block_split.h. A candidate block is checked on each index by substitution:
// with ii bound to each position j of the block, index(j) - index(0) must be j steps of
// index(1) - index(0).
#include "kernel/block_split.h"

#include <vector>

namespace luminal {

namespace {

// Every index the kernel addresses memory with: its loads' and its store's.
std::vector<const Expr*> indices(const Kernel& k) {
  std::vector<const Expr*> out;
  for (const Value& v : k.values) {
    if (v.kind == ValueKind::kLoad) out.push_back(&v.index);
  }
  out.push_back(&k.out_index);
  return out;
}

// Whether `e` moves by a constant step along `var` over [0, block) (it may not mention it).
bool steps_evenly(const Expr& e, const std::string& var, int64_t block) {
  const Expr first = e.substitute(var, Expr(0));
  const Expr step = e.substitute(var, Expr(1)) - first;
  for (int64_t j = 2; j < block; ++j) {
    if (e.substitute(var, Expr(j)) - first != step * Expr(j)) return false;
  }
  return true;
}

}  // namespace

std::optional<BlockSplit> block_split(const Kernel& kernel) {
  if (!kernel.plain_loop_nest()) return std::nullopt;
  const Loop& inner = kernel.loops.back();
  const std::optional<int64_t> extent = inner.extent.try_const();
  if (!extent || *extent < 2 * kMinBlock) return std::nullopt;
  bool even = true;
  for (const Expr* e : indices(kernel)) {
    even = even && affine_stride(*e, inner.var).has_value();
  }
  if (even) return std::nullopt;
  const std::string outer = inner.var + "o";
  for (int64_t block = *extent / 2; block >= kMinBlock; --block) {
    if (*extent % block != 0) continue;
    const Expr at = Expr::symbol(outer) * Expr(block) + Expr::symbol(inner.var) % Expr(block);
    BlockSplit split{outer, *extent / block, block, kernel};
    for (Value& v : split.inside.values) {
      v.index = v.index.substitute(inner.var, at);
      v.valid = v.valid.substitute(inner.var, at);
    }
    split.inside.out_index = split.inside.out_index.substitute(inner.var, at);
    bool fits = true;
    for (const Expr* e : indices(split.inside)) {
      fits = fits && steps_evenly(*e, inner.var, block);
    }
    if (fits) return split;
  }
  return std::nullopt;
}

}  // namespace luminal
