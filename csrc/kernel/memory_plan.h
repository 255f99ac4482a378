// Buffer planning: every temporary buffer of a program gets a byte offset in one arena, reusing
// the space of buffers whose last reader has run. Liveness is fixed at lowering; sizes come
// from the dyn_map, so a plan is made per set of dim values (cheap: no recompile).
#pragma once

#include <cstdint>
#include <vector>

#include "kernel/kernel.h"

namespace luminal {

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per buffer: byte offset in the arena; -1 if not a temp
  int64_t arena_bytes = 0;
};

// Live range of each buffer in kernel positions: [first, last] (first = its writer).
struct Liveness {
  std::vector<int> first;
  std::vector<int> last;
};

Liveness buffer_liveness(const Program& program);

// `numel` holds each buffer's element count under the current dims. Offsets are aligned to
// 64 bytes; two temps share bytes only if their live ranges are disjoint.
MemoryPlan plan_memory(const Program& program, const Liveness& live,
                       const std::vector<int64_t>& numel);

}  // namespace luminal
