// The op table of ops.def as an array, and its accessors.
#include "ir/op.h"

#include <cmath>

#include "core/errors.h"

namespace luminal {

namespace {
using FloatEval = double (*)(double, double);

struct OpInfo {
  const char* name;
  int arity;
  OpCategory category;
  double cost_weight;
  int recompute_weight;
  OpSign sign;
  const char* c_float;
  FloatEval float_eval;
};

constexpr OpInfo kOps[] = {
#define LUMINAL_OP(name, arity, category, cost, recompute, nonneg, c_float, float_eval)      \
  {#name, arity, OpCategory::category, cost, recompute, OpSign::nonneg, c_float,            \
   [](double a, double b) -> double {                                                       \
     (void)a;                                                                                \
     (void)b;                                                                                \
     return float_eval;                                                                      \
   }},
#include "ir/ops.def"
#undef LUMINAL_OP
};

const OpInfo& info(OpKind op) { return kOps[static_cast<int>(op)]; }

bool has_float_meaning(OpKind op) { return is_unary(op) || is_binary(op); }
}  // namespace

const char* op_name(OpKind op) { return info(op).name; }

int op_arity(OpKind op) { return info(op).arity; }

OpCategory op_category(OpKind op) { return info(op).category; }

double op_cost_weight(OpKind op) { return info(op).cost_weight; }

int op_recompute_weight(OpKind op) { return info(op).recompute_weight; }

OpSign op_sign(OpKind op) { return info(op).sign; }

std::string op_c_float(OpKind op, const std::string& a, const std::string& b) {
  if (!has_float_meaning(op)) {
    throw InternalError(std::string("op_c_float: ") + op_name(op) + " is not elementwise");
  }
  std::string out;
  for (const char* c = info(op).c_float; *c; ++c) {
    if (c[0] == '$' && (c[1] == '0' || c[1] == '1')) {
      out += c[1] == '0' ? a : b;
      ++c;
    } else {
      out += *c;
    }
  }
  return out;
}

double op_float_eval(OpKind op, double a, double b) {
  if (!has_float_meaning(op)) {
    throw InternalError(std::string("op_float_eval: ") + op_name(op) + " is not elementwise");
  }
  return info(op).float_eval(a, b);
}

OpKind op_from_name(const std::string& name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (name == kOps[i].name) return static_cast<OpKind>(i);
  }
  throw InternalError("unknown op '" + name + "'");
}

}  // namespace luminal
