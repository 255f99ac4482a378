// ir/infer.h: one case per op category; sources take their type from their attributes.
#include "ir/infer.h"

#include "core/errors.h"

namespace luminal {

NodeType infer(OpKind op, const Node& attrs, const std::vector<Operand>& operands) {
  if (static_cast<int>(operands.size()) != op_arity(op)) {
    throw InternalError(std::string("infer: ") + op_name(op) + " takes " +
                        std::to_string(op_arity(op)) + " operands");
  }
  switch (op_category(op)) {
    case OpCategory::Source:
      if (op == OpKind::Constant) return {attrs.dtype, {}};
      if (op == OpKind::Iota) return {DType::Int, attrs.shape};
      return {attrs.dtype, attrs.shape};
    case OpCategory::Unary:
    case OpCategory::Sink:
      return {operands[0].dtype, operands[0].view->dims};
    case OpCategory::Binary:
      return {op == OpKind::LessThan ? DType::Bool : operands[0].dtype, operands[0].view->dims};
    case OpCategory::Reduce: {
      std::vector<Expr> shape = operands[0].view->dims;
      shape.erase(shape.begin() + attrs.axis);
      return {operands[0].dtype, std::move(shape)};
    }
    case OpCategory::Other:
      if (op == OpKind::Gather) return {operands[0].dtype, operands[1].view->dims};
      return {attrs.dtype, operands[0].view->dims};  // Cast
  }
  throw InternalError("infer: unknown op category");
}

}  // namespace luminal
