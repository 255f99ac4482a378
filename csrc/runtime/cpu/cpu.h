// CpuRuntime: runs a graph as generated C kernels compiled by the system compiler (see
// runtime/cpu/cpu_compiler.h), with temporaries in one planned arena. Inputs may be borrowed
// (no copy) from the caller's memory; a parameter that GEMMs read as panels (pack_b) is laid
// out once, when its data is set, and its data let go. Changing a dim's value reuses the
// compiled code.
// Gather with an out-of-range index reads 0 (NativeRuntime raises instead).
#pragma once

#include <cstdlib>
#include <map>
#include <memory>

#include "kernel/weight_layout.h"
#include "kernel/kernel.h"
#include "kernel/kernel_work.h"
#include "kernel/memory_plan.h"
#include "runtime/cpu/cpu_compiler.h"
#include "runtime/kernel_check.h"
#include "runtime/runtime.h"
#include "runtime/view_bounds.h"

namespace luminal {

// The C that CpuRuntime of `vector_width` (CpuOptions::vector_width; 0: the machine's) would
// compile for `graph` under `choice`: every unit of the split program (CSplitProgram::text),
// rendered without compiling (codegen checks and diffs).
std::string cpu_render(const Graph& graph, const TuningChoice& choice, int vector_width = 0,
                       bool dot_products = true);

// The work of each kernel CpuRuntime would run for `graph` under `choice` (kernel/kernel_work.h),
// with `parallel` set where the kernel runs in an OpenMP region and `team` the threads it
// splits over, of a runtime of `threads` and `vector_width` (0: the machine's): the search's
// cost model reads it.
std::vector<KernelWork> cpu_kernel_work(const Graph& graph, const TuningChoice& choice,
                                        const DynMap& dims, int threads = 1,
                                        int vector_width = 0);

// What CpuRuntime::prepare makes: the program lowered for a vector width and dot-product
// setting, and its C, split into units as load_program compiles them.
struct CpuPrepared : Prepared {
  int64_t vector_width = 0;
  bool dot_products = true;
  Program program;
  CSplitProgram units;
  std::string source;  // units.text(): what the fingerprint keys, and CpuRuntime::source()
};

// CpuRuntime's lowering rules on a machine whose vectors hold `vector_width` floats
// (CpuOptions::vector_width): rules/cpu.rules, and the matmul tilings of
// that width (rules/cpu_tiles_v16.rules from 16 on, else rules/cpu_tiles_v8.rules), and from
// 16 on, on a machine with AVX512-BF16 (cpu_has_bf16_dot), the bf16 dot products
// (rules/cpu_bf16.rules), on one with AVX512-VNNI (cpu_has_int8_dot) the int8 GEMM
// (rules/cpu_int8.rules), and on one with AMX (cpu_has_amx) the bf16 GEMM on its tiles
// (rules/cpu_amx.rules) and with AMX-INT8 too the int8 GEMM on them (rules/cpu_amx_int8.rules),
// unless `dot_products` is off (CpuOptions::dot_products).
std::string cpu_rewrite_rules(int64_t vector_width, bool dot_products = true);

// The bytes a CpuRuntime holds, by kind. Each input is counted by the bytes it reads: as
// stored, as panels, or both.
struct CpuMemoryUse {
  int64_t borrowed_input_bytes = 0;  // inputs read in place from the caller's memory (mapped
                                     // weight files, numpy arrays), owned by the caller
  int64_t owned_input_bytes = 0;     // inputs the runtime copied (set_data)
  int64_t packed_input_bytes = 0;    // parameters laid out as a GEMM's panels (set_data of a
                                     // parameter a pack_b kernel reads), in place of their data
                                     // or, where other kernels read that, beside it
  int64_t arena_bytes = 0;           // the temporaries' arena as allocated (its largest plan)
  int64_t output_bytes = 0;          // the outputs of the last execute
};

class CpuRuntime : public Runtime {
 public:
  explicit CpuRuntime(CpuOptions options);
  ~CpuRuntime() override;
  CpuRuntime(const CpuRuntime&) = delete;
  CpuRuntime& operator=(const CpuRuntime&) = delete;

