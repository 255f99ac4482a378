// The kernel-by-kernel check of a compiled program (the search's independent reference at
// any size): the program runs one kernel at a time on the check inputs, and after each kernel
// its output is compared, at sampled elements, with the interpreter's value of the kernel's
// root node computed from the very operands the kernel read (native/element_eval.h), so each
// kernel answers for its own code (lowering, renderer, compiler) and errors do not compound
// through a deep network. Beside the samples, every element of each output is checked to be
// written (the buffer is filled with a poison pattern before its kernel), and every operand a
// kernel reads to hold what its own kernel wrote (a checksum, so a kernel writing past its
// buffer or a memory plan sharing live bytes shows). The work grows with the samples, not with
// the tensors: a kernel whose code a kernel checked before runs (the same unit) gets fewer.
// What is compared and how closely is the caller's (python/luminal/search/check.py).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernel/kernel.h"
#include "runtime/native/element_eval.h"

namespace luminal {

struct KernelCheckOptions {
  int samples = 48;           // elements sampled per kernel whose code was not checked yet
  int repeat_samples = 4;     // per kernel running code already checked
  int64_t step_budget = 1 << 21;  // interpreter steps per kernel past which no more samples
                                  // are drawn (the first two are always)
  uint64_t seed = 0;
  // The graph as written, with per node of the program's graph the node of `original` in its
  // e-class (-1: none; egraph::SearchSpace::original_nodes): where the kernel's code is new (a
  // model's repeated layers: the first), its samples are computed by the original's formula
  // for the root's class, from the same operands (those with an original node) and inputs,
  // instead of the program graph's own: a wrong rewrite shows at the kernel it changed, and a
  // deep network's rounding does not compound as it would end to end. Null: not used.
  const Graph* original = nullptr;
  std::vector<NodeId> original_of;
  // The interpreter steps the first sample of the original's formula may take: past it (a
  // formula reaching behind the kernel's operands, to tensors the program keeps in a
  // rewritten form) the kernel is sampled on the program's graph instead.
  int64_t original_step_limit = 1 << 16;
  // Kernels checked already on these inputs (KernelCheckReport::checked of earlier programs
  // of one search): a kernel of the same code computing the same class of the graph as
  // written is sampled as a repeat.
  std::set<std::string> checked;
  // Seconds the kernels may run in all (the checker's own work not counted) before the check
  // stops after the kernel that passed them: a search candidate already slower than one
  // timed before has lost, and is checked no further. 0: no limit.
  double stop_after_seconds = 0;
  // False: a kernel running code run before in this program (a model's later layers) is not
  // run; its output gets stand-in values (finite, moderate: fill_stand_in) for the kernels
  // after it. A second binding of the symbols needs each code's run-time branches taken once,
  // not every layer's GEMMs run again (0.9 of a 1B model's 1.3 s there).
  bool run_repeats = true;
};

// One kernel's verdict.
struct KernelSamples {
  int kernel = -1;                 // position in the program
  NodeId root = -1;                // the node it computes
  DType dtype = DType::F32;        // the root's
  std::vector<int64_t> elements;   // flat indices sampled
  std::vector<double> got, want;   // the kernel's value and the interpreter's, per element
  std::string problem;             // a fault found beside the samples, "" for none
  // The node of the graph as written whose formula gave `want` (-1: the program graph's root).
  NodeId original = -1;
};

struct KernelCheckReport {
  std::vector<KernelSamples> kernels;  // in execution order
  int64_t steps = 0;                   // the interpreter's work, all kernels
  int distinct = 0;                    // kernels whose code was checked first here
  int skipped = 0;                     // repeats not run (KernelCheckOptions::run_repeats)
  int classes_checked = 0;             // kernels sampled on the graph as written
  double kernel_seconds = 0;           // the run time of the kernels run
  bool stopped = false;                // past stop_after_seconds before the last kernel
  // Each kernel as "code unit@original node of its class" (-1: none): for options.checked.
  std::set<std::string> checked;
};

// What a runtime lends the check: its program, one kernel run at a time (kernels before it
// have run), and each buffer's bytes on the host as stored (read after a kernel, written
// before one: the poison).
class KernelSteps {
 public:
  virtual ~KernelSteps() = default;
  virtual const Program& program() const = 0;
  virtual void run_kernel(int k) = 0;
  virtual uint8_t* host_bytes(BufferId b) = 0;
  // Write-back after host_bytes was written (a device copy); nothing on the host itself.
  virtual void commit(BufferId b) { (void)b; }
  virtual int64_t numel(BufferId b) const = 0;
  // Names the code kernel k runs: kernels that share it run the same code.
  virtual std::string unit(int k) const = 0;
};

// Checks every kernel of `steps`' program in order; `inputs`: every Input node of `graph`
// (the program's graph) as stored, the interpreter's data (never the runtime's copy: its
// packed panels are checked too). A ShapeError where the interpreter finds a Gather's index
// out of range.
KernelCheckReport check_kernels(const Graph& graph, KernelSteps& steps,
                                const std::map<NodeId, native::ElementSource>& inputs,
                                const DynMap& dims, const KernelCheckOptions& options);

}  // namespace luminal
