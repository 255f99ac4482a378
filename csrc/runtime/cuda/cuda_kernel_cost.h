// CudaKernelCost: what CudaRuntime hands the search's cost model (Runtime::kernel_cost): only
// the widening of a 16-bit input, which on a GPU is a shift in the reader's registers (inline
// 1), so the model's pick reads bf16 weights as 16 bits; matmuls are priced as the reductions
// they are (the search times the CUDA mappings). The runtime's, not the renderer's.
#pragma once

#include "egraph/cost.h"

namespace luminal {

class CudaKernelCost final : public egraph::KernelCost {
 public:
  double widen(double elements, const ScheduleParams& schedule) const override;
};

}  // namespace luminal
