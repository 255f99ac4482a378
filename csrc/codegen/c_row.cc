// The C renderer's row kernels (kernel/row_kernel.h): an OpenMP loop over the rows; in each
// row, every reduction as its own loop over the row with partial accumulators (as a generic
// reduction's, so it vectorizes), the row-scope values between them once, then the row's
// outputs in one `omp simd` loop. Not the choice of which reductions fuse (kernel/buffer_plan).
#include <set>

#include "codegen/c.h"
#include "kernel/row_kernel.h"

namespace luminal {

bool CRenderer::render_row(const Program& program, const Kernel& k, CodeWriter& w) const {
  (void)program;
  const RowInfo& row = k.row;
  std::vector<Loop> outer;
  for (size_t i = 0; i < k.loops.size(); ++i) {
    if (static_cast<int>(i) != row.row_loop) outer.push_back(k.loops[i]);
  }
  // Iterations: per row, every reduction loop's and the row loop's.
  Expr per_row = row.row_loop >= 0 ? k.loops[row.row_loop].extent : Expr(0);
  for (const Loop& l : k.reduce) per_row = per_row + l.extent;
  Expr work = per_row;
  for (const Loop& l : outer) work = work * l.extent;
  std::string team = omp_team(k, work.to_c());
  if (!team.empty() && !outer.empty()) {
    std::string pragma = "#pragma omp parallel for" + team + " schedule(static)";
    if (outer.size() > 1) pragma += " collapse(" + std::to_string(outer.size()) + ")";
    w.line(pragma);
  }
  for (const Loop& l : outer) {
    w.open("for (int64_t " + l.var + " = 0; " + l.var + " < " + l.extent.to_c() + "; " + l.var +
           "++)");
  }
  std::set<std::string> bound;  // run-time symbols of the row scope
  int steps = static_cast<int>(row.reductions.size());
  for (int s = 0; s < steps; ++s) {
    for (ValueId i : row_values_before(k, s)) emit_value(k, i, bound, w);
    const Value& red = k.values[row.reductions[s]];
    int lanes = lanes_of(k, red, k.reduce[s]);
    emit_reduction_loop(k, row.reductions[s], k.reduce[s], lanes, values_in(k, s), w);
  }
  for (ValueId i : row_values_before(k, steps)) emit_value(k, i, bound, w);
  if (row.row_loop >= 0) {
    const Loop& l = k.loops[row.row_loop];
    w.line("#pragma omp simd");
    w.open("for (int64_t " + l.var + " = 0; " + l.var + " < " + l.extent.to_c() + "; " + l.var +
           "++)");
    std::set<std::string> inner = bound;
    for (ValueId i : values_in(k, steps)) emit_value(k, i, inner, w);
    w.line(store_statement(k));
    w.close();
  } else {
    w.line(store_statement(k));
  }
  for (size_t i = 0; i < outer.size(); ++i) w.close();
  return true;
}

}  // namespace luminal
