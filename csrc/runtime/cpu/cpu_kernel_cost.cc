// CpuKernelCost: CpuRuntime's prices for the search's cost model, in cycles: the register-
// blocking estimate of a matmul under its tile and the widening of a 16-bit input. Not the
// schedule table (codegen/c/schedule.h) nor the model itself (egraph/cost.h).
#include "runtime/cpu/cpu_kernel_cost.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "codegen/c/quant.h"
#include "codegen/c/schedule.h"
#include "ir/graph.h"
#include "kernel/winograd.h"

namespace luminal {

namespace {
// Memory terms of the matmul prices, in cycles per element of B (the weights of a Linear).
constexpr double kPackCycles = 2.0;    // GEMM: B read (strided where b_n != 1) into panels
constexpr double kStreamCycles = 0.5;  // GEMV: B read once, in order (4 bytes of f32)
constexpr double kWidenCycles = 0.25;  // a 16-bit element widened in a reader's registers
constexpr double kNarrowCycles = 1.0;  // an f32 element rounded and stored in 16 bits
constexpr double kInt8PackCycles = 1.0;  // int8 GEMM: a block's integers into its panels
constexpr double kAmxStepCycles = 96.0;   // AMX: a 32 x 32 block's step of 32 k
constexpr double kAmxBlockCycles = 64.0;  // AMX: its C into the tiles and out, a k block
// Winograd's F(2x2, 3x3) (c/winograd.cc), its transforms: a filter's channel (9 loads into
// vector lanes, G g G^T; F(4x4)'s 36 values a pair at 36 / 16 of it), a position's channel (the
// padded channels-last copy, B^T d B), a position's out channel (A^T p A, a scattered store).
// From benchmarks/conv.py's layers (AMD EPYC, AVX-512): the filters' transform 2 ms of a
// 512 -> 512 layer at one 7x7 image.
constexpr double kWinogradFilterCycles = 40.0;
constexpr double kWinogradInputCycles = 3.0;
constexpr double kWinogradOutputCycles = 1.6;
}  // namespace

// In cycles, on a machine whose vectors hold `native` floats (CpuOptions::vector_width): an
// instruction works on min(vector_width, native) lanes, and a 16-wide vector on an 8-wide
// machine takes two registers. The GEMV path (c/gemv.cc), taken when M <= gemv_rows, streams B
// once: per element of B the larger of its read and its M FMAs over two FMA ports. The
// register-blocked GEMM (c/matmul.cc) on a machine with two FMA and two load ports and 4-cycle
// FMA latency, with 32 vector registers (AVX-512) or 16: per k step a tile_m x tile_n block
// issues tile_m * tile_n / lanes FMAs and tile_n / lanes + tile_m loads; it takes
// max(FMAs / 2, loads / 2, 4) cycles (two ports each; each accumulator waits out the FMA
// latency), half again when the block needs more registers than there are. Edge blocks cost a
// whole block. Packing B costs its elements once more; B packed once by the runtime (pack_b, a
// parameter B: where B is not one the kernel packs after all) is only streamed, on top of the
// FMAs (no overlap assumed). An unscheduled matmul has the
// default tile. So a decode-shaped matmul (M = 1) prices the GEMV at about a fifth of the GEMM,
// whose cost there is its packing, and below the GEMM of packed panels; timing decides between
// those two. An 8-wide block on an AVX-512 machine prices at twice the 16-wide one; the bf16
// dot products (bf16_dot 1) at half the k steps of the block they share; AMX tiles (bf16_dot
// 2) by their own block.
double CpuKernelCost::matmul(const egraph::MatmulSize& size,
                             const ScheduleParams& schedule) const {
  CpuSchedule tile = CpuSchedule{}.with(schedule).or_defaults(native_);
  const double native = static_cast<double>(native_);
  const double w = static_cast<double>(tile.vector_width);
  const double lanes = std::min(w, native);
  const double registers = native >= 16 ? 32 : 16;
  double b_elements = size.batch * size.k * size.n;
  // Integer dot products of quantized activations (c/quant_int8.cc): up to its rows, B's
  // blocks streamed per row of x, four int8 products an int32 lane where the f32 GEMV has one.
  // Past them the f32 GEMM below on x's round trip, or (int8_gemm 1, c/quant_int8_gemm.cc)
  // B's blocks unpacked once into integer panels and 64 products a vpdpbusd, with three f32
  // instructions for every eight of them (a sub-block's scales). Up to the GEMV's rows the
  // two run the same code, and one program serves a decode and a prompt: a search timed at
  // the decode cannot tell them apart, so int8_gemm is priced a shade below there. A weight in
  // row groups (quant_rows 4, c/quant_int8_groups.cc) meets x four rows a 512-bit instruction
  // where the GEMV on GGUF's blocks takes one a 256-bit one: half the price there.
  if (schedule_param(schedule, kQuantDotParam) == std::optional<int64_t>(1)) {
    const double rows = static_cast<double>(int8_gemv_rows(tile.gemv_rows, tile.quant_rows > 0));
    if (size.m <= rows) {
      const double gemv = b_elements * std::max(kStreamCycles / 2, size.m / (8 * lanes));
      if (tile.quant_rows > 0) return gemv * 0.5;
      return tile.int8_gemm >= 1 ? gemv * 0.99 : gemv;
    }
    if (tile.int8_gemm == 1) return b_elements * (kInt8PackCycles + size.m * 11 / (64 * 8));
    // AMX tiles (int8_gemm 2, c/quant_int8_amx.cc) in blocks of 32 rows: the scaling of each
    // sub-block's sums, not the tdpbusd, bounds it; measured a tenth faster than int8_gemm 1
    // (Q4_0, 512 x 2048 x 8192, k blocks of 1024), priced so.
    if (tile.int8_gemm == kAmxInt8) {
      return b_elements * (kInt8PackCycles + std::ceil(size.m / 32) * 32 * 10 / (64 * 8));
    }
  }
  if (size.m <= static_cast<double>(tile.gemv_rows)) {
    return b_elements * std::max(kStreamCycles, size.m / (2 * lanes));
  }
  double b_cycles = tile.pack_b == 1 && size.b_parameter ? kStreamCycles : kPackCycles;
  // AMX tiles (bf16_dot 2, c/amx.cc): a 32 x 32 block takes four tdpbf16ps of 16 cycles a
  // step of 32 k, and its tile loads about half again; its C is loaded into the tiles and
  // stored again once a k block.
  if (tile.bf16_dot == kAmxBf16) {
    const double blocks = size.batch * std::ceil(size.m / 32) * std::ceil(size.n / 32);
    const double steps = std::ceil(size.k / 32) * kAmxStepCycles +
                         std::ceil(size.k / static_cast<double>(tile.tile_k)) * kAmxBlockCycles;
    return blocks * steps + b_elements * b_cycles;
  }
  double tm = static_cast<double>(tile.tile_m);
  double tn = static_cast<double>(tile.tile_n);
  double vecs = std::max(1.0, tn / lanes);  // instructions per row of the block
  double fmas = tm * vecs;
  double cycles = std::max({fmas / 2, (vecs + tm) / 2, 4.0});
  if (fmas + vecs + 1 > registers) cycles *= 1.5;
  // Winograd (winograd t, c/winograd.cc) where k is 9 per channel: (t + 2)^2 GEMMs of the
  // tiles (n / t^2 of the positions n) by the out channels (m) over the channels, the same
  // block, and its transforms, the filters' ((t + 2)^2 values a pair) on every call.
  const std::optional<int64_t> winograd = winograd_tile(schedule);
  if (winograd && std::fmod(size.k, 9.0) == 0) {
    const double t = static_cast<double>(*winograd), a2 = (t + 2) * (t + 2);
    // the channels padded to whole vectors, the out channels to whole blocks (tn)
    const double channels = std::ceil(size.k / 9 / lanes) * lanes;
    const double tiles = std::ceil(size.n / (t * t));
    const double gemms =
        a2 * size.batch * std::ceil(tiles / tm) * std::ceil(size.m / tn) * channels * cycles;
    return gemms + size.batch * (size.m * channels * kWinogradFilterCycles * a2 / 16 +
                                 size.n * channels * kWinogradInputCycles +
                                 size.n * size.m * kWinogradOutputCycles);
  }
  double blocks = size.batch * std::ceil(size.m / tm) * std::ceil(size.n / tn);
  // bf16 dot products (c/bf16_dot.cc): two k a step.
  double depth = tile.bf16_dot == 1 ? std::ceil(size.k / 2) : size.k;
  return blocks * depth * cycles + b_elements * b_cycles;
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

// Stored in its own dtype (inline 0: rules/cpu_bf16.rules' cpu-store-rounded): one pass
// reading 4 bytes an element and writing 2 (two thirds of the generic pass's price, which
// counts a Cast's work and its read), after which every reader reads 2 bytes an element
// and a matmul of bf16 dot products (bf16_dot 1) its words directly. The default (no inline 0,
// the generic price of a pass) recomputes the rounding in each reader, which stores it as f32
// or, for such a matmul, rounds its A on every load. So the model's pick stores a rounding that
// is widened again (a bf16 model's activations) and feeds its matmuls bf16 words; timing
// decides.
double CpuKernelCost::narrow(double elements, const ScheduleParams& schedule) const {
  if (schedule_param(schedule, kInlineParam) != std::optional<int64_t>(0)) return -1;
  return elements * kNarrowCycles;
}

}  // namespace luminal
