// planted_fault.h: the test-only switch.
#include "codegen/planted_fault.h"

#include <stdexcept>

namespace luminal {

PlantedFault& planted_fault() {
  static PlantedFault fault = PlantedFault::kNone;
  return fault;
}

void plant_fault(const std::string& name) {
  if (name.empty()) {
    planted_fault() = PlantedFault::kNone;
  } else if (name == "sqrt") {
    planted_fault() = PlantedFault::kSqrt;
  } else if (name == "gemm") {
    planted_fault() = PlantedFault::kGemm;
  } else {
    throw std::invalid_argument("plant_fault: no fault named '" + name + "'");
  }
}

}  // namespace luminal
