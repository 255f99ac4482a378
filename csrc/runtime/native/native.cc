// The reference interpreter. Each node is evaluated in topological order into a dense
// buffer (native/eval_node.h); inputs are read through their views with concrete
// (dyn_map-evaluated) strides. Buffers are freed after their last reader.
#include "runtime/native/native.h"

#include <cstring>

#include "core/errors.h"
#include "core/sizes.h"
#include "runtime/native/eval_node.h"

namespace luminal {

void NativeRuntime::compile(const Graph& graph, const TuningChoice& choice) {
  if (!choice.params.empty()) {
    throw CompileError("native runtime has no tuning parameters, got " + choice.to_string());
  }
  graph_ = graph;
  fixed_reads_ = fixed_operand_reads(graph_);
  order_ = graph_.topo_order();
  last_use_.assign(graph_.size(), -1);
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    for (const Edge& e : graph_.node(order_[pos]).inputs) last_use_[e.node] = static_cast<int>(pos);
  }
  inputs_.clear();
  outputs_.clear();
  compiled_ = true;
}

void NativeRuntime::set_data(NodeId input, const void* data, int64_t count, DType dtype) {
  check_set_data(graph_, compiled_, input, count, dtype);
  HostBuffer b;
  b.dtype = dtype;
  b.shape = {count};
  b.bytes.resize(static_cast<size_t>(storage_bytes(dtype, count)));
  if (count > 0) std::memcpy(b.bytes.data(), data, b.bytes.size());
  inputs_[input] = std::move(b);
}

void NativeRuntime::clear_data() {
  inputs_.clear();
  outputs_.clear();
}

void NativeRuntime::check_ready(const DynMap& dyn_map) const {
  check_compiled(compiled_, "execute");
  check_symbols(graph_.symbols(), dyn_map);
  check_views_in_bounds(graph_, fixed_reads_, dyn_map, "execute");
  for (NodeId id : order_) {
    const Node& n = graph_.node(id);
    if (n.op != OpKind::Input) continue;
    auto it = inputs_.find(id);
    int64_t count = it == inputs_.end() ? -1 : it->second.numel();
    check_input_count(graph_, id, count, product(n.shape).eval(dyn_map));
  }
}

void NativeRuntime::execute(const DynMap& dyn_map) {
  check_ready(dyn_map);
  std::vector<HostBuffer> values(graph_.size());
  outputs_.clear();
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    NodeId id = order_[pos];
    const Node& n = graph_.node(id);
    std::vector<int64_t> shape = native::evaluate(n.shape, dyn_map);
    std::vector<native::ConcreteView> views;
    for (const Edge& e : n.inputs) views.push_back(native::evaluate(e.view, dyn_map));
    HostBuffer out = native::make_buffer(
        n.dtype, shape, [&] { return "execute: " + node_desc(graph_, id, dyn_map); });
    if (n.op == OpKind::Input) {
      out.bytes = inputs_.at(id).bytes;
    } else {
      native::NodeEval e{n, id, shape, views, {}, out};
      for (const Edge& edge : n.inputs) e.in.push_back(&values[edge.node]);
      native::eval_node(e, dyn_map);
    }
    if (n.op == OpKind::Output) {
      outputs_[id] = std::move(out);
    } else {
      values[id] = std::move(out);
    }
    for (const Edge& e : n.inputs) {
      if (last_use_[e.node] == static_cast<int>(pos)) values[e.node] = HostBuffer{};
    }
  }
}

const HostBuffer& NativeRuntime::get(NodeId output) const {
  return output_value(outputs_, output);
}

}  // namespace luminal
