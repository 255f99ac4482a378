// CudaRenderer: CUDA C for NVRTC from LLIR, as a subclass of the C-like renderer. Each kernel
// gets one of a few thread mappings (a thread per output, a warp per output with a shuffle
// reduction and 16-byte loads where aligned, a shared-memory tiled matmul, a tensor-core
// mma.sync matmul for f16/bf16, a GEMV for matmuls of few rows, a warp per row for row
// kernels), chosen per kernel by its
// CudaSchedule: the renderer's base
// schedule, overridden by the kernel's own schedule params (from a node's schedule, the
// runtime's rules in runtime/rules/cuda*.rules), overridden by the user's fixed params.
// Self-contained text: no headers.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "codegen/c_like.h"
#include "codegen/gpu_launch.h"

namespace luminal {

// The CUDA renderer's choices for a kernel (schedule params "cuda_<field>"); 0 = automatic.
// codegen/cuda/schedule.cc reads and checks them.
struct CudaSchedule {
  int block = 0;   // threads per block of thread- and warp-per-output kernels (default 256)
  int reduce = 0;  // 1: a thread per output, serial; 2: a warp per output, shuffles;
                   // 3: 32 outputs per block (lanes), its warps splitting the reduction
  int matmul = 0;  // 1: as a reduction; 2: shared-memory tiled (f32 FMA); 3: tensor cores
                   // (f16/bf16 on sm >= 80; otherwise as 2); 4: the GEMV (cuda/gemv.cc; where b
                   // is not contiguous along k, as the automatic choice)
  int vector = 0;  // 1: no vector loads; 2: 16-byte loads where aligned (the default)
  int gemv_rows = 0;   // GEMV: rows of a per pass over b, 1 to 8 (default 8)
  int gemv_cols = 0;   // GEMV: columns of the output (rows of b) per warp: 1, 2 (default), 4
  int gemv_split = 0;  // GEMV: warps of a block splitting k for the same columns, combined in
                       // shared memory: 1 (default), 2, 4, 8 (at most the block's warps)

  // This schedule with the "cuda_*" entries of `params` in place of its fields (other names
  // are not the renderer's; check_cuda_schedule refuses them).
  CudaSchedule with(const ScheduleParams& params) const;
  // This schedule with the fields `top` sets (non-zero) in place of its own.
  CudaSchedule under(const CudaSchedule& top) const;
};

// Throws CompileError, naming `where` (a node, a tuning choice), when `params` holds a name
// that is not in the table (cuda_block, cuda_reduce, cuda_matmul, cuda_vector, cuda_gemv_rows,
// cuda_gemv_cols, cuda_gemv_split, and the lowering's own kInlineParam and kEpilogueParam, 0 or
// 1) or a value out of its range.
void check_cuda_schedule(const ScheduleParams& params, const std::string& where);

// A helper of the CUDA kernels: "const int64_t iK = ...;" lines, the row-major unravel of
// flat `item` over `loops`.
void emit_unravel(const std::vector<Loop>& loops, const std::string& item, CodeWriter& w);

struct CudaSource {
  std::string source;                      // one translation unit, every kernel
  std::vector<gpu::KernelLaunch> launches;  // per kernel, in execution order
};

class CudaRenderer : public CLikeRenderer {
 public:
  // `sm` is the target's compute capability times ten (80, 90); tensor cores need >= 80.
  // A kernel's schedule is `schedule` overridden by the kernel's own params, then by `fixed`.
  CudaRenderer(const CudaSchedule& schedule, int sm, const CudaSchedule& fixed = {})
      : schedule_(schedule), fixed_(fixed), sm_(sm) {}
  // The schedule `kernel` is rendered with.
  virtual CudaSchedule schedule_of(const Kernel& kernel) const;
  // `with_prelude` = false leaves out the helpers, to put several programs in one unit.
  CudaSource render_program(const Program& program, bool with_prelude = true) const;

 protected:
  std::string prelude(const Program& program) const override;
  std::string helper_qualifiers() const override { return "static __device__ __forceinline__"; }
  std::string index_fault_declaration() const override;
  std::string index_fault(const std::string& zero) const override;
  std::string kernel_signature(const Program& program, const Kernel& kernel) const override;
  void open_output_loops(const Kernel& kernel, CodeWriter& w) const override;
  void close_output_loops(const Kernel& kernel, CodeWriter& w) const override;
  std::string restrict_keyword() const override { return "__restrict__"; }

