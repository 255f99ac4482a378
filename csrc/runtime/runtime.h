// The interface every runtime implements: compile a graph, take input data, execute with a
// dyn_map, hand back outputs. Data crosses as HostBuffer (bytes in the dtype's storage).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/symbolic.h"
#include "ir/graph.h"
#include "kernel/kernel.h"
#include "kernel/kernel_work.h"

namespace luminal {

namespace egraph {
struct KernelCost;
}  // namespace egraph
namespace native {
struct ElementSource;
}  // namespace native
struct KernelCheckOptions;  // runtime/kernel_check.h
struct KernelCheckReport;

// A dense row-major host tensor in a dtype's storage format (bf16/f16 as 16-bit words).
struct HostBuffer {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numel() const;
};

// One point of a runtime's kernel-level choices for a whole program (tile sizes, vector
// width, ...): a ScheduleParams (ir/graph.h) under every kernel's own, node schedule, read
// through the runtime's typed view (CpuSchedule, CudaSchedule). Empty = the runtime's default.
struct TuningChoice {
  ScheduleParams params;

  std::string to_string() const;  // "(tile_m 4) (tile_n 16)", or "default"
};

// A search candidate lowered once (Runtime::prepare): the graph and choice, the fingerprint of
// what the runtime would run for them (two candidates of one fingerprint run alike, so the
// search tries one), and, in a runtime's own subclass, what it generated, which
// compile(Prepared) then compiles without lowering again.
struct Prepared {
  virtual ~Prepared() = default;
  Graph graph;
  TuningChoice choice;
  std::string fingerprint;  // hex; equal where the code run is equal
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;
  // Takes a snapshot of the graph; later edits of the graph need a new compile.
  virtual void compile(const Graph& graph) { compile(graph, TuningChoice{}); }
  virtual void compile(const Graph& graph, const TuningChoice& choice) = 0;
  // `graph` under `choice`, lowered once for the search to fingerprint, price and compile.
  // Here the graph's text and the choice are the fingerprint, and nothing is generated.
  virtual std::shared_ptr<const Prepared> prepare(const Graph& graph,
                                                  const TuningChoice& choice) const;
  // Compiles what prepare() made (of this runtime: another runtime's is compiled afresh).
  virtual void compile(const Prepared& prepared) { compile(prepared.graph, prepared.choice); }
  // Does ahead, on any thread, what compile(prepared) would take longest on and can keep
  // (a compiler's objects in a cache), so that its compile later is short; changes nothing
  // the runtime runs. Here nothing: compile does it all.
  virtual void precompile(const Prepared& prepared) const { (void)prepared; }
  // The work of each kernel a prepared program runs (kernel/kernel_work.h), for the search's
  // cost model, with `dims` bound; empty where the runtime reports none (reports_kernel_work).
  virtual std::vector<KernelWork> kernel_work(const Prepared& prepared,
                                              const DynMap& dims) const {
    (void)prepared;
    (void)dims;
    return {};
  }
  virtual bool reports_kernel_work() const { return false; }
  // The kernel-level choices worth timing for this graph; the search tries each.
  virtual std::vector<TuningChoice> tuning_space(const Graph& graph) const {
    (void)graph;
    return {TuningChoice{}};
  }
  // Rewrite rules this runtime adds to the e-graph, in the rule language (csrc/egraph).
  virtual std::string rewrite_rules() const { return ""; }
  // How the search's cost model prices the kernels this runtime's schedules build
  // (egraph/cost.h); null: the model's generic estimate.
  virtual std::shared_ptr<const egraph::KernelCost> kernel_cost() const { return nullptr; }
  // Copies `count` elements of `input`'s dtype from `data`.
  virtual void set_data(NodeId input, const void* data, int64_t count, DType dtype) = 0;
  virtual void execute(const DynMap& dyn_map) = 0;
  // Executes, then makes the value of each (output, input) pair's output the input's data for
  // the next execute: the state a program updates (parameters, optimizer moments, a step
  // count) stays in the runtime across executes, never passing through the caller. Each
  // carry is one set_data from the output's host buffer (a copy inside the runtime; the
  // output stays readable).
  void execute_carrying(const DynMap& dyn_map,
                        const std::vector<std::pair<NodeId, NodeId>>& carries);
  // The value of an Output node after execute.
  virtual const HostBuffer& get(NodeId output) const = 0;
  // Forgets every input's data and every output, as a fresh compile leaves them (the search
  // calls it so a program it adopts keeps none of its random check inputs).
  virtual void clear_data() = 0;
  // Whether kernel_times works on this runtime.
  virtual bool can_time_kernels() const { return false; }
  // Executes once (data set as for execute) and returns, per kernel of the compiled program,
  // the HLIR node it computes and the seconds it took. The search uses it to combine the
  // fastest alternative of every node into one program.
  virtual std::vector<std::pair<NodeId, double>> kernel_times(const DynMap& dyn_map) {
    (void)dyn_map;
    return {};
  }
  // Whether check_kernels works on this runtime.
  virtual bool can_check_kernels() const { return false; }
  // Runs the compiled program kernel by kernel on the data set as for execute, checking each
  // kernel against the interpreter (runtime/kernel_check.h); `inputs`: every input of the
  // compiled graph as stored. Leaves the outputs as execute does.
  virtual KernelCheckReport check_kernels(const DynMap& dyn_map,
                                          const std::map<NodeId, native::ElementSource>& inputs,
                                          const KernelCheckOptions& options);
};

// Shared by the runtimes' set_data / execute / get, so every runtime words its errors alike.
// "input 'x' of shape (2, 3) and dtype f32"
std::string input_desc(const Graph& graph, NodeId id);
// Any node alike: an input as input_desc, else "output %5 of shape (s, s) and dtype f32".
std::string node_desc(const Graph& graph, NodeId id);
// node_desc with the values its shape's symbols have in `dyn_map`: "... with s = 7".
std::string node_desc(const Graph& graph, NodeId id, const DynMap& dyn_map);
// The element count of every buffer of `program` under `dyn_map`, each checked in elements
// and in bytes (core/sizes.h): a negative dim or a size that does not fit is a ShapeError
// naming the tensor (`fn`: "execute").
std::vector<int64_t> buffer_numels(const Graph& graph, const Program& program,
                                   const DynMap& dyn_map, const char* fn);
// set_data's checks: a compiled graph, an Input node, its dtype, and its element count where
// the shape is known. Throws ShapeError / DTypeError.
void check_set_data(const Graph& graph, bool compiled, NodeId input, int64_t count,
                    DType dtype);
// The value of Output `output` in a runtime's outputs; ShapeError before execute.
const HostBuffer& output_value(const std::map<NodeId, HostBuffer>& outputs, NodeId output);
// execute's checks: a compiled graph, a value for every symbol in `symbols`, and for an input,
// data of the element count its shape has under the dims (`count` < 0: no data set).
void check_compiled(bool compiled, const char* fn);
// After a run whose index fault flag is set (codegen kIndexFault): a ShapeError naming the
// graph's Gathers, as NativeRuntime's error for an index out of range reads.
[[noreturn]] void throw_index_fault(const Graph& graph, const DynMap& dyn_map);
void check_symbols(const std::vector<std::string>& symbols, const DynMap& dyn_map);
void check_input_count(const Graph& graph, NodeId input, int64_t count, int64_t expected);

}  // namespace luminal
