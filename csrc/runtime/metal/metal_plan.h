// The device-free half of the Metal runtime, built on every system: a graph lowered and
// rendered as MSL (codegen/metal/renderer.h) under a tuning choice, the runtime's lowering
// rules, and the launch plan a dyn_map gives (grid and threadgroup sizes, each kernel's
// buffers). MetalRuntime (metal.h, Objective-C++ on Apple systems) runs what these produce;
// the tests run it through a CPU emulator of MSL (tests/metal_emu.py) on any system.
#pragma once

#include <string>
#include <vector>

#include "codegen/metal/renderer.h"
#include "ir/graph.h"
#include "kernel/kernel.h"
#include "runtime/gpu_plan.h"
#include "runtime/runtime.h"

namespace luminal {

// The Metal renderer's schedule from a TuningChoice's "metal_*" params; throws CompileError
// for other names or values out of range.
MetalSchedule metal_schedule(const TuningChoice& choice);

// The Metal runtime's lowering rules (runtime/rules/metal.rules): reduction strategies and
// matmul mappings as node schedules.
std::string metal_rewrite_rules();

// `graph` lowered (its nodes' schedules checked) and rendered: each kernel with `choice`,
// overridden by its node's schedule, overridden by `fixed`.
struct MetalRendered {
  Program program;
  MetalSource src;
};
MetalRendered metal_render_graph(const Graph& graph, const TuningChoice& choice,
                                 const TuningChoice& fixed = {});

// What a Metal device runs for `graph` under `dyn_map`: per kernel its function name, grid
// (threadgroups) and threadgroup size, and its buffer parameters in order (the calling
// convention of codegen/metal/renderer.h); per buffer its element count; the dims' values.
// Grid-stride kernels get at most `max_threadgroups` threadgroups.
using MetalLaunchPlan = GpuLaunchPlan;
MetalLaunchPlan metal_launch_plan(const Program& program, const MetalSource& src,
                                  const Graph& graph, const DynMap& dyn_map,
                                  int max_threadgroups);

}  // namespace luminal
