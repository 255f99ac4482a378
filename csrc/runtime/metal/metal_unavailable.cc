// MetalRuntime on a build without Metal (every system but Apple's): construction throws
// DeviceError, so the other members, defined only so the class links, are never reached.
// CMake globs every csrc/runtime/**/*.cc into the runtime library on every system, hence the
// guard; on Apple builds metal_runtime.mm defines the class instead.
#ifndef __APPLE__

#include "core/errors.h"
#include "runtime/metal/metal.h"

namespace luminal {

struct MetalRuntime::Impl {};

bool metal_available() { return false; }

MetalRuntime::MetalRuntime(const MetalOptions& options) {
  (void)options;
  throw DeviceError(
      "Metal: the Metal runtime runs only on macOS with Apple GPUs; this build has no Metal "
      "(the MSL renderer and its emulator still work: luminal.metal.render)");
}

MetalRuntime::~MetalRuntime() = default;

void MetalRuntime::compile(const Graph& graph, const TuningChoice& choice) {
  (void)graph;
  (void)choice;
}

std::shared_ptr<const Prepared> MetalRuntime::prepare(const Graph& graph,
                                                      const TuningChoice& choice) const {
  return Runtime::prepare(graph, choice);
}

std::vector<TuningChoice> MetalRuntime::tuning_space(const Graph& graph) const {
  (void)graph;
  return {fixed_};
}

std::string MetalRuntime::rewrite_rules() const { return ""; }

void MetalRuntime::set_data(NodeId input, const void* data, int64_t count, DType dtype) {
  (void)input;
  (void)data;
  (void)count;
  (void)dtype;
}

void MetalRuntime::clear_data() {}

void MetalRuntime::execute(const DynMap& dyn_map) { (void)dyn_map; }

const HostBuffer& MetalRuntime::get(NodeId output) const {
  static const HostBuffer kNone;
  (void)output;
  return kNone;
}

double MetalRuntime::benchmark(const DynMap& dyn_map, int iters) {
  (void)dyn_map;
  (void)iters;
  return 0.0;
}

std::string MetalRuntime::device_name() const { return ""; }

const std::string& MetalRuntime::source() const {
  static const std::string kNone;
  return kNone;
}

}  // namespace luminal

#endif  // __APPLE__
