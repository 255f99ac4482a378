// The online softmax as every C-like renderer spells it: the rescaling weight, a row kernel's
// names and finish, and an attention row's shift and finish, from the plans the match computed
// (kernel/kernel.h RowInfo::online_*, AttentionInfo's cones). Not the loops around them, which
// each backend maps its own way (c/row.cc, c/attention.cc, cuda/row.cc, cuda/attention.cc).
#include "codegen/c_like.h"

namespace luminal {

std::string CLikeRenderer::online_weight(const std::string& c, const std::string& a,
                                         const std::string& b) const {
  return "(" + a + " == " + b + " ? 1.0f : " + math_call(OpKind::Exp2, c + " * (" + a + " - " +
         b + ")") + ")";
}

CLikeRenderer::OnlineNames CLikeRenderer::online_names(const Kernel& kernel) const {
  const RowInfo& row = kernel.row;
  return OnlineNames{value_name(row.online_max), value_name(row.online_sum),
                     value_name(row.online_x), value_expr(kernel, row.online_scale)};
}

void CLikeRenderer::emit_online_start(const OnlineNames& o, CodeWriter& w) const {
  w.line("/* " + o.m + " = max, " + o.sum +
         " = sum of exp2(c * (x - max)), in one loop (online) */");
  w.line("float " + o.m + " = (-1.0f / 0.0f);");
  w.line("float " + o.sum + " = 0.0f;");
}

void CLikeRenderer::emit_online_finish(const OnlineNames& o, CodeWriter& w) const {
  // Where the max is not finite the two loops' sum is NaN (exp2 of inf - inf).
  w.line(o.sum + " = " + o.m + " - " + o.m + " == 0.0f ? " + o.sum + " : (0.0f / 0.0f);");
}

void CLikeRenderer::emit_cone(const Kernel& kernel, const std::vector<ValueId>& cone,
                              CodeWriter& w) const {
  std::set<std::string> bound;
  for (ValueId i : cone) emit_value(kernel, i, bound, w);
}

void CLikeRenderer::emit_attention_shift(const Kernel& kernel, const std::string& m,
                                         const std::string& g, CodeWriter& w) const {
  const AttentionInfo& a = kernel.attention;
  w.open("");
  if (a.max >= 0) w.line("const float " + value_name(a.max) + " = " + m + ";");
  emit_cone(kernel, a.shift_cone, w);
  w.line(g + " = " + value_name(a.shift) + ";");
  w.close();
}

void CLikeRenderer::emit_attention_finish(const Kernel& kernel, const std::string& m,
                                          const std::string& l, CodeWriter& w) const {
  const AttentionInfo& a = kernel.attention;
  w.line("float lm_g;");
  emit_attention_shift(kernel, m, "lm_g", w);
  w.line("float lm_norm = 1.0f;");
  if (a.norm >= 0) {
    w.open("");
    if (a.sum >= 0) w.line("const float " + value_name(a.sum) + " = " + l + ";");
    if (a.max >= 0) w.line("const float " + value_name(a.max) + " = " + m + ";");
    emit_cone(kernel, a.norm_cone, w);
    w.line("lm_norm = " + value_name(a.norm) + ";");
    w.close();
  }
  w.line("if (lm_g - lm_g != 0.0f) lm_norm = (0.0f / 0.0f);");
}

}  // namespace luminal
