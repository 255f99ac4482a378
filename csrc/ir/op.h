// OpKind: the HLIR op enum generated from ops.def, and the per-op facts ops.def carries
// (arity, category, cost weights, sign, C spelling, float meaning). Dtype-dependent scalar
// meanings are in ir/scalar_ops.h; algebraic facts used by rewrites live beside the e-graph
// rules, not here.
#pragma once

#include <cstdint>
#include <string>

namespace luminal {

enum class OpKind : uint8_t {
#define LUMINAL_OP(name, ...) name,
#include "ir/ops.def"
#undef LUMINAL_OP
};

// What an op does with its operands: makes a tensor from nothing (Source), maps each element
// (Unary, Binary), folds one axis away (Reduce), something else (Other), or ends the graph (Sink).
enum class OpCategory : uint8_t { Source, Unary, Binary, Reduce, Other, Sink };

// A unary op's sign (ops.def's nonneg column): Always non-negative, non-negative IfOperand is,
// Never known; Derived for the other ops, whose sign egraph/analysis.cc works out.
enum class OpSign : uint8_t { Always, IfOperand, Never, Derived };

const char* op_name(OpKind op);
OpKind op_from_name(const std::string& name);  // throws InternalError for unknown names
int op_arity(OpKind op);
OpCategory op_category(OpKind op);
double op_cost_weight(OpKind op);   // the e-graph cost model's work per output element
int op_recompute_weight(OpKind op);  // the lowering's price of recomputing; -1: never
OpSign op_sign(OpKind op);
// The C spelling of an elementwise op on f32 operands `a` (and `b`): "log2f(a)", "a + b".
// Throws InternalError for an op that is not elementwise.
std::string op_c_float(OpKind op, const std::string& a, const std::string& b = "");
// The scalar meaning of an elementwise op on float operands, in double (ops.def's float_eval).
double op_float_eval(OpKind op, double a, double b = 0);

inline bool is_unary(OpKind op) { return op_category(op) == OpCategory::Unary; }
inline bool is_binary(OpKind op) { return op_category(op) == OpCategory::Binary; }
inline bool is_reduce(OpKind op) { return op_category(op) == OpCategory::Reduce; }
// Unary, binary or Cast: one output element from the operands' elements at the same index.
inline bool is_elementwise(OpKind op) {
  return is_unary(op) || is_binary(op) || op == OpKind::Cast;
}

}  // namespace luminal
