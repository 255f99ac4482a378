// The canonical form of a kernel (kernel/canonical.h): buffers renumbered, name a placeholder.
#include "kernel/canonical.h"

#include <map>

namespace luminal {

Program canonical_kernel(const Program& program, const Kernel& kernel) {
  Program alone;
  alone.dims = program.dims;
  std::map<BufferId, BufferId> renumbered;
  auto add = [&](BufferId id) {
    Buffer copy = program.buffers[id];
    copy.id = static_cast<BufferId>(alone.buffers.size());
    renumbered[id] = copy.id;
    alone.buffers.push_back(copy);
  };
  add(kernel.out);
  for (BufferId id : kernel.reads()) add(id);
  Kernel k = kernel;
  k.name = kCanonicalKernelName;
  k.out = renumbered.at(kernel.out);
  for (Value& v : k.values) {
    if (v.kind == ValueKind::kLoad) v.buffer = renumbered.at(v.buffer);
  }
  alone.kernels.push_back(std::move(k));
  return alone;
}

}  // namespace luminal
