// What a GPU runtime (CUDA, Metal) launches for a program under one dyn_map: per kernel its
// entry point, grid and block sizes and its buffer parameters in order; per buffer its element
// count; the dims' values. Built from a renderer's launches (codegen/gpu_launch.h). For the
// runtimes, and for tests that run the kernels elsewhere (the emulators).
#pragma once

#include <string>
#include <vector>

#include "codegen/gpu_launch.h"
#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

struct GpuLaunchPlan {
  struct Launch {
    std::string name;
    gpu::LaunchDims dims;
    std::vector<BufferId> buffers;  // the kernel's buffer parameters, in order
  };
  std::vector<Launch> launches;
  std::vector<Buffer> buffers;
  std::vector<int64_t> numel;
  std::vector<int64_t> dims;  // the program's dims' values, in order
};

// `program`'s kernels launched as `launches` say (one each, in order), under `dyn_map`, on a
// device of `multiprocessors` (at most `max_blocks_per_sm` blocks each for grid-stride
// kernels). `who` names the caller in the ShapeError of an unbound dim.
GpuLaunchPlan gpu_launch_plan(const Program& program,
                              const std::vector<gpu::KernelLaunch>& launches,
                              const Graph& graph, const DynMap& dyn_map, int multiprocessors,
                              int max_blocks_per_sm, const std::string& who);

}  // namespace luminal