  std::string name() const override { return "cpu"; }
  using Runtime::compile;
  void compile(const Graph& graph, const TuningChoice& choice) override;
  // Lowers and renders once (CpuPrepared): the fingerprint is a key of the generated C.
  std::shared_ptr<const Prepared> prepare(const Graph& graph,
                                          const TuningChoice& choice) const override;
  void compile(const Prepared& prepared) override;
  // The kernel objects of `prepared` the compile cache lacks (compile_kernel_objects).
  void precompile(const Prepared& prepared) const override;
  std::vector<KernelWork> kernel_work(const Prepared& prepared,
                                      const DynMap& dims) const override;
  bool reports_kernel_work() const override { return true; }
  // The kernel-level alternatives (matmul tilings) come as rules, those of this machine's
  // vector width (cpu_rewrite_rules); the program-wide tuning space is the default only.
  std::string rewrite_rules() const override;
  // The register-blocking estimate of its matmul tilings (runtime/cpu/cpu_kernel_cost.h).
  std::shared_ptr<const egraph::KernelCost> kernel_cost() const override;
  void set_data(NodeId input, const void* data, int64_t count, DType dtype) override;
  void clear_data() override;
  // Uses `data` in place until the next set_data of `input`; `owner` keeps it alive.
  void set_data_borrowed(NodeId input, const void* data, int64_t count, DType dtype,
                         std::shared_ptr<const void> owner);
  void execute(const DynMap& dyn_map) override;
  bool can_time_kernels() const override { return true; }
  std::vector<std::pair<NodeId, double>> kernel_times(const DynMap& dyn_map) override;
  const HostBuffer& get(NodeId output) const override;
  bool can_check_kernels() const override { return true; }
  KernelCheckReport check_kernels(const DynMap& dyn_map,
                                  const std::map<NodeId, native::ElementSource>& inputs,
                                  const KernelCheckOptions& options) override;

  const CpuOptions& options() const { return options_; }
  const std::string& source() const { return source_; }       // the generated C, all units
  const Program& program() const { return program_; }
  const std::string& source_path() const { return loaded_.source_path; }
  bool compiled_fresh() const { return loaded_.compiled; }   // false: the cache had it
  const CompileStats& last_compile_stats() const { return loaded_.stats; }
  int64_t arena_bytes() const { return plan_.arena_bytes; }
  CpuMemoryUse memory() const;
  // Whether the data last set for `input` is read as it is (held, borrowed or copied), not
  // only through the panels it was laid out in (false: the caller's memory is not read again).
  bool reads_as_stored(NodeId input) const;

 private:
  struct InputData {
    const void* data = nullptr;          // as stored; null where only panels are read
    int64_t count = 0;
    int64_t bytes = 0;                   // held as stored: count elements of its dtype, or 0
    std::vector<uint8_t> copy;           // owned data (set_data)
    std::shared_ptr<const void> owner;   // borrowed data (set_data_borrowed)
    const void* packed = nullptr;        // the panels of packed_ (`panels`)
    int64_t panel_bytes = 0;
    std::unique_ptr<uint8_t, void (*)(void*)> panels{nullptr, std::free};  // (each element
                                         // written by the packing: not zeroed first)
  };
  struct Layout {
    PackedPanels panels;
    bool as_stored = false;  // another kernel reads the data as stored too
  };
  // Keeps `data` (count elements of `dtype`) as `input`'s, borrowed where `owner` is set, and
  // lays it out as its panels, where packed_ has them, letting the data go unless a kernel
  // reads it as stored too.
  void keep_input(NodeId input, const void* data, int64_t count, DType dtype,
                  std::shared_ptr<const void> owner);
  void run(const DynMap& dyn_map, double* seconds);  // execute; seconds as in kernel_times
  // Every buffer's address for a run under `dyn_map` (inputs, the arena planned, outputs
  // allocated), the dims' values and the buffers' element counts.
  struct Bound {
    std::vector<void*> pointers;
    std::vector<int64_t> dims;
    std::vector<int64_t> numel;
  };
  Bound bind_buffers(const DynMap& dyn_map);
  // `prepared` as this runtime's CpuPrepared (lowered for its vector width and dot-product
  // setting), or null: another runtime's, which is lowered again.
  const CpuPrepared* made_here(const Prepared& prepared) const;

  CpuOptions options_;
  Graph graph_;
  std::vector<ViewRead> fixed_reads_;  // checked at each execute (view_bounds.h)
  bool compiled_ = false;
  Program program_;
  Liveness liveness_;
  std::string source_;
  std::vector<std::string> units_;  // the unit each kernel calls (CSplitProgram::steps)
  LoadedProgram loaded_;
  std::map<NodeId, InputData> inputs_;
  std::map<NodeId, Layout> packed_;  // parameters read as panels (Kernel::panels)
  std::map<NodeId, HostBuffer> outputs_;
  // Cached plan for the last dim values.
  std::vector<int64_t> plan_dims_;
  bool plan_valid_ = false;
  MemoryPlan plan_;
  std::vector<uint8_t> arena_;
};

}  // namespace luminal
