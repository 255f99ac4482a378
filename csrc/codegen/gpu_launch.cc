// launch_dims: grid and block sizes of a kernel for one dyn_map.
#include "codegen/gpu_launch.h"

#include <algorithm>

#include "core/errors.h"

namespace luminal::gpu {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t eval_nonneg(const Expr& e, const DynMap& dims, const std::string& kernel,
                    const char* what) {
  int64_t v = e.eval(dims);
  if (v < 0) {
    throw ShapeError("launch of " + kernel + ": " + what + " " + e.to_string() + " is " +
                     std::to_string(v) + " < 0");
  }
  return v;
}
}  // namespace

LaunchDims launch_dims(const KernelLaunch& launch, const DynMap& dims, int multiprocessors,
                       int max_blocks_per_sm) {
  LaunchDims d;
  d.block[0] = static_cast<uint32_t>(launch.block);
  d.shared_bytes = static_cast<uint32_t>(launch.shared_bytes);
  const int64_t max_grid = std::max<int64_t>(1, int64_t{multiprocessors} * max_blocks_per_sm);
  switch (launch.mode) {
    case LaunchMode::kThreadPerItem:
    case LaunchMode::kWarpPerItem:
    case LaunchMode::kSplitReduce: {
      int64_t items = eval_nonneg(launch.items, dims, launch.name, "item count");
      int64_t per_block = launch.mode == LaunchMode::kThreadPerItem ? launch.block
                          : launch.mode == LaunchMode::kWarpPerItem ? launch.block / 32
                                                                    : 32;
      d.empty = items == 0;
      d.grid[0] = static_cast<uint32_t>(std::clamp<int64_t>(ceil_div(items, per_block), 1,
                                                            max_grid));
      return d;
    }
    case LaunchMode::kTile2D: {
      int64_t m = eval_nonneg(launch.m, dims, launch.name, "rows");
      int64_t n = eval_nonneg(launch.n, dims, launch.name, "columns");
      int64_t batch = eval_nonneg(launch.batch, dims, launch.name, "batch");
      d.empty = m == 0 || n == 0 || batch == 0;
      int64_t gx = std::max<int64_t>(1, ceil_div(n, launch.tile_n));
      int64_t gy = std::max<int64_t>(1, ceil_div(m, launch.tile_m));
      int64_t gz = std::max<int64_t>(1, batch);
      if (gx > 2147483647 || gy > 65535 || gz > 65535) {
        throw ShapeError("launch of " + launch.name + ": a grid of (" + std::to_string(gx) +
                         ", " + std::to_string(gy) + ", " + std::to_string(gz) +
                         ") tiles exceeds the device's limits");
      }
      d.grid[0] = static_cast<uint32_t>(gx);
      d.grid[1] = static_cast<uint32_t>(gy);
      d.grid[2] = static_cast<uint32_t>(gz);
      return d;
    }
  }
  return d;
}

}  // namespace luminal::gpu
