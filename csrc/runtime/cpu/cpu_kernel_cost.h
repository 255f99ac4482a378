// CpuKernelCost: what CpuRuntime hands the search's cost model (Runtime::kernel_cost): its
// prices of a matmul under a tile and of a 16-bit widening and rounding, for a machine of a
// given vector width. The runtime's, not the renderer's: codegen knows no cost model.
#pragma once

#include <cstdint>

#include "egraph/cost.h"

namespace luminal {

class CpuKernelCost final : public egraph::KernelCost {
 public:
  // On a machine whose vectors hold `native` floats (8 or 16: CpuOptions::vector_width).
  explicit CpuKernelCost(int64_t native) : native_(native) {}
  double matmul(const egraph::MatmulSize& size, const ScheduleParams& schedule) const override;
  double widen(double elements, const ScheduleParams& schedule) const override;
  double narrow(double elements, const ScheduleParams& schedule) const override;

 private:
  int64_t native_;
};

}  // namespace luminal
