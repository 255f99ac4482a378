// The C renderer's row kernels (kernel/row_kernel.h): an OpenMP loop over the rows; in each
// row, every reduction as its own loop over the row with partial accumulators (as a generic
// reduction's, so it vectorizes), the row-scope values between them once, then the row's
// outputs in one `omp simd` loop; a value both compute (softmax's exp2) is stored to the output
// by the last reduction's loop and read back by the row's (kernel/row_kernel.h RowStash). Not
// the choice of which reductions fuse (kernel/buffer_plan).
#include <set>

#include "codegen/c/renderer.h"
#include "kernel/row_kernel.h"

namespace luminal {

namespace {
// The values of the row loop its store needs when `stash` (if any) is read back from the
// output instead of computed: the cone of the stored value, not entering the stash's.
std::set<ValueId> row_loop_needs(const Kernel& k, int step, ValueId stash) {
  std::set<ValueId> needed;
  std::vector<ValueId> todo = {ValueId(k.values.size()) - 1};
  while (!todo.empty()) {
    ValueId v = todo.back();
    todo.pop_back();
    if (k.row.scope[v] != step || !needed.insert(v).second || v == stash) continue;
    for (ValueId a : k.values[v].args) todo.push_back(a);
  }
  return needed;
}
}  // namespace

std::string CRenderer::row_prefetch(const Kernel& k, const std::vector<Loop>& outer,
                                    int step) const {
  if (outer.empty() || k.row.reductions.empty()) return "";
  const std::string& next = outer.back().var;
  std::set<BufferId> seen;
  std::string out;
  for (ValueId i : values_in(k, 0)) {
    const Value& v = k.values[i];
    if (v.kind != ValueKind::kLoad || v.buffer == k.out || !v.binds.empty() ||
        !seen.insert(v.buffer).second) {
      continue;
    }
    Expr at = v.index.substitute(next, Expr::symbol(next) + Expr(1))
                  .substitute(k.reduce[0].var, Expr::symbol(k.reduce[step].var + "_b"));
    out += std::string(out.empty() ? "" : " ") + "__builtin_prefetch(&" + buffer_name(v.buffer) +
           "[" + at.to_c() + "], 0, 2);";
  }
  if (k.row.row_loop >= 0 && !out.empty()) {  // and the next row of the output, for writing
    Expr at = k.out_index.substitute(next, Expr::symbol(next) + Expr(1))
                  .substitute(k.loops[k.row.row_loop].var,
                              Expr::symbol(k.reduce[step].var + "_b"));
    out += " __builtin_prefetch(&" + buffer_name(k.out) + "[" + at.to_c() + "], 1, 2);";
  }
  return out;
}

bool CRenderer::render_row(const Program& program, const Kernel& k, CodeWriter& w) const {
  const RowInfo& row = k.row;
  RowStash stash = match_stash(k);
  if (program.buffers[k.out].dtype != DType::F32) stash = RowStash{};
  std::vector<Loop> outer;
  for (int i : row.rows) outer.push_back(k.loops[i]);
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
    if (s == row.online) emit_online_loop(k, w, row_prefetch(k, outer, s));
    bool merged = row.online >= 0 && (s == row.online || s == row.online + 1);
    if (merged) continue;  // the sum ran with the max
    const Value& red = k.values[row.reductions[s]];
    int lanes = lanes_of(k, red, k.reduce[s]);
    std::string also;
    if (stash.row_value >= 0 && s == steps - 1) {  // stored here, read back by the row loop
      Expr at = k.out_index.substitute(k.loops[row.row_loop].var, Expr::symbol(k.reduce[s].var));
      also = buffer_name(k.out) + "[" + at.to_c() + "] = " + value_name(stash.reduce_value) +
             ";";
    }
    // The last reduction's loop (its row in cache by now) also asks for the next row.
    std::string prefetch = s == steps - 1 ? row_prefetch(k, outer, s) : "";
    emit_reduction_loop(k, row.reductions[s], k.reduce[s], lanes, values_in(k, s), w, also,
                        prefetch);
  }
  for (ValueId i : row_values_before(k, steps)) emit_value(k, i, bound, w);
  if (row.row_loop >= 0) {
    const Loop& l = k.loops[row.row_loop];
    w.line("#pragma omp simd");
    w.open("for (int64_t " + l.var + " = 0; " + l.var + " < " + l.extent.to_c() + "; " + l.var +
           "++)");
    std::set<std::string> inner = bound;
    std::set<ValueId> needed = row_loop_needs(k, steps, stash.row_value);
    for (ValueId i : values_in(k, steps)) {
      if (i == stash.row_value) {
        w.line("const float " + value_name(i) + " = " + buffer_name(k.out) + "[" +
               k.out_index.to_c() + "];  /* stored by the last reduction's loop */");
      } else if (needed.count(i)) {
        emit_value(k, i, inner, w);
      }
    }
    w.line(store_statement(k));
    w.close();
  } else {
    w.line(store_statement(k));
  }
  for (size_t i = 0; i < outer.size(); ++i) w.close();
  return true;
}

