// The runtime interface's shared pieces: HostBuffer and TuningChoice helpers, and the input
// and output checks every runtime makes.
#include "runtime/runtime.h"

#include "core/errors.h"
#include "core/sizes.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_check.h"

namespace luminal {

int64_t HostBuffer::numel() const {
  return checked_numel(shape, [&] { return std::string("a host buffer of ") + dtype_name(dtype); });
}

std::string TuningChoice::to_string() const {
  return params.empty() ? "default" : schedule_to_string(params);
}

std::shared_ptr<const Prepared> Runtime::prepare(const Graph& graph,
                                                 const TuningChoice& choice) const {
  auto prepared = std::make_shared<Prepared>();
  prepared->graph = graph;
  prepared->choice = choice;
  prepared->fingerprint = hex128(graph.to_string() + "\n" + choice.to_string());
  return prepared;
}

void Runtime::execute_carrying(const DynMap& dyn_map,
                               const std::vector<std::pair<NodeId, NodeId>>& carries) {
  execute(dyn_map);
  for (const auto& [output, input] : carries) {
    const HostBuffer& value = get(output);
    set_data(input, value.bytes.data(), value.numel(), value.dtype);
  }
}

KernelCheckReport Runtime::check_kernels(const DynMap& dyn_map,
                                        const std::map<NodeId, native::ElementSource>& inputs,
                                        const KernelCheckOptions& options) {
  (void)dyn_map;
  (void)inputs;
  (void)options;
  throw CompileError(name() + " runtime: no kernel-by-kernel check");
}

std::string input_desc(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  return "input '" + n.name + "' of shape " + dims_to_string(n.shape) + " and dtype " +
         dtype_name(n.dtype);
}

std::string node_desc(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  if (n.op == OpKind::Input) return input_desc(graph, id);
  std::string what = n.op == OpKind::Output ? std::string("output") : op_name(n.op);
  return what + " %" + std::to_string(id) + " of shape " + dims_to_string(n.shape) +
         " and dtype " + dtype_name(n.dtype);
}

std::string node_desc(const Graph& graph, NodeId id, const DynMap& dyn_map) {
  std::vector<std::string> names = product(graph.node(id).shape).symbols();
  std::string out = node_desc(graph, id);
  for (size_t k = 0; k < names.size(); ++k) {
    auto it = dyn_map.find(names[k]);
    std::string value = it == dyn_map.end() ? "?" : std::to_string(it->second);
    out += (k ? ", " : " with ") + names[k] + " = " + value;
  }
  return out;
}

std::vector<int64_t> buffer_numels(const Graph& graph, const Program& program,
                                   const DynMap& dyn_map, const char* fn) {
  std::vector<int64_t> numel(program.buffers.size());
  std::vector<int64_t> dims;
  for (const Buffer& b : program.buffers) {
    const Node& n = graph.node(b.node);
    dims.clear();
    for (const Expr& d : n.shape) dims.push_back(d.eval(dyn_map));
    auto what = [&] { return std::string(fn) + ": " + node_desc(graph, b.node, dyn_map); };
    numel[b.id] = checked_numel(dims, what);
    checked_bytes(numel[b.id], b.dtype, what);
  }
  return numel;
}

void throw_index_fault(const Graph& graph, const DynMap& dyn_map) {
  std::string gathers;
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    if (n.op != OpKind::Gather) continue;
    const ShapeTracker& data = n.inputs[0].view;
    gathers += std::string(gathers.empty() ? "" : ", ") + "Gather %" + std::to_string(id) +
               " of data " + dims_to_string(data.dims) + " (" +
               std::to_string(product(data.dims).eval(dyn_map)) + " elements)";
  }
  throw ShapeError("execute: Gather: an index is out of range for its data (" + gathers +
                   "); the outputs of this run are not valid");
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
