// The weight layout of a program (kernel/weight_layout.h): which wanted panels are kept. Not
// the panels a kernel wants (codegen/c/matmul.cc gemm_panels) nor their packing (runtime/cpu).
#include "kernel/weight_layout.h"

#include <map>
#include <set>

#include "ir/graph.h"
#include "kernel/kernel.h"
#include "kernel/quant_row_groups.h"

namespace luminal {

int64_t PackedPanels::last_read() const {
  if (k == 0 || n == 0) return -1;
  return offset + (k - 1) * b_k + (n - 1) * b_n;
}

int64_t PackedPanels::bytes() const {
  if (row_groups) return padded_n() / width * group_bytes(stored, k);
  return elements() * static_cast<int64_t>(dtype_size(stored));
}

bool PackedPanels::operator==(const PackedPanels& o) const {
  return stored == o.stored && width == o.width && depth == o.depth && k == o.k && n == o.n &&
         offset == o.offset && b_k == o.b_k && b_n == o.b_n && pairs == o.pairs &&
         row_groups == o.row_groups;
}

void settle_weight_layout(const Graph& graph, Program& program,
                          const std::vector<std::optional<PackedPanels>>& wanted) {
  // Per buffer: the kernels that would read it as panels, and whether anything reads it else.
  std::map<BufferId, std::vector<size_t>> packing;
  std::set<BufferId> read_raw;
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    Kernel& k = program.kernels[i];
    k.panels.reset();
    const bool wants = i < wanted.size() && wanted[i].has_value();
    const BufferId b = wants ? k.values[k.matmul.b].buffer : -1;
    if (wants) packing[b].push_back(i);
    for (BufferId r : k.reads()) {
      if (r != b) read_raw.insert(r);
    }
  }
  for (const auto& [b, readers] : packing) {
    const Buffer buffer = program.buffers[b];  // a copy: the push_back below may move it
    bool keep = buffer.role == BufferRole::kInput && graph.node(buffer.node).parameter;
    for (size_t i : readers) keep = keep && wanted[i] == wanted[readers[0]];
    // Both layouts only for row groups (a tied quantized embedding's head): a float weight
    // read as stored too stays one layout, its GEMM packing per call, not twice the memory.
    keep = keep && (!read_raw.count(b) || wanted[readers[0]]->row_groups);
    if (!keep) continue;
    // The panels are a buffer of their own, beside the data where other kernels read it.
    Buffer panels = buffer;
    panels.id = static_cast<BufferId>(program.buffers.size());
    panels.panels = true;
    program.buffers.push_back(panels);
    for (size_t i : readers) {
      Kernel& k = program.kernels[i];
      k.panels = wanted[i];
      for (Value& v : k.values) {
        if (v.kind == ValueKind::kLoad && v.buffer == b) v.buffer = panels.id;
      }
    }
  }
}

}  // namespace luminal
