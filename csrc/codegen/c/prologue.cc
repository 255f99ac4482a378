// The C renderer's matmul prologue (MatmulInfo::a_computed, kernel/prologue.h): A's rows
// computed where the matmul reads them. A row's statistics (its reductions, each a vectorized
// loop over the row as a row kernel's) run once per row; its elements, from the row's loads and
// statistics, are written straight into what the paths read: the GEMM's packed tile of A
// (tile_m rows of one k block, c/matmul.cc), the GEMV's copy of x (c/gemv.cc). So a norm's
// output is never stored. Not the paths themselves.
#include <set>

#include "codegen/c/renderer.h"

namespace luminal {

namespace {

// Runs over A's row-scope values in order: elementwise ones through `elementwise`, each row
// statistic (a reduction) through `statistic` with its index j in MatmulInfo::a_rows.
template <typename Elementwise, typename Statistic>
void for_each_row_value(const Kernel& k, Elementwise elementwise, Statistic statistic) {
  const MatmulInfo& mm = k.matmul;
  for (size_t i = 0; i < k.values.size(); ++i) {
    if (mm.a_scope[i] != MatmulInfo::kRowScope) continue;
    const ValueId id = static_cast<ValueId>(i);
    if (k.values[i].kind != ValueKind::kReduce) {
      elementwise(id);
      continue;
    }
    int j = 0;
    while (mm.a_rows[j] != id) ++j;
    statistic(id, j);
  }
}

}  // namespace

void CRenderer::emit_prologue_stats(const Kernel& k, const std::string& stats,
                                    CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  w.open("");  // the row's values are named as the elements' loop names them again
  std::set<std::string> bound;
  for_each_row_value(
      k, [&](ValueId i) { emit_value(k, i, bound, w); },
      [&](ValueId i, int j) {
        std::vector<ValueId> body;
        for (size_t b = 0; b < k.values.size(); ++b) {
          if (mm.a_scope[b] == j) body.push_back(static_cast<ValueId>(b));
        }
        emit_reduction_loop(k, i, k.reduce[j], lanes_of(k, k.values[i], k.reduce[j]), body, w);
        w.line(stats + "[" + std::to_string(j) + "] = " + value_name(i) + ";");
      });
  w.close();
}

void CRenderer::emit_prologue_row(const Kernel& k, const std::string& stats,
                                  const std::string& k_first, const std::string& count,
                                  const std::string& dst, CodeWriter& w) const {
  const MatmulInfo& mm = k.matmul;
  std::set<std::string> bound;
  // The row's values: its statistics as computed, and the elementwise work on them again.
  for_each_row_value(
      k, [&](ValueId i) { emit_value(k, i, bound, w); },
      [&](ValueId i, int j) {
        w.line("const float " + value_name(i) + " = " + stats + "[" + std::to_string(j) + "];");
      });
  w.open("for (int64_t lm_kk = 0; lm_kk < " + count + "; lm_kk++)");
  w.line("const int64_t " + k.reduce.back().var + " = " + k_first + " + lm_kk;");
  for (size_t i = 0; i < k.values.size(); ++i) {
    if (mm.a_scope[i] == MatmulInfo::kElement) emit_value(k, static_cast<ValueId>(i), bound, w);
  }
  w.line(dst + " = " + value_name(mm.a) + ";");
  w.close();
}

}  // namespace luminal
