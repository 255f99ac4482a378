// Bindings of the Metal runtime's device-free half (runtime/metal/metal_plan.h): the MSL of a
// graph, its rules and its launch plan, which the tests run through a CPU emulator of MSL.
// .def lines and conversions to Python tuples only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bind/launch_plan.h"
#include "runtime/metal/metal_plan.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

namespace {
std::string render_py(const Graph& graph, const TuningChoice& choice) {
  return metal_render_graph(graph, choice).src.source;
}

nb::tuple launch_plan_py(const Graph& graph, const TuningChoice& choice, const DynMap& dyn_map,
                         int max_threadgroups) {
  MetalRendered r = metal_render_graph(graph, choice);
  return launch_plan_tuple(metal_launch_plan(r.program, r.src, graph, dyn_map, max_threadgroups));
}
}  // namespace

void init_metal(nb::module_& m) {
  m.def("metal_render", &render_py, "graph"_a, "choice"_a = TuningChoice{},
        nb::call_guard<nb::gil_scoped_release>());
  m.def("metal_rewrite_rules", &metal_rewrite_rules);
  m.def("metal_launch_plan", &launch_plan_py, "graph"_a, "choice"_a, "dyn_map"_a,
        "max_threadgroups"_a);
}

}  // namespace luminal
