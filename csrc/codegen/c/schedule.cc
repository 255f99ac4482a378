// CpuSchedule: the table of the C renderer's schedule parameters, and what reads it: the
// layering and the check (CpuRuntime's messages). Not the prices of a tile
// (runtime/cpu/cpu_kernel_cost.h).
#include "codegen/c/schedule.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "codegen/schedule_table.h"
#include "core/errors.h"
#include "kernel/epilogue.h"
#include "kernel/prologue.h"
#include "kernel/quant_row_groups.h"
#include "kernel/row_kernel.h"
#include "kernel/winograd.h"

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
    {"bf16_dot", &CpuSchedule::bf16_dot, 0},
    {"int8_gemm", &CpuSchedule::int8_gemm, 0},
    {"quant_rows", &CpuSchedule::quant_rows, 0},
    {kInlineParam, nullptr, 0},
    {kEpilogueParam, nullptr, 0},
    {kPrologueParam, nullptr, 0},
    {kWindowParam, nullptr, 0},
    {kWinogradParam, nullptr, 0},
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
#if defined(__x86_64__) || defined(__i386__)
  return static_cast<int64_t>(__builtin_cpu_supports("avx512f") ? 16 : 8);
#else
  return static_cast<int64_t>(8);
#endif
}

bool cpu_has_bf16_dot() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

namespace {
// CPUID.(7,0):EDX's AMX bits on this machine (0 elsewhere), and only where Linux grants this
// process the tile data (asked once).
unsigned amx_features() {
#if defined(__x86_64__) && defined(__linux__)
  static const unsigned features = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0u;
    if (!(edx & (1u << 24))) return 0u;  // AMX-TILE
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) != 0) return 0u;
    return edx;
  }();
  return features;
#else
  return 0;
#endif
}
}  // namespace

bool cpu_has_amx() { return (amx_features() & (1u << 22)) != 0; }  // AMX-BF16

bool cpu_has_amx_int8() { return (amx_features() & (1u << 25)) != 0; }

bool cpu_has_int8_dot() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

CpuSchedule CpuSchedule::or_defaults(int64_t native) const {
  CpuSchedule s = *this;
  for (const Param& p : kParams) {
    if (p.field && s.*p.field <= 0) s.*p.field = p.fallback;
  }
  // With 512-bit vectors the default block is 6 x 64 of 16-wide vectors (32 registers hold
  // its 24 accumulators), unless the schedule's own tile_n or vector_width asks for 8-wide.
  if (native == 16) {
    if (vector_width <= 0 && (tile_n <= 0 || tile_n % 16 == 0)) s.vector_width = 16;
    if (tile_n <= 0 && s.vector_width == 16) s.tile_n = 64;
  }
  return s;
}

CpuSchedule cpu_schedule(const Kernel& kernel, int64_t native) {
  return CpuSchedule{}.with(kernel.schedule).or_defaults(native);
}

void check_cpu_schedule(const ScheduleParams& params, const std::string& where,
                        int64_t native, bool dot_products) {
  const std::string prefix = "cpu runtime: ";
  for (const auto& [name, value] : params) {
    const Param* known = find_param(name);
    if (!known) {
      throw CompileError(prefix + "unknown schedule parameter '" + name + "' in " + where +
                         " (known: " + schedule_names(kParams) + ")");
    }
    if (name == kWinogradParam) {  // F(m x m, 3x3) of m 2 or 4 (kernel/winograd.h), or none
      if (value != 0 && !winograd_tile({{name, value}})) {
        throw CompileError(prefix + "schedule parameter winograd must be 0, 2 or 4 in " + where);
      }
      continue;
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
  int64_t width = s.or_defaults(native).vector_width;
  if (s.tile_m > kMaxTileM) {
    throw CompileError(prefix + "tile_m must be at most " + std::to_string(kMaxTileM) + " in " +
                       where);
  }
  if (s.gemv_rows > kMaxGemvRows) {
    throw CompileError(prefix + "gemv_rows must be at most " + std::to_string(kMaxGemvRows) +
                       " in " + where);
  }
  if (s.pack_b > 1) throw CompileError(prefix + "pack_b must be 0 or 1 in " + where);
  if (s.bf16_dot > kAmxBf16) {
    throw CompileError(prefix + "bf16_dot must be 0, 1 or 2 in " + where);
  }
  if (s.bf16_dot == 1 && (width != 16 || !cpu_has_bf16_dot() || !dot_products)) {
    throw CompileError(prefix + "bf16_dot 1 needs 16-wide vectors on a machine with " +
                       "AVX512-BF16, its dot products allowed (dot_products), in " + where);
  }
  if (s.bf16_dot == kAmxBf16 && (width != 16 || !cpu_has_amx() || !dot_products)) {
    throw CompileError(prefix + "bf16_dot 2 needs 16-wide vectors on a machine with AMX " +
                       "tiles for bf16, its dot products allowed (dot_products), in " + where);
  }
  if (s.bf16_dot == kAmxBf16 && (s.tile_m != 0 || s.tile_n != 0)) {
    throw CompileError(prefix + "bf16_dot 2 takes AMX's 32 x 32 block: no tile_m or tile_n, "
                       "in " + where);
  }
  if (s.int8_gemm > kAmxInt8) {
    throw CompileError(prefix + "int8_gemm must be 0, 1 or 2 in " + where);
  }
  if (s.int8_gemm == kAmxInt8 && (width != 16 || !cpu_has_amx_int8() || !dot_products)) {
    throw CompileError(prefix + "int8_gemm 2 needs 16-wide vectors on a machine with AMX " +
                       "tiles for int8, its dot products allowed (dot_products), in " + where);
  }
  if (s.int8_gemm == 1 && (width != 16 || !cpu_has_int8_dot() || !dot_products)) {
    throw CompileError(prefix + "int8_gemm 1 needs 16-wide vectors on a machine with " +
                       "AVX512-VNNI, its dot products allowed (dot_products), in " + where);
  }
  if (s.quant_rows != 0 && (s.quant_rows != kGroupRows || s.int8_gemm < 1)) {
    throw CompileError(prefix + "quant_rows must be 0, or " + std::to_string(kGroupRows) +
                       " with int8_gemm 1 or 2, in " + where);
  }
  if (width != 4 && width != 8 && width != 16) {
    throw CompileError(prefix + "vector_width must be 4, 8 or 16 in " + where);
  }
  if (s.tile_n % width != 0 || s.tile_n > kMaxTileN) {
    throw CompileError(prefix + "tile_n must be a multiple of the vector width, at most " +
                       std::to_string(kMaxTileN) + ", in " + where);
  }
}

}  // namespace luminal
