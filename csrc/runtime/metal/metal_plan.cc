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
  return gpu_launch_plan(program, src.launches, graph, dyn_map, max_threadgroups, 1, "Metal");
}

}  // namespace luminal
