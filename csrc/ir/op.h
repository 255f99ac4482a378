// OpKind: the HLIR op enum generated from ops.def, with facts about each op.
// Algebraic facts used by rewrites live beside the e-graph rules, not here.
#pragma once

#include <cstdint>
#include <string>

namespace luminal {

enum class OpKind : uint8_t {
#define LUMINAL_OP(name, arity) name,
#include "ir/ops.def"
#undef LUMINAL_OP
};

const char* op_name(OpKind op);
OpKind op_from_name(const std::string& name);  // throws InternalError for unknown names
int op_arity(OpKind op);

inline bool is_unary(OpKind op) {
  return op == OpKind::Log2 || op == OpKind::Exp2 || op == OpKind::Sin || op == OpKind::Sqrt ||
         op == OpKind::Recip;
}
inline bool is_binary(OpKind op) {
  return op == OpKind::Add || op == OpKind::Mul || op == OpKind::Mod || op == OpKind::LessThan;
}
inline bool is_reduce(OpKind op) { return op == OpKind::SumReduce || op == OpKind::MaxReduce; }

}  // namespace luminal
