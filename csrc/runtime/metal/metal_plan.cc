// The device-free half of the Metal runtime: the schedule of a tuning choice, the rules, a
// graph lowered and rendered as MSL, and its launch plan for one dyn_map.
#include "runtime/metal/metal_plan.h"

#include "core/errors.h"
#include "kernel/lower.h"
#include "runtime/runtime_rules.h"

namespace luminal {

MetalSchedule metal_schedule(const TuningChoice& choice) {
  check_metal_schedule(choice.params, "tuning choice " + choice.to_string());
  return MetalSchedule{}.with(choice.params);
}

std::string metal_rewrite_rules() { return runtime_rules("metal.rules"); }

MetalRendered metal_render_graph(const Graph& graph, const TuningChoice& choice,
                                 const TuningChoice& fixed) {
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    if (!n.schedule.empty()) check_metal_schedule(n.schedule, "node %" + std::to_string(id));
  }
  MetalRendered r;
  r.program = lower_graph(graph);
  r.src = MetalRenderer(metal_schedule(choice), metal_schedule(fixed)).render_program(r.program);
  return r;
}

MetalLaunchPlan metal_launch_plan(const Program& program, const MetalSource& src,
                                  const Graph& graph, const DynMap& dyn_map,
                                  int max_threadgroups) {
  DynMap dims;
  MetalLaunchPlan plan;
  for (size_t k = 0; k < program.dims.size(); ++k) {
    auto it = dyn_map.find(program.dims[k]);
    if (it == dyn_map.end()) {
      throw ShapeError("Metal: dim '" + program.dims[k] + "' has no value in the dyn_map");
    }
    dims[CLikeRenderer::dim_name(k)] = it->second;
    plan.dims.push_back(it->second);
  }
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    MetalLaunchPlan::Launch l;
    l.name = src.launches[k].name;
    l.dims = gpu::launch_dims(src.launches[k], dims, max_threadgroups, 1);
    l.buffers.push_back(program.kernels[k].out);
    for (BufferId b : program.kernels[k].reads()) l.buffers.push_back(b);
    plan.launches.push_back(l);
  }
  plan.numel = buffer_numels(graph, program, dyn_map, "Metal");
  plan.buffers = program.buffers;
  return plan;
}

}  // namespace luminal
