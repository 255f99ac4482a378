// MetalRuntime: runs a graph on an Apple GPU. compile() lowers and renders MSL (metal_plan.h),
// builds one MTLLibrary per program and one pipeline per kernel function; execute() encodes
// every kernel into one command buffer over shared (unified) memory: inputs in their own
// buffers, temps and outputs in one arena from the memory plan. Pure C++ so that every build
// can include it: the Objective-C++ lives in metal_runtime.mm (Apple builds only); elsewhere
// metal_unavailable.cc defines the class with a constructor that throws DeviceError.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace luminal {

// Options from Python (no environment lookups in C++).
struct MetalOptions {
  std::string cache_dir;  // compiled pipelines (MTLBinaryArchive files); "" keeps none
  int device = 0;         // index among the system's Metal devices
};

// Whether this build has the Metal runtime and the system has a device it can run on.
bool metal_available();

class MetalRuntime : public Runtime {
 public:
  // Throws DeviceError without Metal (another OS, no device, an unsupported GPU).
  explicit MetalRuntime(const MetalOptions& options);
  ~MetalRuntime() override;
  MetalRuntime(const MetalRuntime&) = delete;
  MetalRuntime& operator=(const MetalRuntime&) = delete;

  std::string name() const override { return "metal"; }
  using Runtime::compile;
  void compile(const Graph& graph, const TuningChoice& choice) override;
  // Fingerprinted by the rendered MSL and the choice; compile(Prepared) renders again.
  std::shared_ptr<const Prepared> prepare(const Graph& graph,
                                          const TuningChoice& choice) const override;
  // The kernel-level alternatives come as rules (metal_rewrite_rules); the program-wide tuning
  // space is the fixed params (or the default).
  std::vector<TuningChoice> tuning_space(const Graph& graph) const override;
  std::string rewrite_rules() const override;
  void set_data(NodeId input, const void* data, int64_t count, DType dtype) override;
  void clear_data() override;
  void execute(const DynMap& dyn_map) override;
  const HostBuffer& get(NodeId output) const override;

  // Fixes tuning params (e.g. metal_matmul 2): they override every compile's choice and every
  // node's schedule, and tuning_space offers only them. Checked at compile.
  void fix_choice(const TuningChoice& choice) { fixed_ = choice; }

  // Milliseconds per run of the program: the median over `iters` runs of the command buffer's
  // GPU start-to-end time, after one run that checks the inputs.
  double benchmark(const DynMap& dyn_map, int iters);
  std::string device_name() const;
  const std::string& source() const;  // the MSL of the compiled program

 private:
  struct Impl;  // the Metal objects and the compiled program (metal_runtime.mm)
  std::unique_ptr<Impl> impl_;
  TuningChoice fixed_;
};

}  // namespace luminal