void CRenderer::emit_online_loop(const Kernel& k, CodeWriter& w,
                                 const std::string& per_block) const {
  const RowInfo& row = k.row;
  const OnlineNames o = online_names(k);
  const Loop& loop = k.reduce[row.online];
  const std::string extent = loop.extent.to_c();
  const std::string l = std::to_string(lanes_of(k, k.values[row.online_max], loop));
  const std::vector<ValueId> body = values_in(k, row.online);
  auto emit_body_values = [&] {
    std::set<std::string> bound;
    for (ValueId i : body) emit_value(k, i, bound, w);
  };
  // One step of the recurrence on the pair (mv, sv) for the element x. Both exp2 are computed
  // before the selects (exp2 of NaN where a == b == -inf, then not taken) so GCC if-converts
  // the selects and vectorizes the loop.
  auto step = [&](const std::string& mv, const std::string& sv) {
    const std::string mn = o.m + "_new";
    w.line("const float " + mn + " = lm_fmax_nan(" + mv + ", " + o.x + ");");
    w.line("const float " + o.m + "_wm = " + math_call(OpKind::Exp2, o.c + " * (" + mv + " - " +
           mn + ")") + ";");
    w.line("const float " + o.m + "_wx = " +
           math_call(OpKind::Exp2, o.c + " * (" + o.x + " - " + mn + ")") + ";");
    w.line(sv + " = " + sv + " * (" + mv + " == " + mn + " ? 1.0f : " + o.m + "_wm) + (" + o.x +
           " == " + mn + " ? 1.0f : " + o.m + "_wx);");
    w.line(mv + " = " + mn + ";");
  };
  emit_online_start(o, w);
  w.line("float " + o.m + "_p[" + l + "], " + o.sum + "_p[" + l + "];");
  w.line("for (int lm_u = 0; lm_u < " + l + "; lm_u++) " + o.m + "_p[lm_u] = " + o.m + ", " +
         o.sum + "_p[lm_u] = 0.0f;");
  w.line("const int64_t " + loop.var + "_main = " + extent + " / " + l + " * " + l + ";");
  w.open("for (int64_t " + loop.var + "_b = 0; " + loop.var + "_b < " + loop.var + "_main; " +
         loop.var + "_b += " + l + ")");
  if (!per_block.empty()) w.line(per_block);
  w.line("#pragma omp simd");
  w.open("for (int lm_u = 0; lm_u < " + l + "; lm_u++)");
  w.line("const int64_t " + loop.var + " = " + loop.var + "_b + lm_u;");
  emit_body_values();
  step(o.m + "_p[lm_u]", o.sum + "_p[lm_u]");
  w.close();
  w.close();
  w.line("for (int lm_u = 0; lm_u < " + l + "; lm_u++) " + o.m + " = lm_fmax_nan(" + o.m +
         ", " + o.m + "_p[lm_u]);");
  w.line("for (int lm_u = 0; lm_u < " + l + "; lm_u++) " + o.sum + " = " + o.sum + " + " +
         o.sum + "_p[lm_u] * " + online_weight(o.c, o.m + "_p[lm_u]", o.m) + ";");
  w.open("for (int64_t " + loop.var + " = " + loop.var + "_main; " + loop.var + " < " + extent +
         "; " + loop.var + "++)");
  emit_body_values();
  step(o.m, o.sum);
  w.close();
  emit_online_finish(o, w);
}

}  // namespace luminal
