// MetalSchedule, the Metal renderer's typed view of a ScheduleParams (as CudaSchedule is the
// CUDA renderer's): reading its "metal_*" params (a node's, from the runtime's rules, or a
// program-wide tuning choice), layering them, checking them, and the CUDA mappings' schedule
// they select (metal/renderer.h: MSL kernels take the CUDA renderer's mappings).
#include <string>

#include "codegen/metal/renderer.h"
#include "codegen/schedule_table.h"
#include "kernel/epilogue.h"
#include "kernel/row_kernel.h"

namespace luminal {

namespace {
using Range = ScheduleRange;
constexpr ScheduleParam<MetalSchedule> kParams[] = {
    {"metal_threads", &MetalSchedule::threads, Range::kBlock, 1024},
    {"metal_reduce", &MetalSchedule::reduce, Range::kUpTo, 3},
    {"metal_matmul", &MetalSchedule::matmul, Range::kUpTo, 4},
    {"metal_vector", &MetalSchedule::vector, Range::kUpTo, 2},
    {"metal_gemv_cols", &MetalSchedule::gemv_cols, Range::kPowerOfTwo, 4},
    {kInlineParam, nullptr, Range::kUpTo, 1},
    {kEpilogueParam, nullptr, Range::kUpTo, 1},
    {kRowParam, nullptr, Range::kUpTo, 2},
    {kAttentionParam, nullptr, Range::kUpTo, 1},
};
}  // namespace

MetalSchedule MetalSchedule::with(const ScheduleParams& params) const {
  return schedule_with(*this, kParams, params);
}

MetalSchedule MetalSchedule::under(const MetalSchedule& top) const {
  return schedule_under(*this, kParams, top);
}

void check_metal_schedule(const ScheduleParams& params, const std::string& where) {
  check_schedule_params(kParams, params, where, "Metal");
}

CudaSchedule MetalRenderer::schedule_of(const Kernel& kernel) const {
  const MetalSchedule m = metal_.with(kernel.schedule).under(metal_fixed_);
  CudaSchedule s;
  s.block = m.threads;
  s.reduce = m.reduce;
  s.matmul = m.matmul;  // 3: the mma mapping, rendered on simdgroup matrices
  s.vector = m.vector;
  s.gemv_cols = m.gemv_cols;
  return s;
}

}  // namespace luminal
