// CudaSchedule, the CUDA renderer's typed view of a ScheduleParams (as CpuSchedule is the C
// renderer's, codegen/c_schedule.h): reading its "cuda_*" params (a node's, from the runtime's
// rules, or a program-wide tuning choice), layering them, and checking them. What each choice
// renders lives in cuda.cc and cuda_matmul.cc.
#include <string>

#include "codegen/cuda.h"
#include "codegen/schedule_table.h"
#include "core/errors.h"

namespace luminal {

namespace {
struct Param {
  const char* name;
  int CudaSchedule::*field;
  int max;  // values 0 (automatic) to max; cuda_block is checked on its own
};
constexpr Param kParams[] = {
    {"cuda_block", &CudaSchedule::block, 1024},
    {"cuda_reduce", &CudaSchedule::reduce, 3},
    {"cuda_matmul", &CudaSchedule::matmul, 3},
    {"cuda_vector", &CudaSchedule::vector, 2},
};
}  // namespace

CudaSchedule CudaSchedule::with(const ScheduleParams& params) const {
  CudaSchedule s = *this;
  for (const auto& [name, value] : params) {
    for (const Param& p : kParams) {
      if (name == p.name) s.*p.field = static_cast<int>(value);
    }
  }
  return s;
}

CudaSchedule CudaSchedule::under(const CudaSchedule& top) const {
  CudaSchedule s = *this;
  for (const Param& p : kParams) {
    if (top.*p.field != 0) s.*p.field = top.*p.field;
  }
  return s;
}

void check_cuda_schedule(const ScheduleParams& params, const std::string& where) {
  for (const auto& [name, value] : params) {
    const Param* known = nullptr;
    for (const Param& p : kParams) {
      if (name == p.name) known = &p;
    }
    if (!known) {
      throw CompileError("CUDA: unknown schedule parameter '" + name + "' in " + where +
                         " (known: " + schedule_names(kParams) + ")");
    }
    bool block_ok = value == 0 || (value >= 32 && value <= 1024 && value % 32 == 0);
    bool ok = known->field == &CudaSchedule::block ? block_ok : value >= 0 && value <= known->max;
    if (!ok) {
      std::string range = known->field == &CudaSchedule::block
                              ? "a multiple of 32 in [32, 1024] (0: automatic)"
                              : "0 (automatic) to " + std::to_string(known->max);
      throw CompileError("CUDA: schedule parameter " + name + " = " + std::to_string(value) +
                         " in " + where + " is out of range: " + range);
    }
  }
}

}  // namespace luminal
