// Names and arities of the ops in ops.def.
#include "ir/op.h"

#include "core/errors.h"

namespace luminal {

namespace {
struct OpInfo {
  const char* name;
  int arity;
};
constexpr OpInfo kOps[] = {
#define LUMINAL_OP(name, arity) {#name, arity},
#include "ir/ops.def"
#undef LUMINAL_OP
};
}  // namespace

const char* op_name(OpKind op) { return kOps[static_cast<int>(op)].name; }

int op_arity(OpKind op) { return kOps[static_cast<int>(op)].arity; }

OpKind op_from_name(const std::string& name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (name == kOps[i].name) return static_cast<OpKind>(i);
  }
  throw InternalError("unknown op '" + name + "'");
}

}  // namespace luminal
