// CudaRenderer: CUDA C for NVRTC from LLIR, as a subclass of the C-like renderer. Each kernel
// gets one of a few thread mappings (a thread per output, a warp per output with a shuffle
// reduction and 16-byte loads where aligned, a shared-memory tiled matmul, a tensor-core
// mma.sync matmul for f16/bf16), chosen by CudaSchedule. Self-contained text: no headers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/c_like.h"
#include "runtime/cuda_launch.h"

namespace luminal {

// The CUDA renderer's tuning choices (TuningChoice params "cuda_<field>"); 0 = automatic.
struct CudaSchedule {
  int block = 0;   // threads per block of thread- and warp-per-output kernels (default 256)
  int reduce = 0;  // 1: a thread per output, serial; 2: a warp per output, shuffles;
                   // 3: 32 outputs per block (lanes), its warps splitting the reduction
  int matmul = 0;  // 1: as a reduction; 2: shared-memory tiled (f32 FMA); 3: tensor cores
  int vector = 0;  // 1: no vector loads; 2: 16-byte loads where aligned (the default)
};

// A matmul-shaped kernel: out[batch.., m, n] = sum_k a * b, a and b plain loads of one float
// dtype. Like kernel.h's MatmulInfo, for f16 and bf16 too.
struct CudaMatmul {
  int m_loop = -1;
  int n_loop = -1;
  ValueId a = -1;
  ValueId b = -1;
  Expr a_m, a_k, b_k, b_n;
  DType dtype = DType::F32;
};
std::optional<CudaMatmul> detect_cuda_matmul(const Kernel& kernel);

// Helpers of the CUDA kernels. The stride of `e` along symbol `var` when `e` is affine in it.
std::optional<Expr> affine_stride(const Expr& e, const std::string& var);
// "const int64_t iK = ...;" lines: the row-major unravel of flat `item` over `loops`.
void emit_unravel(const std::vector<Loop>& loops, const std::string& item, CodeWriter& w);

struct CudaSource {
  std::string source;                      // one translation unit, every kernel
  std::vector<cuda::KernelLaunch> launches;  // per kernel, in execution order
};

class CudaRenderer : public CLikeRenderer {
 public:
  // `sm` is the target's compute capability times ten (80, 90); tensor cores need >= 80.
  CudaRenderer(const CudaSchedule& schedule, int sm) : schedule_(schedule), sm_(sm) {}
  // `with_prelude` = false leaves out the helpers, to put several programs in one unit.
  CudaSource render_program(const Program& program, bool with_prelude = true) const;

 protected:
  std::string prelude(const Program& program) const override;
  std::string helper_qualifiers() const override { return "static __device__ __forceinline__"; }
  std::string kernel_signature(const Program& program, const Kernel& kernel) const override;
  void open_output_loops(const Kernel& kernel, CodeWriter& w) const override;
  void close_output_loops(const Kernel& kernel, CodeWriter& w) const override;
  std::string restrict_keyword() const override { return "__restrict__"; }

 private:
  cuda::LaunchMode choose(const Kernel& kernel, const std::optional<CudaMatmul>& mm,
                          bool* tensor_cores) const;
  std::string render_warp_kernel(const Program& program, const Kernel& kernel,
                                 cuda::KernelLaunch& launch) const;
  std::string render_split_kernel(const Program& program, const Kernel& kernel,
                                  cuda::KernelLaunch& launch) const;
  std::string render_tiled_matmul(const Program& program, const Kernel& kernel,
                                  const CudaMatmul& mm, cuda::KernelLaunch& launch) const;
  std::string render_mma_matmul(const Program& program, const Kernel& kernel,
                                const CudaMatmul& mm, cuda::KernelLaunch& launch) const;
  std::string signature(const Program& program, const Kernel& kernel, int block) const;
  int block() const { return schedule_.block > 0 ? schedule_.block : 256; }

  CudaSchedule schedule_;
  int sm_;
};

}  // namespace luminal
