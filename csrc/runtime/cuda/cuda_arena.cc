// arena_layout: the memory plan's temp offsets, then aligned output slots.
#include "runtime/cuda/cuda_arena.h"

#include <algorithm>

#include "codegen/c_like.h"
#include "core/sizes.h"
#include "kernel/lower.h"

namespace luminal::cuda {

namespace {
int64_t align_up(int64_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }
}  // namespace

ArenaLayout arena_layout(const Program& program, const Liveness& live, const DynMap& dims) {
  ArenaLayout a;
  size_t nb = program.buffers.size();
  a.numel.assign(nb, 0);
  a.bytes.assign(nb, 0);
  a.offsets.assign(nb, -1);
  for (size_t b = 0; b < nb; ++b) {
    a.numel[b] = program.buffers[b].numel.eval(dims);
    const Buffer& buffer = program.buffers[b];
    a.bytes[b] = checked_bytes(a.numel[b], buffer.dtype, [&] {
      return "the CUDA arena: buffer " + std::to_string(b) + " (of node %" +
             std::to_string(buffer.node) + ")";
    });
  }
  MemoryPlan plan = plan_memory(program, live, a.numel);
  a.total = align_up(plan.arena_bytes);
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buf = program.buffers[b];
    if (buf.role == BufferRole::kTemp) a.offsets[b] = plan.offsets[b];
    if (buf.role == BufferRole::kOutput) {
      a.offsets[b] = a.total;
      a.total = checked_add_bytes(a.total, align_up(std::max<int64_t>(a.bytes[b], 1)), [] {
        return std::string("the CUDA arena");
      });
    }
  }
  return a;
}

GraphArena graph_arena_layout(const Graph& graph, const DynMap& dyn_map) {
  Program p = lower_graph(graph);
  Liveness live = buffer_liveness(p);
  DynMap dims;
  for (size_t k = 0; k < p.dims.size(); ++k) {
    dims[CLikeRenderer::dim_name(k)] = dyn_map.at(p.dims[k]);
  }
  ArenaLayout a = arena_layout(p, live, dims);
  GraphArena out;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    out.rows.push_back(ArenaRow{p.buffers[b].role, a.offsets[b], a.bytes[b], live.first[b],
                                live.last[b]});
  }
  out.total = a.total;
  return out;
}

}  // namespace luminal::cuda
