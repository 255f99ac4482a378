// A fault planted in the generated C for the tests of the search's check
// (tests/test_kernel_check.py), set only through _core._plant_fault: a bug in a renderer that
// every program shares, the graph as written included. Never set otherwise.
#pragma once

#include <string>

namespace luminal {

enum class PlantedFault {
  kNone,
  kSqrt,  // every Sqrt of the C renderer computes 1% high
  kGemm,  // a C matmul's GEMM path (not its GEMV path) adds 1 to its first output element
};

PlantedFault& planted_fault();
// "", "sqrt" or "gemm"; anything else is std::invalid_argument (a ValueError in Python).
void plant_fault(const std::string& name);

}  // namespace luminal
