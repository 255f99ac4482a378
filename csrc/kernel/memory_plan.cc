// Greedy best-fit placement, largest buffers first: each temp goes to the lowest offset where
// it overlaps no already placed temp that is live at the same time.
#include "kernel/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/sizes.h"

namespace luminal {

namespace {
constexpr int64_t kAlign = 64;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A program's buffer as its size errors name it; the runtimes check sizes with the graph's
// names first, so these are a backstop.
DescribeTensor buffer_desc(const Buffer& b) {
  return [&b] {
    return "buffer " + std::to_string(b.id) + " (of node %" + std::to_string(b.node) + ")";
  };
}
}  // namespace

Liveness buffer_liveness(const Program& program) {
  Liveness live;
  size_t n = program.buffers.size();
  live.first.assign(n, -1);
  live.last.assign(n, -1);
  for (size_t pos = 0; pos < program.kernels.size(); ++pos) {
    const Kernel& k = program.kernels[pos];
    int p = static_cast<int>(pos);
    if (live.first[k.out] < 0) live.first[k.out] = p;
    live.last[k.out] = std::max(live.last[k.out], p);
    for (BufferId b : k.reads()) {
      if (live.first[b] < 0) live.first[b] = p;
      live.last[b] = p;
    }
  }
  return live;
}

MemoryPlan plan_memory(const Program& program, const Liveness& live,
                       const std::vector<int64_t>& numel) {
  MemoryPlan plan;
  size_t n = program.buffers.size();
  plan.offsets.assign(n, -1);
  std::vector<int64_t> bytes(n, 0);
  std::vector<size_t> temps;
  for (size_t b = 0; b < n; ++b) {
    if (program.buffers[b].role != BufferRole::kTemp) continue;
    const Buffer& buffer = program.buffers[b];
    int64_t size = checked_bytes(std::max<int64_t>(numel[b], 1), buffer.dtype,
                                 buffer_desc(buffer));
    bytes[b] = align_up(size);
    temps.push_back(b);
  }
  std::stable_sort(temps.begin(), temps.end(),
                   [&](size_t x, size_t y) { return bytes[x] > bytes[y]; });
  std::vector<size_t> placed;
  for (size_t b : temps) {
    // Intervals taken by live-overlapping placed buffers, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t q : placed) {
      bool disjoint = live.last[q] < live.first[b] || live.last[b] < live.first[q];
      if (!disjoint) taken.push_back({plan.offsets[q], plan.offsets[q] + bytes[q]});
    }
    std::sort(taken.begin(), taken.end());
    int64_t best = -1;
    int64_t best_gap = -1;
    int64_t cursor = 0;
    for (const auto& [lo, hi] : taken) {
      int64_t gap = lo - cursor;
      if (gap >= bytes[b] && (best < 0 || gap < best_gap)) {
        best = cursor;
        best_gap = gap;
      }
      cursor = std::max(cursor, hi);
    }
    if (best < 0) best = cursor;
    plan.offsets[b] = best;
    int64_t end = checked_add_bytes(best, bytes[b], buffer_desc(program.buffers[b]));
    plan.arena_bytes = std::max(plan.arena_bytes, end);
    placed.push_back(b);
  }
  return plan;
}

}  // namespace luminal
