// The runtime interface's shared pieces: HostBuffer and TuningChoice helpers, and the input
// and output checks every runtime makes.
#include "runtime/runtime.h"

#include "core/errors.h"

namespace luminal {

int64_t HostBuffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TuningChoice::to_string() const {
  return params.empty() ? "default" : schedule_to_string(params);
}

void Runtime::execute_carrying(const DynMap& dyn_map,
                               const std::vector<std::pair<NodeId, NodeId>>& carries) {
  execute(dyn_map);
  for (const auto& [output, input] : carries) {
    const HostBuffer& value = get(output);
    set_data(input, value.bytes.data(), value.numel(), value.dtype);
  }
}

std::string input_desc(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  return "input '" + n.name + "' of shape " + dims_to_string(n.shape) + " and dtype " +
         dtype_name(n.dtype);
}

void check_compiled(bool compiled, const char* fn) {
  if (!compiled) throw ShapeError(std::string(fn) + ": the runtime has no compiled graph");
}

void check_symbols(const std::vector<std::string>& symbols, const DynMap& dyn_map) {
  for (const std::string& s : symbols) {
    if (!dyn_map.count(s)) {
      throw ShapeError("execute: symbol '" + s + "' has no value; set it with cx.set_dim('" +
                       s + "', n)");
    }
  }
}

void check_input_count(const Graph& graph, NodeId input, int64_t count, int64_t expected) {
  if (count < 0) throw ShapeError("execute: no data set for " + input_desc(graph, input));
  if (count != expected) {
    throw ShapeError("execute: " + input_desc(graph, input) + " needs " +
                     std::to_string(expected) + " elements with the current dims, but its data " +
                     "has " + std::to_string(count));
  }
}

void check_set_data(const Graph& graph, bool compiled, NodeId input, int64_t count,
                    DType dtype) {
  check_compiled(compiled, "set_data");
  if (input < 0 || static_cast<size_t>(input) >= graph.size() ||
      graph.node(input).op != OpKind::Input) {
    throw ShapeError("set_data: node %" + std::to_string(input) + " is not an input");
  }
  const Node& n = graph.node(input);
  if (dtype != n.dtype) {
    throw DTypeError("set_data: " + input_desc(graph, input) + " got data of dtype " +
                     dtype_name(dtype));
  }
  if (auto expected = product(n.shape).try_const(); expected && *expected != count) {
    throw ShapeError("set_data: " + input_desc(graph, input) + " needs " +
                     std::to_string(*expected) + " elements, got " + std::to_string(count));
  }
}

const HostBuffer& output_value(const std::map<NodeId, HostBuffer>& outputs, NodeId output) {
  auto it = outputs.find(output);
  if (it == outputs.end()) {
    throw ShapeError("get: output %" + std::to_string(output) +
                     " has no value; call execute first");
  }
  return it->second;
}

}  // namespace luminal
