// MetalRenderer: Metal Shading Language for Apple GPUs from LLIR. MSL kernels take the CUDA
// renderer's thread mappings (codegen/cuda/renderer.h: a CUDA block is a threadgroup, a warp a
// simdgroup of 32 lanes): a thread per output, a simdgroup per output, 32 outputs per
// threadgroup whose simdgroups split the reduction, a matmul tiled in threadgroup memory, a
// GEMV with 16-byte loads, a simdgroup per row (row kernels) and per query row (attention),
// and, MSL's own, a matmul on simdgroup matrices (metal/matmul.cc),
// chosen per kernel by its MetalSchedule (the renderer's base schedule, overridden by the
// kernel's own params from runtime/rules/metal.rules, overridden by the user's fixed params).
// It overrides only what MSL spells apart: the kernel signature (buffers and thread positions
// as [[attribute]] parameters; the positions named threadIdx, blockIdx, blockDim and gridDim,
// so the mappings' text reads them as in CUDA), address spaces on pointer casts, threadgroup
// memory and barriers, simd_shuffle_xor for the shuffles, overloaded math (exp2, not exp2f),
// as_type bit casts, no doubles. Quantized weights are read by the
// C-like element readers (codegen/c/quant.h) through device pointers.
//
// The calling convention every kernel follows, which the runtime binds (runtime/metal):
//   [[buffer(0)]]          the stored buffer (device T*)
//   [[buffer(1 .. n)]]     the buffers it reads (const device T*), in Kernel::reads() order
//   [[buffer(n + 1)]]      constant int64_t* lm_dims: the program's dims' values, in order
//                          (setBytes; at least one element), read into d0, d1, ... first
//   [[buffer(n + 2)]]      device atomic_int* lm_index_fault: set to 1 when a Gather reads an
//                          index out of range (every kernel takes it; the runtime clears it
//                          before a run and raises ShapeError after one where it is set)
// A kernel binding more than Metal's 31 buffer arguments is a CompileError.
// Threadgroup memory is sized in the source (no setThreadgroupMemoryLength). Self-contained
// text but for <metal_stdlib>.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "codegen/cuda/renderer.h"
#include "codegen/gpu_launch.h"

namespace luminal {

// The Metal renderer's choices for a kernel (schedule params "metal_<field>"); 0 = automatic.
// codegen/metal/schedule.cc reads and checks them.
struct MetalSchedule {
  int threads = 0;  // threads per threadgroup of thread- and simdgroup-per-output kernels
                    // (default 256; a multiple of 32 up to 1024)
  int reduce = 0;   // 1: a thread per output, serial; 2: a simdgroup per output (simd_sum);
                    // 3: 32 outputs per threadgroup, its simdgroups splitting the reduction
  int matmul = 0;   // 1: as a reduction; 2: 64 x 64 tiles in threadgroup memory (f32 FMA);
                    // 3: 32 x 32 tiles on 8x8 simdgroup matrices (metal/matmul.cc); 4: the
                    // GEMV (where b is not contiguous along k, as the automatic choice)
  int vector = 0;   // 1: no 16-byte loads; 2: 16-byte loads where aligned (the default)
  int gemv_cols = 0;  // GEMV: columns of the output (rows of b) per simdgroup: 1, 2 (default), 4

  // This schedule with the "metal_*" entries of `params` in place of its fields.
  MetalSchedule with(const ScheduleParams& params) const;
  // This schedule with the fields `top` sets (non-zero) in place of its own.
  MetalSchedule under(const MetalSchedule& top) const;
};

// Throws CompileError, naming `where`, when `params` holds a name that is not in the table
// (metal_threads, metal_reduce, metal_matmul, metal_vector, metal_gemv_cols, and the
// lowering's own) or a
// value out of its range.
void check_metal_schedule(const ScheduleParams& params, const std::string& where);

// Buffer arguments of a Metal kernel function (its argument table's entries).
constexpr int kMaxBufferArguments = 31;

struct MetalSource {
  std::string source;                       // one MSL library, every kernel
  std::vector<gpu::KernelLaunch> launches;  // per kernel, in execution order; an identical
                                            // kernel's launch names the first one's function
};

class MetalRenderer : public CudaRenderer {
 public:
  explicit MetalRenderer(const MetalSchedule& schedule = {}, const MetalSchedule& fixed = {})
      : CudaRenderer(CudaSchedule{}, 0), metal_(schedule), metal_fixed_(fixed) {}
  // The kernel's Metal schedule, as the CUDA mappings read it.
  CudaSchedule schedule_of(const Kernel& kernel) const override;
  MetalSource render_program(const Program& program) const;

 protected:
  std::string prelude(const Program& program) const override;
  std::string type_prelude() const override;
  std::string bit_cast_helpers() const override;
  std::string weight_bytes() const override { return "const device uint8_t*"; }
  std::string helper_qualifiers() const override { return "static inline"; }
  std::string index_fault_declaration() const override { return ""; }  // a kernel parameter
  std::string index_fault(const std::string& zero) const override;
  std::string restrict_keyword() const override { return ""; }
  std::string math_call(OpKind op, const std::string& x) const override;
  std::string binary_expr(const Value& v, const std::string& a,
                          const std::string& b) const override;
  std::string int_to_float(const std::string& x) const override { return "(float)" + x; }
  std::string kernel_prologue(const Program& program) const override;
  std::string signature(const Program& program, const Kernel& kernel, int block) const override;
  std::string barrier() const override {
    return "threadgroup_barrier(mem_flags::mem_threadgroup);";
  }
  std::string shared(const std::string& declaration) const override {
    return "threadgroup " + declaration;
  }
  std::string global_pointer(const std::string& type) const override {
    return "device " + type + "*";
  }
  std::string local_pointer(const std::string& type) const override {
    return "thread " + type + "*";
  }
  std::string fma() const override { return "fma"; }
  // metal_matmul 3: simdgroup matrices (metal/matmul.cc), for any float operands.
  bool matrix_units(const MatmulInfo& mm) const override;
  std::string render_mma_matmul(const Program& program, const Kernel& kernel,
                                gpu::KernelLaunch& launch) const override;

 private:
  MetalSchedule metal_;
  MetalSchedule metal_fixed_;
};

}  // namespace luminal
