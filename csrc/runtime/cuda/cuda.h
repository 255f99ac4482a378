// CudaRuntime: runs a graph on an NVIDIA GPU through the driver API and NVRTC, both loaded at
// run time. compile() lowers to LLIR, renders CUDA C, compiles it to CUBIN for the device's
// architecture (cached on disk) and loads it; execute() replays the whole program as one CUDA
// graph, captured once per set of dim values, over one device arena from the memory plan.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cuda/renderer.h"
#include "kernel/kernel.h"
#include "kernel/memory_plan.h"
#include "runtime/cuda/cubin_cache.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/gpu_plan.h"
#include "runtime/runtime.h"
#include "runtime/view_bounds.h"

namespace luminal {

// Options from Python (no environment lookups in C++).
struct CudaOptions {
  std::string driver_library = "libcuda.so.1";
  std::string nvrtc_library;  // full path; "" tries the loader's default names
  std::string cache_dir;      // CUBIN cache; "" disables it
  int device = 0;
};

// The CUDA renderer's schedule from a TuningChoice's "cuda_*" params; throws CompileError for
// other names or values out of range.
CudaSchedule cuda_schedule(const TuningChoice& choice);

// The CUDA runtime's lowering rules for a device of compute capability `sm` (times ten):
// rules/cuda.rules (reduction strategies, matmul mappings), and rules/cuda_sm80.rules (tensor
// cores) from sm 80 on. What CudaRuntime::rewrite_rules() returns; a function of its own so the
// rules can be read and tested without a GPU.
std::string cuda_rewrite_rules(int sm);

// The device-free entry points below check the graph's node schedules (check_cuda_schedule)
// and render each kernel with `choice` overridden by its node's schedule.
// Lowers, renders and compiles `graph` with NVRTC for `arch` ("sm_90") without a device.
// Returns the CUDA source; throws CompileError when NVRTC rejects it.
std::string cuda_codegen_check(const Graph& graph, const std::string& arch,
                               const CudaOptions& options, const TuningChoice& choice);

// The CUDA source of `graph` for `arch` under `choice`, without compiling it; `fixed` as
// CudaRuntime::fix_choice (over the nodes' schedules).
std::string cuda_render(const Graph& graph, const std::string& arch, const TuningChoice& choice,
                        const TuningChoice& fixed = {});
// CudaRuntime::prepare's fingerprint: a key of cuda_render's source and of the choice, which
// may change how kernels launch, not only their text.
std::string cuda_fingerprint(const Graph& graph, const std::string& arch,
                             const TuningChoice& choice, const TuningChoice& fixed = {});

// What the runtime would launch for `graph` under `dyn_map` on a device with `multiprocessors`:
// per kernel its name, grid/block and parameter buffers; per buffer its role, node, dtype and
// element count. For tests that run the kernels elsewhere (an emulator) and for debugging.
using CudaLaunchPlan = GpuLaunchPlan;
CudaLaunchPlan cuda_launch_plan(const Graph& graph, const std::string& arch,
                                const TuningChoice& choice, const DynMap& dyn_map,
                                int multiprocessors);

// The same for many graphs in one NVRTC translation unit (kernels renamed "g<i>_k<j>"), so a
// test suite pays NVRTC's start-up once. Returns the source.
std::string cuda_codegen_check_batch(const std::vector<const Graph*>& graphs,
                                     const std::string& arch, const CudaOptions& options,
                                     const TuningChoice& choice);

class CudaRuntime : public Runtime {
 public:
  // Throws DeviceError when there is no driver, no device or no NVRTC.
  explicit CudaRuntime(const CudaOptions& options);
  ~CudaRuntime() override;
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  std::string name() const override { return "cuda"; }
  using Runtime::compile;
  void compile(const Graph& graph, const TuningChoice& choice) override;
  // Fingerprinted by cuda_fingerprint; compile(Prepared) renders again.
  std::shared_ptr<const Prepared> prepare(const Graph& graph,
                                          const TuningChoice& choice) const override;
  // The kernel-level alternatives (reduction strategies, matmul mappings) come as rules
  // (cuda_rewrite_rules); the program-wide tuning space is the fixed params (or the default).
  std::vector<TuningChoice> tuning_space(const Graph& graph) const override;
  std::string rewrite_rules() const override;
  // Prices the widening of 16-bit inputs in their readers (runtime/cuda/cuda_kernel_cost.h).
  std::shared_ptr<const egraph::KernelCost> kernel_cost() const override;
  void set_data(NodeId input, const void* data, int64_t count, DType dtype) override;
  void clear_data() override;
  void execute(const DynMap& dyn_map) override;
  const HostBuffer& get(NodeId output) const override;

