// CpuSchedule: the C renderer's schedule parameters (so CpuRuntime's) as one table: their
// names, ranges and defaults, the check of a raw schedule and the layering of a kernel's.
// What a tile renders lives in c/matmul.cc, what it costs in runtime/cpu/cpu_kernel_cost.h.
#pragma once

#include <cstdint>
#include <string>

#include "kernel/kernel.h"

namespace luminal {

// The C renderer's typed view of a ScheduleParams (ir/graph.h), as CudaSchedule is the CUDA
// renderer's: parameters "tile_m", "tile_n", "tile_k", "vector_width", "threads" and
// "gemv_rows", "pack_b", "bf16_dot", "int8_gemm", "quant_rows" as fields, 0 for the default. The lowering's own kInlineParam (ir/graph.h)
// and kEpilogueParam (kernel/epilogue.h) are CPU parameters too, checked here, but no fields:
// the lowering reads them from the node.
struct CpuSchedule {
  int64_t tile_m = 0;        // matmul: rows of the register block (default 6, at most 16)
  int64_t tile_n = 0;        // matmul: columns of the register block, a multiple of
                             // vector_width (default 16, or 64 with 16-wide vectors; at
                             // most 64)
  int64_t tile_k = 0;        // matmul: depth of a packed k block, cache blocking (default 256)
  int64_t vector_width = 0;  // floats per vector of matmul blocks and reduction lanes: 4, 8
                             // or 16 (the default: the machine's, cpu_native_vector_width)
  int64_t threads = 0;       // the kernel's OpenMP team: 0 (the default) every thread once its
                             // work reaches kCpuParallelWork, else one; 1 serial (no parallel
                             // region); n > 1 at most n threads whatever the work
  int64_t gemv_rows = 0;     // matmul: the largest M (checked at run time) that takes the GEMV
                             // path, one pass over B (c/gemv.cc); 0 (the default): never
  int64_t pack_b = 0;        // matmul: 1 reads a parameter B from panels CpuRuntime lays out
                             // once, when its data is set (kernel/weight_layout.h), not packed
                             // on every call; 0 (the default): the kernel packs B itself
  int64_t bf16_dot = 0;      // matmul of two bf16 values (each widened to f32, or a half
                             // product): 1 multiplies bf16 pairs in hardware (AVX512-BF16
                             // vdpbf16ps, c/bf16_dot.cc), needing 16-wide vectors and a
                             // machine that has it (cpu_has_bf16_dot); 2 (kAmxBf16) on AMX
                             // tiles, 32 x 32 blocks (c/amx.cc; cpu_has_amx; no tile_m or
                             // tile_n of its own); 0 (the default): widened
  int64_t int8_gemm = 0;     // matmul of quantized activations (quant_dot 1): 1 multiplies
                             // the rows past the int8 GEMV's (a prefill) in int8 too, on
                             // panels of the weight's integers (AVX512-VNNI vpdpbusd,
                             // c/quant_int8_gemm.cc), needing 16-wide vectors and a machine
                             // that has it (cpu_has_int8_dot); 2 (kAmxInt8) on AMX tiles
                             // (tdpbusd, c/quant_int8_amx.cc; cpu_has_amx_int8); 0 (the
                             // default): those rows' round trip dequantized into the f32 GEMM
  int64_t quant_rows = 0;    // matmul of quantized activations with int8_gemm 1 or 2 and a
                             // Q4_0/Q8_0/Q4_K parameter weight: 4 lays the weight out once, when
                             // its data is set, in groups of 4 rows (kernel/quant_row_groups.h)
                             // that its GEMV multiplies 4 rows a 512-bit vpdpbusd and its GEMM
                             // packs from; 0 (the default): the weight read as stored

  // This schedule with the entries of `params` in place of its fields, in order (a later entry
  // of a name wins). Names that are not fields are left alone; check_cpu_schedule refuses
  // unknown ones.
  CpuSchedule with(const ScheduleParams& params) const;
  // This schedule with every field at 0 (or below) set to the C renderer's default on a
  // machine whose vectors hold `native` floats (8 or 16: CpuOptions::vector_width).
  CpuSchedule or_defaults(int64_t native) const;
};

// Floats per vector register of the machine this process runs on: 16 with AVX-512, else 8
// (AVX2; other targets take 8-wide vectors as pairs of registers). What a CpuRuntime builds
// for unless its options say otherwise (CpuOptions::vector_width: Python's vector_width= or
// LUMINAL_CPU_VECTOR_WIDTH); the default matmul block and the tilings CpuRuntime offers
// (cpu_rewrite_rules) follow the width it builds for.
int64_t cpu_native_vector_width();

// Whether this machine multiplies bf16 pairs in hardware (AVX512-BF16): where the bf16_dot
// schedule may be offered and rendered.
bool cpu_has_bf16_dot();
// bf16_dot's and int8_gemm's values for AMX tiles.
inline constexpr int64_t kAmxBf16 = 2;
inline constexpr int64_t kAmxInt8 = 2;
// Whether this machine has AMX tiles for bf16 (AMX-TILE and AMX-BF16) and Linux grants this
// process their state (asked once, here, through arch_prctl): where bf16_dot 2 may be offered
// and rendered.
bool cpu_has_amx();
// The same for int8 (AMX-TILE and AMX-INT8): where int8_gemm 2 may be offered and rendered.
bool cpu_has_amx_int8();
// Whether this machine multiplies int8 in hardware at 512 bits (AVX512-VNNI): where the
// int8_gemm schedule may be offered and rendered.
bool cpu_has_int8_dot();

// Loop iterations (output elements times reduction steps) from which a kernel under the
// default `threads` runs in parallel: below it a parallel region costs more than it saves.
constexpr int64_t kCpuParallelWork = 32768;

// What the C renderer builds `kernel` with on a machine of `native`-float vectors: its
// schedule (the program-wide choice's params, then its root node's; kernel/kernel.h) over the
// defaults. No field is 0 but threads, gemv_rows, pack_b, bf16_dot, int8_gemm and
// quant_rows, whose defaults are 0.
CpuSchedule cpu_schedule(const Kernel& kernel, int64_t native);

// Throws CompileError, naming `where` (a node, a tuning choice), when `params` holds a name
// the CPU does not know or a value out of its range on a machine of `native`-float vectors,
// or one asking for dot-product instructions (bf16_dot, int8_gemm) that it lacks or, without
// `dot_products` (CpuOptions::dot_products), may not use.
void check_cpu_schedule(const ScheduleParams& params, const std::string& where,
                        int64_t native, bool dot_products = true);

}  // namespace luminal
