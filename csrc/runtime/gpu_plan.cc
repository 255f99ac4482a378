// gpu_launch_plan: a program's launches under one dyn_map.
#include "runtime/gpu_plan.h"

#include "codegen/c_like.h"
#include "core/errors.h"
#include "runtime/runtime.h"

namespace luminal {

GpuLaunchPlan gpu_launch_plan(const Program& program,
                              const std::vector<gpu::KernelLaunch>& launches,
                              const Graph& graph, const DynMap& dyn_map, int multiprocessors,
                              int max_blocks_per_sm, const std::string& who) {
  DynMap dims;
  GpuLaunchPlan plan;
  for (size_t k = 0; k < program.dims.size(); ++k) {
    auto it = dyn_map.find(program.dims[k]);
    if (it == dyn_map.end()) {
      throw ShapeError(who + ": dim '" + program.dims[k] + "' has no value in the dyn_map");
    }
    dims[CLikeRenderer::dim_name(k)] = it->second;
    plan.dims.push_back(it->second);
  }
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    GpuLaunchPlan::Launch l;
    l.name = launches[k].name;
    l.dims = gpu::launch_dims(launches[k], dims, multiprocessors, max_blocks_per_sm);
    l.buffers.push_back(program.kernels[k].out);
    for (BufferId b : program.kernels[k].reads()) l.buffers.push_back(b);
    plan.launches.push_back(l);
  }
  plan.numel = buffer_numels(graph, program, dyn_map, who.c_str());
  plan.buffers = program.buffers;
  return plan;
}

}  // namespace luminal
