// OpKind: the HLIR op enum generated from ops.def, and the per-op facts ops.def carries
// (arity, category, cost weights). Scalar meanings are in ir/scalar_ops.h; algebraic facts
// used by rewrites live beside the e-graph rules, not here.
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

const char* op_name(OpKind op);
OpKind op_from_name(const std::string& name);  // throws InternalError for unknown names
int op_arity(OpKind op);
OpCategory op_category(OpKind op);
double op_cost_weight(OpKind op);   // the e-graph cost model's work per output element
int op_recompute_weight(OpKind op);  // the lowering's price of recomputing; -1: never

inline bool is_unary(OpKind op) { return op_category(op) == OpCategory::Unary; }
inline bool is_binary(OpKind op) { return op_category(op) == OpCategory::Binary; }
inline bool is_reduce(OpKind op) { return op_category(op) == OpCategory::Reduce; }

}  // namespace luminal