  // Fixes tuning params (e.g. cuda_matmul 3): they override every compile's choice and every
  // node's schedule, and tuning_space offers only them. Empty = no fixed params. Checked at
  // compile.
  void fix_choice(const TuningChoice& choice) { fixed_ = choice; }

  // Milliseconds per replay of the captured program (device events, after one warm-up).
  double benchmark(const DynMap& dyn_map, int iters);
  // Device-to-device bandwidth in GB/s (bytes read + written) of a 16-byte copy kernel and
  // of cuMemcpyDtoD, over `bytes`-sized buffers.
  std::pair<double, double> copy_bandwidth(int64_t bytes, int iters);
  std::string device_name() const { return device_name_; }
  std::string arch() const { return arch_; }
  int multiprocessors() const { return multiprocessors_; }
  const std::string& source() const { return source_; }

 private:
  struct DeviceBuffer {
    cuda::CUdeviceptr ptr = 0;
    int64_t bytes = 0;
    int64_t count = -1;  // elements set by set_data (inputs)
  };
  void make_current() const;
  void release_program();
  void release_graph();
  DynMap program_dims(const DynMap& dyn_map) const;
  void plan_run(const DynMap& dyn_map);  // plan memory and capture the graph if needed
  // After a run: a ShapeError if a Gather read an index out of range (the flag cleared).
  void check_index_fault(const DynMap& dyn_map);
  cuda::CUdeviceptr alloc(int64_t bytes);

  std::shared_ptr<cuda::Driver> driver_;
  std::shared_ptr<cuda::Nvrtc> nvrtc_;
  cuda::CubinCache cache_;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;
  std::string device_name_;
  std::string arch_;
  int sm_ = 0;
  int multiprocessors_ = 0;

  TuningChoice fixed_;
  Graph graph_;
  std::vector<ViewRead> fixed_reads_;  // checked at each execute (view_bounds.h)
  bool compiled_ = false;
  Program program_;
  Liveness liveness_;
  std::string source_;
  std::vector<gpu::KernelLaunch> launches_;
  cuda::CUmodule module_ = nullptr;
  // The module's index fault flag (codegen kIndexFault) where a kernel reads a bound index,
  // else 0: read after every execute, cleared after a fault.
  cuda::CUdeviceptr index_fault_ = 0;
  std::vector<cuda::CUfunction> functions_;
  std::map<NodeId, BufferId> input_buffer_;   // HLIR Input node -> its buffer
  std::map<NodeId, BufferId> output_buffer_;  // HLIR Output node -> its buffer

  std::map<BufferId, DeviceBuffer> inputs_;  // one allocation per input, kept across plans
  DeviceBuffer arena_;                       // temps and outputs
  std::vector<cuda::CUdeviceptr> pointers_;  // per buffer, for the captured graph
  std::vector<int64_t> numel_;
  DynMap captured_dims_;
  bool captured_ = false;
  cuda::CUgraphExec graph_exec_ = nullptr;
  DynMap last_dyn_map_;
  mutable std::map<NodeId, HostBuffer> outputs_;  // filled from the device on first get()
  mutable bool outputs_stale_ = true;
};

}  // namespace luminal
