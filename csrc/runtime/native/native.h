// NativeRuntime: a plain interpreter of the HLIR, the executable definition of every op and
// the oracle other runtimes are tested against. Correctness first; linear in tensor sizes.
// Floats compute in double and round to their storage dtype on every store; Int computes in
// int64 and wraps to i32.
#pragma once

#include <map>

#include "runtime/runtime.h"
#include "runtime/view_bounds.h"

namespace luminal {

class NativeRuntime : public Runtime {
 public:
  std::string name() const override { return "native"; }
  using Runtime::compile;
  void compile(const Graph& graph, const TuningChoice& choice) override;
  void set_data(NodeId input, const void* data, int64_t count, DType dtype) override;
  void clear_data() override;
  void execute(const DynMap& dyn_map) override;
  const HostBuffer& get(NodeId output) const override;

  bool compiled() const { return compiled_; }
  const Graph& graph() const { return graph_; }

 private:
  void check_ready(const DynMap& dyn_map) const;
  Graph graph_;
  std::vector<ViewRead> fixed_reads_;  // checked at each execute (view_bounds.h)
  bool compiled_ = false;
  std::vector<NodeId> order_;
  std::vector<int> last_use_;  // per node: position in order_ of its last reader
  std::map<NodeId, HostBuffer> inputs_;
  std::map<NodeId, HostBuffer> outputs_;
};

}  // namespace luminal
