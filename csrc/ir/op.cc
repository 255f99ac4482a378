// The op table of ops.def as an array, and its accessors.
#include "ir/op.h"

#include "core/errors.h"

namespace luminal {

namespace {
struct OpInfo {
  const char* name;
  int arity;
  OpCategory category;
  double cost_weight;
  int recompute_weight;
};
constexpr OpInfo kOps[] = {
#define LUMINAL_OP(name, arity, category, cost, recompute) \
  {#name, arity, OpCategory::category, cost, recompute},
#include "ir/ops.def"
#undef LUMINAL_OP
};

const OpInfo& info(OpKind op) { return kOps[static_cast<int>(op)]; }
}  // namespace

const char* op_name(OpKind op) { return info(op).name; }

int op_arity(OpKind op) { return info(op).arity; }

OpCategory op_category(OpKind op) { return info(op).category; }

double op_cost_weight(OpKind op) { return info(op).cost_weight; }

int op_recompute_weight(OpKind op) { return info(op).recompute_weight; }

OpKind op_from_name(const std::string& name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (name == kOps[i].name) return static_cast<OpKind>(i);
  }
  throw InternalError("unknown op '" + name + "'");
}

}  // namespace luminal
