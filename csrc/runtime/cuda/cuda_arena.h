// The CUDA runtime's arena layout for one set of dim values: temps where the memory plan puts
// them (sharing space when their live ranges are disjoint), then every output in its own slot.
// Inputs live in their own allocations (so new dim values never move the user's data).
#pragma once

#include <cstdint>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/memory_plan.h"

namespace luminal::cuda {

constexpr int64_t kArenaAlign = 256;

struct ArenaLayout {
  std::vector<int64_t> offsets;  // per buffer: byte offset in the arena; -1 for inputs
  std::vector<int64_t> bytes;    // per buffer: bytes it holds
  std::vector<int64_t> numel;    // per buffer: elements under these dims
  int64_t total = 0;             // arena bytes (a multiple of kArenaAlign)
};

// `dims` binds the program's dims ("d0", ...).
ArenaLayout arena_layout(const Program& program, const Liveness& live, const DynMap& dims);

// The layout of a graph's default program, for checks without a device: per buffer its role,
// offset, bytes and live range; `dyn_map` binds the graph's symbols.
struct ArenaRow {
  BufferRole role;
  int64_t offset, bytes;
  int first, last;  // kernels that first and last touch it
};
struct GraphArena {
  std::vector<ArenaRow> rows;
  int64_t total = 0;
};
GraphArena graph_arena_layout(const Graph& graph, const DynMap& dyn_map);

}  // namespace luminal::cuda
