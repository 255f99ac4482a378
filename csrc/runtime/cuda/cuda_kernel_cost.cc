// CudaKernelCost's price of a 16-bit widening (runtime/cuda/cuda_kernel_cost.h). Not the CUDA
// schedule table (codegen/cuda/schedule.cc) nor the model itself (egraph/cost.h).
#include "runtime/cuda/cuda_kernel_cost.h"

#include <optional>

namespace luminal {

namespace {
// Widening a 16-bit element in a reader's registers: a shift (bf16) or a conversion (f16).
constexpr double kWidenInRegisters = 0.25;
}  // namespace

// Stored (no inline 1: the generic price, a pass writing an f32 copy that every reader then
// loads at 4 bytes an element) or widened in each reader's registers (inline 1,
// kernel/buffer_plan): no pass of its own and 2 bytes an element read, so a matmul or GEMV
// reads a bf16 weight's own storage.
double CudaKernelCost::widen(double elements, const ScheduleParams& schedule) const {
  if (schedule_param(schedule, kInlineParam) != std::optional<int64_t>(1)) return -1;
  return elements * kWidenInRegisters;
}

}  // namespace luminal
