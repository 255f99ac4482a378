// CudaSchedule, the CUDA renderer's typed view of a ScheduleParams (as CpuSchedule is the C
// renderer's, codegen/c/schedule.h): reading its "cuda_*" params (a node's, from the runtime's
// rules, or a program-wide tuning choice), layering them, and checking them. What each choice
// renders lives in cuda/renderer.cc, cuda/matmul.cc and cuda/gemv.cc; what it costs in
// runtime/cuda/cuda_kernel_cost.h.
#include <optional>
#include <string>

#include "codegen/cuda/renderer.h"
#include "codegen/schedule_table.h"
#include "core/errors.h"
#include "kernel/epilogue.h"
#include "kernel/row_kernel.h"

namespace luminal {

namespace {
// How a parameter's values are checked.
enum class Range {
  kUpTo,       // 0 (automatic) to max
  kBlock,      // 0, or a multiple of 32 in [32, 1024]
  kPowerOfTwo  // 0, or a power of two up to max
};
struct Param {
  const char* name;
  int CudaSchedule::*field;  // null: the lowering's own parameter, read from the node
  Range range;
  int max;
};
constexpr Param kParams[] = {
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

const Param* find_param(const std::string& name) {
  for (const Param& p : kParams) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

bool in_range(const Param& p, int64_t value) {
  if (value == 0) return true;
  if (value < 0 || value > p.max) return false;
  switch (p.range) {
    case Range::kUpTo:
      return true;
    case Range::kBlock:
      return value >= 32 && value % 32 == 0;
    case Range::kPowerOfTwo:
      return (value & (value - 1)) == 0;
  }
  return false;
}

std::string range_text(const Param& p) {
  const std::string max = std::to_string(p.max);
  switch (p.range) {
    case Range::kUpTo:
      return "0 (automatic) to " + max;
    case Range::kBlock:
      return "a multiple of 32 in [32, " + max + "] (0: automatic)";
    case Range::kPowerOfTwo:
      return "a power of two up to " + max + " (0: automatic)";
  }
  return "";
}
}  // namespace

CudaSchedule CudaSchedule::with(const ScheduleParams& params) const {
  CudaSchedule s = *this;
  for (const auto& [name, value] : params) {
    const Param* p = find_param(name);
    if (p && p->field) s.*p->field = static_cast<int>(value);
  }
  return s;
}

CudaSchedule CudaSchedule::under(const CudaSchedule& top) const {
  CudaSchedule s = *this;
  for (const Param& p : kParams) {
    if (p.field && top.*p.field != 0) s.*p.field = top.*p.field;
  }
  return s;
}

void check_cuda_schedule(const ScheduleParams& params, const std::string& where) {
  for (const auto& [name, value] : params) {
    const Param* known = find_param(name);
    if (!known) {
      throw CompileError("CUDA: unknown schedule parameter '" + name + "' in " + where +
                         " (known: " + schedule_names(kParams) + ")");
    }
    if (!in_range(*known, value)) {
      throw CompileError("CUDA: schedule parameter " + name + " = " + std::to_string(value) +
                         " in " + where + " is out of range: " + range_text(*known));
    }
  }
}

}  // namespace luminal
