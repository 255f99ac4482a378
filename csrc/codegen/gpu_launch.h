// How a rendered GPU kernel maps onto the grid, shared by the CUDA and Metal renderers: the
// renderer decides a kernel's mapping (KernelLaunch, symbolic in the program's dims), and
// launch_dims turns it into grid and block sizes for one dyn_map. A CUDA block is a Metal
// threadgroup, a warp a simdgroup (32 lanes on both). Pure arithmetic: tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/symbolic.h"

namespace luminal::gpu {

enum class LaunchMode : uint8_t {
  kThreadPerItem,  // one thread per output element, grid-stride loop over `items`
  kWarpPerItem,    // one warp (simdgroup) per output element (a shuffle reduction), grid-stride
  kTile2D,         // matmul tiles: grid (ceil(n / tile_n), ceil(m / tile_m), batch)
  kSplitReduce,    // 32 outputs per block, its warps splitting the reduction, grid-stride
};

struct KernelLaunch {
  std::string name;  // the kernel's entry point
  LaunchMode mode = LaunchMode::kThreadPerItem;
  int block = 256;         // threads per block
  Expr items = 1;          // kThreadPerItem, kWarpPerItem: output elements
  Expr m = 1;              // kTile2D: rows, columns and batch count of the output
  Expr n = 1;
  Expr batch = 1;
  int64_t tile_m = 1;      // kTile2D: output tile of one block
  int64_t tile_n = 1;
  int shared_bytes = 0;    // dynamic shared memory per block (CUDA; Metal's is static)
};

struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
  bool empty = false;  // no work: skip the launch
};

// Grid-stride kernels get at most `max_blocks_per_sm` blocks per multiprocessor; every item is
// still covered because the kernels loop. Throws ShapeError when a dim is unbound or a tiled
// grid exceeds the hardware's limits.
LaunchDims launch_dims(const KernelLaunch& launch, const DynMap& dims, int multiprocessors,
                       int max_blocks_per_sm = 32);

}  // namespace luminal::gpu
