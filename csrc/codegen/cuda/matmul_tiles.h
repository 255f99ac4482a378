// What the GPU renderers' tiled matmul kernels share (cuda/matmul.cc; metal/matmul.cc): the
// preamble of a tile (batch variables from blockIdx.z, the sizes, the tile's origin, the
// operands' bases and strides), the launch of a grid of tiles, and the bounds-checked store of
// a tile's sums through the matmul's epilogue.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/c_like.h"
#include "codegen/gpu_launch.h"
#include "kernel/kernel.h"

namespace luminal {

struct MatmulNames {
  std::string mv, nv, kv;  // loop variable names
  std::string a, b;        // buffer names
};

// lm_M, lm_N, lm_K, lm_m0 / lm_n0 (the tile's origin: blockIdx.y, blockIdx.x), lm_a0 / lm_b0
// (the operands' bases) and lm_am, lm_ak, lm_bk, lm_bn (their strides), for tiles of tile_m x
// tile_n outputs; the batch loops' variables unraveled from blockIdx.z.
MatmulNames matmul_preamble(const Kernel& k, const MatmulInfo& mm, int64_t tile_m,
                            int64_t tile_n, CodeWriter& w);

// The launch of a matmul kernel: 256 threads per tile x tile block of the output, a block row
// per m tile, a block column per n tile, a grid layer per batch element.
void matmul_tile_launch(const Kernel& k, const MatmulInfo& mm, int64_t tile,
                        gpu::KernelLaunch& launch);

// The store: unrolled loops over i < counts[0], j < counts[1] (and c < counts[2]), each
// running `store` (which names them) at output (m, col), bounds-checked.
void store_matmul_tile(const MatmulNames& n, const std::vector<int>& counts,
                       const std::string& m, const std::string& col,
                       const std::function<void(CodeWriter&)>& store, CodeWriter& w);

}  // namespace luminal
