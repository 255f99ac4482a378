// planted_fault.h: the test-only switch.
#include "codegen/planted_fault.h"

#include <stdexcept>

namespace luminal {

namespace {
OpKind& planted_unary_op() {
  static OpKind op = OpKind::Log2;
  return op;
}
}  // namespace

PlantedFault& planted_fault() {
  static PlantedFault fault = PlantedFault::kNone;
  return fault;
}

bool planted_unary_fault(OpKind op) {
  return planted_fault() == PlantedFault::kUnary && planted_unary_op() == op;
}

void plant_fault(const std::string& name) {
  if (name.empty()) {
    planted_fault() = PlantedFault::kNone;
    return;
  }
  if (name == "gemm") {
    planted_fault() = PlantedFault::kGemm;
    return;
  }
  static const OpKind ops[] = {
#define LUMINAL_OP(op_kind, ...) OpKind::op_kind,
#include "ir/ops.def"
#undef LUMINAL_OP
  };
  for (OpKind op : ops) {
    if (is_unary(op) && name == op_name(op)) {
      planted_unary_op() = op;
      planted_fault() = PlantedFault::kUnary;
      return;
    }
  }
  throw std::invalid_argument("plant_fault: no fault named '" + name +
                              "' (\"\", \"gemm\" or a unary op's name)");
}

}  // namespace luminal
