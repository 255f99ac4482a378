// The innermost loop of an elementwise kernel split into blocks: i = io * C + ii, for the
// largest block C (at least kMinBlock, dividing the loop's constant extent) over which every
// load's and the store's index moves by a constant step, where over the whole loop it does not
// (a view that merges heads or transposes blocks divides i by the block: (i // 64) * s + i %
// 64). Its index arithmetic is then simplified in io and ii, and the block's loop reads and
// writes in order, which a compiler vectorizes. Not the rendering (codegen/c/renderer.cc).
#pragma once

#include <optional>
#include <string>

#include "kernel/kernel.h"

namespace luminal {

// The smallest block worth a loop of its own (a vector of f32 on the narrowest machine).
inline constexpr int64_t kMinBlock = 8;

struct BlockSplit {
  std::string outer;  // io's name: the innermost loop's variable with "o" after it
  int64_t blocks = 0;  // io's extent
  int64_t block = 0;   // C: ii's extent (ii keeps the innermost loop's name)
  Kernel inside;       // the kernel with i replaced by io * C + ii % C in every index and mask
};

// The split of `kernel`'s innermost output loop, or nullopt where its indices already move in
// constant steps along it, no block makes them, its extent is not constant, or the kernel is
// not elementwise (a reduction, a recognised pattern: matmul, row, attention).
std::optional<BlockSplit> block_split(const Kernel& kernel);

}  // namespace luminal
