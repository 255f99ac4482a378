// CudaSchedule, the CUDA renderer's typed view of a ScheduleParams (as CpuSchedule is the C
// renderer's, codegen/c/schedule.h): reading its "cuda_*" params (a node's, from the runtime's
// rules, or a program-wide tuning choice), layering them, and checking them. What each choice
// renders lives in cuda/renderer.cc, cuda/matmul.cc and cuda/gemv.cc; what it costs in
// runtime/cuda/cuda_kernel_cost.h.
#include <string>

#include "codegen/cuda/renderer.h"
#include "codegen/schedule_table.h"
#include "core/errors.h"
#include "kernel/epilogue.h"
#include "kernel/row_kernel.h"

namespace luminal {

namespace {
using Range = ScheduleRange;
constexpr ScheduleParam<CudaSchedule> kParams[] = {
    {"cuda_block", &CudaSchedule::block, Range::kBlock, 1024},
    {"cuda_reduce", &CudaSchedule::reduce, Range::kUpTo, 3},
    {"cuda_matmul", &CudaSchedule::matmul, Range::kUpTo, 4},
    {"cuda_vector", &CudaSchedule::vector, Range::kUpTo, 2},
    {"cuda_gemv_rows", &CudaSchedule::gemv_rows, Range::kUpTo, 8},
    {"cuda_gemv_cols", &CudaSchedule::gemv_cols, Range::kPowerOfTwo, 4},
    {"cuda_gemv_split", &CudaSchedule::gemv_split, Range::kPowerOfTwo, 8},
    {kInlineParam, nullptr, Range::kUpTo, 1},
    {kEpilogueParam, nullptr, Range::kUpTo, 1},
    {kRowParam, nullptr, Range::kUpTo, 2},
    {kAttentionParam, nullptr, Range::kUpTo, 1},
};
}  // namespace

CudaSchedule CudaSchedule::with(const ScheduleParams& params) const {
  return schedule_with(*this, kParams, params);
}

CudaSchedule CudaSchedule::under(const CudaSchedule& top) const {
  return schedule_under(*this, kParams, top);
}

void check_cuda_schedule(const ScheduleParams& params, const std::string& where) {
  check_schedule_params(kParams, params, where, "CUDA");
}

}  // namespace luminal
