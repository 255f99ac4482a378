// CpuSchedule: the table of the C renderer's schedule parameters, and what reads it: the
// layering, the check (CpuRuntime's messages) and the matmul estimate of a tile.
#include "codegen/c/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "codegen/schedule_table.h"
#include "core/errors.h"
#include "kernel/epilogue.h"
#include "kernel/prologue.h"
#include "kernel/row_kernel.h"

namespace luminal {

namespace {
struct Param {
  const char* name;
  int64_t CpuSchedule::*field;  // null: the lowering's own parameter, read from the node
  int64_t fallback;             // the C renderer's default, for a field at 0
};
constexpr Param kParams[] = {
    {"tile_m", &CpuSchedule::tile_m, 6},
    {"tile_n", &CpuSchedule::tile_n, 16},
    {"tile_k", &CpuSchedule::tile_k, 256},
    {"vector_width", &CpuSchedule::vector_width, 8},
    {"threads", &CpuSchedule::threads, 0},  // 0 stays 0: the default is by the work
    {"gemv_rows", &CpuSchedule::gemv_rows, 0},
    {"pack_b", &CpuSchedule::pack_b, 0},
    {kInlineParam, nullptr, 0},
    {kEpilogueParam, nullptr, 0},
    {kPrologueParam, nullptr, 0},
    {kRowParam, nullptr, 0},
    {kAttentionParam, nullptr, 0},
    {kQuantDotParam, nullptr, 0},
};
constexpr int64_t kMaxValue = 4096;  // of any parameter
constexpr int64_t kMaxTileM = 16;
constexpr int64_t kMaxTileN = 64;
constexpr int64_t kMaxGemvRows = 16;

const Param* find_param(const std::string& name) {
  for (const Param& p : kParams) {
    if (name == p.name) return &p;
  }
  return nullptr;
}
}  // namespace

CpuSchedule CpuSchedule::with(const ScheduleParams& params) const {
  CpuSchedule s = *this;
  for (const auto& [name, value] : params) {
    const Param* p = find_param(name);
    if (p && p->field) s.*p->field = value;
  }
  return s;
}

int64_t cpu_native_vector_width() {
  static const int64_t width = [] {
    // LUMINAL_CPU_VECTOR_WIDTH=8 keeps 8-wide blocks on an AVX-512 machine (one whose 512-bit
    // instructions lower its clock), and lets a test run the AVX2 set here.
    const char* forced = std::getenv("LUMINAL_CPU_VECTOR_WIDTH");
    if (forced && (std::string(forced) == "8" || std::string(forced) == "16")) {
      return static_cast<int64_t>(std::stoi(forced));
    }
#if defined(__x86_64__) || defined(__i386__)
    return static_cast<int64_t>(__builtin_cpu_supports("avx512f") ? 16 : 8);
#else
    return static_cast<int64_t>(8);
#endif
  }();
  return width;
}

CpuSchedule CpuSchedule::or_defaults() const {
  CpuSchedule s = *this;
  for (const Param& p : kParams) {
    if (p.field && s.*p.field <= 0) s.*p.field = p.fallback;
  }
  // With 512-bit vectors the default block is 6 x 64 of 16-wide vectors (32 registers hold
  // its 24 accumulators), unless the schedule's own tile_n or vector_width asks for 8-wide.
  if (cpu_native_vector_width() == 16) {
    if (vector_width <= 0 && (tile_n <= 0 || tile_n % 16 == 0)) s.vector_width = 16;
    if (tile_n <= 0 && s.vector_width == 16) s.tile_n = 64;
  }
  return s;
}

CpuSchedule cpu_schedule(const Kernel& kernel) {
  return CpuSchedule{}.with(kernel.schedule).or_defaults();
}

void check_cpu_schedule(const ScheduleParams& params, const std::string& where) {
  const std::string prefix = "cpu runtime: ";
  for (const auto& [name, value] : params) {
    const Param* known = find_param(name);
    if (!known) {
      throw CompileError(prefix + "unknown schedule parameter '" + name + "' in " + where +
                         " (known: " + schedule_names(kParams) + ")");
    }
    int64_t most = name == kRowParam ? 2 : 1;  // row 2: a softmax's max and sum online
    if (!known->field && (value < 0 || value > most)) {
      throw CompileError(prefix + "schedule parameter " + name + " must be 0 to " +
                         std::to_string(most) + " in " + where);
    }
    if (value < 0 || value > kMaxValue) {
      throw CompileError(prefix + "schedule parameter " + name + " = " + std::to_string(value) +
                         " is out of range in " + where);
    }
  }
  CpuSchedule s = CpuSchedule{}.with(params);
  int64_t width = s.or_defaults().vector_width;
  if (s.tile_m > kMaxTileM) {
    throw CompileError(prefix + "tile_m must be at most " + std::to_string(kMaxTileM) + " in " +
                       where);
  }
  if (s.gemv_rows > kMaxGemvRows) {
    throw CompileError(prefix + "gemv_rows must be at most " + std::to_string(kMaxGemvRows) +
                       " in " + where);
  }
  if (s.pack_b > 1) throw CompileError(prefix + "pack_b must be 0 or 1 in " + where);
  if (width != 4 && width != 8 && width != 16) {
    throw CompileError(prefix + "vector_width must be 4, 8 or 16 in " + where);
  }
  if (s.tile_n % width != 0 || s.tile_n > kMaxTileN) {
    throw CompileError(prefix + "tile_n must be a multiple of the vector width, at most " +
                       std::to_string(kMaxTileN) + ", in " + where);
  }
}

namespace {
// Memory terms of the matmul prices, in cycles per element of B (the weights of a Linear).
constexpr double kPackCycles = 2.0;    // GEMM: B read (strided where b_n != 1) into panels
constexpr double kStreamCycles = 0.5;  // GEMV: B read once, in order (4 bytes of f32)
constexpr double kWidenCycles = 0.25;  // a 16-bit element widened in a reader's registers
}  // namespace

// In cycles, on a machine whose vectors hold `native` floats (cpu_native_vector_width): an
// instruction works on min(vector_width, native) lanes, and a 16-wide vector on an 8-wide
// machine takes two registers. The GEMV path (c/gemv.cc), taken when M <= gemv_rows, streams B
// once: per element of B the larger of its read and its M FMAs over two FMA ports. The
// register-blocked GEMM (c/matmul.cc) on a machine with two FMA and two load ports and 4-cycle
// FMA latency, with 32 vector registers (AVX-512) or 16: per k step a tile_m x tile_n block
// issues tile_m * tile_n / lanes FMAs and tile_n / lanes + tile_m loads; it takes
// max(FMAs / 2, loads / 2, 4) cycles (two ports each; each accumulator waits out the FMA
// latency), half again when the block needs more registers than there are. Edge blocks cost a
// whole block. Packing B costs its elements once more; B packed once by the runtime (pack_b) is
// only streamed, on top of the FMAs (no overlap assumed: the price is not told whether B is a
// parameter, and where it is not the kernel packs after all). An unscheduled matmul has the
// default tile. So a decode-shaped matmul (M = 1) prices the GEMV at about a fifth of the GEMM,
// whose cost there is its packing, and below the GEMM of packed panels; timing decides between
// those two. An 8-wide block on an AVX-512 machine prices at twice the 16-wide one.
double CpuKernelCost::matmul(const egraph::MatmulSize& size,
                             const ScheduleParams& schedule) const {
  CpuSchedule tile = CpuSchedule{}.with(schedule).or_defaults();
  const double native = static_cast<double>(cpu_native_vector_width());
  const double w = static_cast<double>(tile.vector_width);
  const double lanes = std::min(w, native);
  const double registers = native >= 16 ? 32 : 16;
  double b_elements = size.batch * size.k * size.n;
  // Integer dot products of quantized activations (c/quant_int8.cc): B's blocks streamed per
  // row of x, four int8 products an int32 lane where the f32 GEMV has one.
  if (schedule_param(schedule, kQuantDotParam) == std::optional<int64_t>(1)) {
    return b_elements * std::max(kStreamCycles / 2, size.m / (8 * lanes));
  }
  if (size.m <= static_cast<double>(tile.gemv_rows)) {
    return b_elements * std::max(kStreamCycles, size.m / (2 * lanes));
  }
  double tm = static_cast<double>(tile.tile_m);
  double tn = static_cast<double>(tile.tile_n);
  double vecs = std::max(1.0, tn / lanes);  // instructions per row of the block
  double fmas = tm * vecs;
  double cycles = std::max({fmas / 2, (vecs + tm) / 2, 4.0});
  if (fmas + vecs + 1 > registers) cycles *= 1.5;
  double blocks = size.batch * std::ceil(size.m / tm) * std::ceil(size.n / tn);
  double b_cycles = tile.pack_b == 1 ? kStreamCycles : kPackCycles;
  return blocks * size.k * cycles + b_elements * b_cycles;
}

// Stored (no inline 1: the generic price, a pass writing an f32 copy that every reader then
// loads at 4 bytes an element) or widened in each reader's registers (inline 1, which
// kernel/buffer_plan honours even through a broadcast): no pass of its own, a shift or an
// exponent rebase per element, and its readers read 2 bytes an element instead of 4. So the
// model's pick widens in the kernel, which where the reader is a matmul means the GEMV
// streams, or the GEMM packs, the 16-bit storage.
double CpuKernelCost::widen(double elements, const ScheduleParams& schedule) const {
  if (schedule_param(schedule, kInlineParam) != std::optional<int64_t>(1)) return -1;
  return elements * kWidenCycles;
}

}  // namespace luminal
