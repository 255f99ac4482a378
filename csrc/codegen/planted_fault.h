// A fault planted in the generated C for the tests of the search's check
// (tests/test_kernel_check.py), set only through _core._plant_fault: a bug in a renderer that
// every program shares, the graph as written included. Never set otherwise.
#pragma once

#include <string>

#include "ir/op.h"

namespace luminal {

enum class PlantedFault {
  kNone,
  kUnary,  // every call of one unary op (planted_unary_op) in the C renderer computes 1% high
  kGemm,   // a C matmul's GEMM path (not its GEMV path) adds 1 to its first output element
};

PlantedFault& planted_fault();
// Whether the planted fault makes `op`'s math call 1% high.
bool planted_unary_fault(OpKind op);
// "", "gemm" or a unary op's name as op_name spells it ("Exp2", ...); anything else is
// std::invalid_argument (a ValueError in Python).
void plant_fault(const std::string& name);

}  // namespace luminal
