// A GPU launch plan (runtime/gpu_plan.h) as the Python tuple the emulators read: (launches:
// [(name, grid, block, buffer ids, empty)], buffers: [(role, node, dtype, numel)], dims).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "runtime/gpu_plan.h"

namespace luminal {

inline nanobind::tuple launch_plan_tuple(const GpuLaunchPlan& p) {
  nanobind::list launches;
  for (const auto& l : p.launches) {
    std::vector<uint32_t> grid(l.dims.grid, l.dims.grid + 3);
    std::vector<uint32_t> block(l.dims.block, l.dims.block + 3);
    launches.append(nanobind::make_tuple(l.name, grid, block, l.buffers, l.dims.empty));
  }
  nanobind::list buffers;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const Buffer& buf = p.buffers[b];
    buffers.append(
        nanobind::make_tuple(static_cast<int>(buf.role), buf.node, buf.dtype, p.numel[b]));
  }
  return nanobind::make_tuple(launches, buffers, p.dims);
}

}  // namespace luminal
