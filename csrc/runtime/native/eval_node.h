// One computed node of the reference interpreter (native.h): its output buffer from its
// operands' buffers. Every op but Input, whose data the runtime holds.
#pragma once

#include <vector>

#include "runtime/native/host_elements.h"

namespace luminal::native {

struct NodeEval {
  const Node& n;
  NodeId id;
  const std::vector<int64_t>& shape;      // n's shape, evaluated
  const std::vector<ConcreteView>& views;  // each input's view, evaluated
  std::vector<const HostBuffer*> in;      // each input's buffer
  HostBuffer& out;                        // zeroed, of n's dtype and shape

  const HostBuffer& input(size_t k) const { return *in[k]; }
};

// Fills e.out with n's value; dyn_map binds the symbols of Constants and Iotas.
void eval_node(const NodeEval& e, const DynMap& dyn_map);

}  // namespace luminal::native