  // What the thread mappings spell in CUDA and MSL spells apart (MetalRenderer,
  // codegen/metal/renderer.h, renders these mappings in MSL): a kernel's signature, a block
  // barrier, a shared-memory declaration, a pointer type in a cast to global or to thread-local
  // memory, and the fused multiply-add.
  virtual std::string signature(const Program& program, const Kernel& kernel, int block) const;
  // Opens kernel `kernel`'s function with `block` threads: its signature, then its prologue.
  void open_kernel(const Program& program, const Kernel& kernel, int block, CodeWriter& w) const;
  virtual std::string barrier() const { return "__syncthreads();"; }
  virtual std::string shared(const std::string& declaration) const {
    return "__shared__ " + declaration;
  }
  virtual std::string global_pointer(const std::string& type) const { return type + "*"; }
  virtual std::string local_pointer(const std::string& type) const { return type + "*"; }
  virtual std::string fma() const { return "fmaf"; }
  // Whether matmul `mm` may run on the matrix units (cuda_matmul 3): tensor cores take two
  // f16/bf16 operands from sm 80 on. render_mma_matmul is their kernel (cuda/matmul.cc;
  // MSL's simdgroup matrices in metal/matmul.cc).
  virtual bool matrix_units(const MatmulInfo& mm) const {
    return (mm.dtype == DType::F16 || mm.dtype == DType::BF16) && sm_ >= 80;
  }
  virtual std::string render_mma_matmul(const Program& program, const Kernel& kernel,
                                        gpu::KernelLaunch& launch) const;

 private:
  // The kernel a mapping renders (each with its launch mode).
  enum class Mapping {
    kThreadPerItem,
    kWarpReduce,
    kSplitReduce,
    kTiledMatmul,
    kMmaMatmul,
    kGemv,
  };
  Mapping choose(const Kernel& kernel) const;
  // `kernel` in the thread mapping choose() picks for it, `launch` filled in to match.
  std::string render_mapped(const Program& program, const Kernel& kernel,
                            gpu::KernelLaunch& launch) const;
  std::string render_warp_kernel(const Program& program, const Kernel& kernel,
                                 gpu::KernelLaunch& launch) const;
  std::string render_split_kernel(const Program& program, const Kernel& kernel,
                                  gpu::KernelLaunch& launch) const;
  std::string render_tiled_matmul(const Program& program, const Kernel& kernel,
                                  gpu::KernelLaunch& launch) const;

  std::string render_gemv(const Program& program, const Kernel& kernel,
                          gpu::KernelLaunch& launch) const;
  // render_gemv's pieces (cuda/gemv.cc): a pass's steps over whole 16-byte vectors of k, the
  // rest of k an element a lane then the warp sums, and the store of the pass's sums (through
  // shared memory where warps split k).
  struct GemvPlan;
  void emit_gemv_vectors(const Kernel& k, const GemvPlan& p, CodeWriter& w) const;
  void emit_gemv_tail(const Kernel& k, const GemvPlan& p, CodeWriter& w) const;
  void emit_gemv_store(const Kernel& k, const GemvPlan& p, CodeWriter& w) const;
  // A row kernel (kernel/row_kernel.h; cuda/row.cc): a warp per row.
  std::string render_row_kernel(const Program& program, const Kernel& kernel,
                                gpu::KernelLaunch& launch) const;
  // An attention kernel (kernel/attention.h; cuda/attention.cc): a warp per query row.
  std::string render_attention_kernel(const Program& program, const Kernel& kernel,
                                      gpu::KernelLaunch& launch) const;
  // What the warp-per-row kernels share (cuda/row.cc): `launch` a warp per element of the
  // product of loops `rows` (RowInfo::rows, AttentionInfo::rows); the comment (`what`), the
  // signature, the grid-stride loop of warps and the row's loop variables, left open.
  void open_warp_per_row(const Program& program, const Kernel& k, const std::vector<int>& rows,
                         const std::string& what, gpu::KernelLaunch& launch,
                         CodeWriter& w) const;
  // Row kernel `k`'s online loop (kernel/row_kernel.h match_online): its max and sum in one
  // loop of the lanes, each keeping a (max, sum) pair, combined across the warp.
  void emit_online_loop(const Kernel& k, const std::set<std::string>& bound,
                        CodeWriter& w) const;
  // The warp-wide reduction helper of reduction `red`: "lm_warp_sum" and the like.
  static std::string warp_reduce_fn(const Value& red);
  // What the reduction mappings share: the reduce value, its loop, its compute type, the
  // accumulator's and the reduced value's names.
  struct Reduction {
    const Value& red;
    const Loop& loop;
    std::string type, acc, x;
  };
  Reduction reduction(const Kernel& kernel) const;
  // After the reduction: a half accumulator rounded, the values after it emitted.
  void finish_reduction(const Kernel& kernel, CodeWriter& w) const;
  int block(const Kernel& kernel) const;

  CudaSchedule schedule_;
  CudaSchedule fixed_;
  int sm_;
};

}  // namespace luminal
