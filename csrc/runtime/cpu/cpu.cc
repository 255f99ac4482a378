// CpuRuntime: lower -> settle which parameters are panels (kernel/weight_layout.h) -> render
// C -> compile/cache/load; set_data of such a parameter packs it; execute evaluates the dims,
// plans the arena for them (once per set of values), binds every buffer and calls lm_run.
#include "runtime/cpu/cpu.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <sys/mman.h>

#include "codegen/c/matmul.h"
#include "codegen/c/renderer.h"
#include "codegen/c/schedule.h"
#include "core/errors.h"
#include "core/parallel_for.h"
#include "core/sizes.h"
#include "kernel/kernel_work.h"
#include "kernel/lower.h"
#include "kernel/quant_row_groups.h"
#include "runtime/cpu/cpu_kernel_cost.h"
#include "runtime/disk_cache.h"
#include "runtime/runtime_rules.h"

namespace luminal {

namespace {
constexpr int64_t kArenaAlign = 64;
}  // namespace

CpuRuntime::CpuRuntime(CpuOptions options) : options_(std::move(options)) {
  if (options_.threads < 1) {
    throw CompileError("cpu runtime: threads must be at least 1, got " +
                       std::to_string(options_.threads));
  }
  if (options_.vector_width != 0 && options_.vector_width != 8 && options_.vector_width != 16) {
    throw CompileError("cpu runtime: vector_width must be 8 or 16, got " +
                       std::to_string(options_.vector_width));
  }
  options_.vector_width = static_cast<int>(cpu_vector_width(options_.vector_width));
}

CpuRuntime::~CpuRuntime() { unload_program(loaded_); }

namespace {
// The program CpuRuntime of `vector_width`-float vectors runs for `graph` under `choice`, its
// schedules checked (codegen/c/schedule.h).
Program lower_for_cpu(const Graph& graph, const TuningChoice& choice, int64_t vector_width,
                      bool dot_products) {
  check_cpu_schedule(choice.params, choice.to_string(), vector_width, dot_products);
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    if (!n.schedule.empty()) {
      check_cpu_schedule(n.schedule, "node %" + std::to_string(id), vector_width, dot_products);
    }
  }
  Program program = lower_graph(graph, choice.params);
  std::vector<std::optional<PackedPanels>> wanted;
  for (const Kernel& k : program.kernels) wanted.push_back(gemm_panels(k, vector_width));
  settle_weight_layout(graph, program, wanted);
  return program;
}

// The schedule kernel `k` is priced under: its own, with packing off where the GEMM would read
// panels that the weight layout did not keep (B not a parameter: the kernel packs B itself, or
// reads a quantized B as stored). A kernel whose weight type has no row groups (Q6_K) is still
// priced at quant_rows 4 when its schedule says so: priced at 0, the search of a Q4_K_M model
// at budget 1 took a program that widens every Q4_K weight to f32 each decode step (1104
// kernels in place of 520; why the cost model ranks it first is not yet known).
ScheduleParams priced_schedule(const Kernel& k, int64_t vector_width) {
  ScheduleParams schedule = k.schedule;
  if (!k.panels && gemm_panels(k, vector_width)) {
    schedule.push_back({"pack_b", 0});
    schedule.push_back({"quant_rows", 0});
  }
  // a window that is no Winograd convolution is the window matmul (kernel/winograd.h); the
  // price reads the first winograd entry, so the schedule's own is dropped
  if (!k.matmul.winograd) {
    schedule.erase(std::remove_if(schedule.begin(), schedule.end(),
                                  [](const auto& p) { return p.first == kWinogradParam; }),
                   schedule.end());
  }
  return schedule;
}
}  // namespace

namespace {
// kernel_work of `program` (lowered for `width`-float vectors) as CpuRuntime runs it.
std::vector<KernelWork> program_kernel_work(const Program& program, const DynMap& dims,
                                            int threads, int64_t width) {
  std::vector<KernelWork> work = kernel_work(program, dims);
  for (size_t i = 0; i < work.size(); ++i) {
    const Kernel& k = program.kernels[i];
    const int64_t team = cpu_schedule(k, width).threads;
    work[i].parallel = team > 1 || (team == 0 && work[i].iterations >= kCpuParallelWork);
    if (work[i].parallel) {
      work[i].team = static_cast<int>(team > 1 ? std::min<int64_t>(team, threads) : threads);
    }
    if (!k.matmul.present || k.reduce.empty()) continue;
    DynMap env;
    for (size_t d = 0; d < program.dims.size(); ++d) {
      auto it = dims.find(program.dims[d]);
      env[program_dim(d).to_string()] = it == dims.end() ? 16 : it->second;
    }
    egraph::MatmulSize size;
    size.m = static_cast<double>(folded_rows(k).eval(env));  // batch loops run as rows
    size.n = static_cast<double>(k.loops[k.matmul.n_loop].extent.eval(env));
    size.k = static_cast<double>(k.reduce.back().extent.eval(env));
    size.batch = work[i].outputs / std::max(size.m * size.n, 1.0);
    size.b_parameter = k.panels.has_value();
    work[i].matmul_cycles = CpuKernelCost(width).matmul(size, priced_schedule(k, width));
  }
  return work;
}
}  // namespace

std::vector<KernelWork> cpu_kernel_work(const Graph& graph, const TuningChoice& choice,
                                        const DynMap& dims, int threads, int vector_width) {
  const int64_t width = cpu_vector_width(vector_width);
  return program_kernel_work(lower_for_cpu(graph, choice, width, true), dims, threads, width);
}

std::string cpu_render(const Graph& graph, const TuningChoice& choice, int vector_width,
                       bool dot_products) {
  const int64_t width = cpu_vector_width(vector_width);
  return CRenderer(width).render_split(lower_for_cpu(graph, choice, width, dot_products)).text();
}

std::shared_ptr<const Prepared> CpuRuntime::prepare(const Graph& graph,
                                                    const TuningChoice& choice) const {
  auto prepared = std::make_shared<CpuPrepared>();
  prepared->graph = graph;
  prepared->choice = choice;
  prepared->vector_width = options_.vector_width;
  prepared->dot_products = options_.dot_products;
  prepared->program = lower_for_cpu(graph, choice, options_.vector_width, options_.dot_products);
  prepared->units = CRenderer(options_.vector_width).render_split(prepared->program);
  prepared->source = prepared->units.text();
  prepared->fingerprint = hex128(prepared->source);
  return prepared;
}

const CpuPrepared* CpuRuntime::made_here(const Prepared& prepared) const {
  auto* cpu = dynamic_cast<const CpuPrepared*>(&prepared);
  if (cpu == nullptr || cpu->vector_width != options_.vector_width ||
      cpu->dot_products != options_.dot_products) {
    return nullptr;
  }
  return cpu;
}

std::vector<KernelWork> CpuRuntime::kernel_work(const Prepared& prepared,
                                                const DynMap& dims) const {
  const CpuPrepared* cpu = made_here(prepared);
  if (cpu == nullptr) {
    return cpu_kernel_work(prepared.graph, prepared.choice, dims, options_.threads,
                           options_.vector_width);
  }
  return program_kernel_work(cpu->program, dims, options_.threads, cpu->vector_width);
}

void CpuRuntime::compile(const Graph& graph, const TuningChoice& choice) {
  compile(*prepare(graph, choice));
}

void CpuRuntime::compile(const Prepared& prepared) {
  const CpuPrepared* cpu = made_here(prepared);
  if (cpu == nullptr) {
    compile(prepared.graph, prepared.choice);  // another runtime's: lowered for this one
    return;
  }
  LoadedProgram loaded = load_program(cpu->units, options_);
  unload_program(loaded_);
  loaded_ = loaded;
  graph_ = cpu->graph;
  fixed_reads_ = fixed_operand_reads(graph_);
  program_ = cpu->program;
  source_ = cpu->source;
  units_ = cpu->units.steps;
  liveness_ = buffer_liveness(program_);
  packed_.clear();
  for (const Kernel& k : program_.kernels) {
    if (k.panels) packed_[program_.buffers[k.values[k.matmul.b].buffer].node].panels = *k.panels;
  }
  for (const Kernel& k : program_.kernels) {
    for (BufferId b : k.reads()) {
      auto it = program_.buffers[b].panels ? packed_.end() : packed_.find(program_.buffers[b].node);
      if (it != packed_.end()) it->second.as_stored = true;
    }
  }
  clear_data();  // the arena too: sized by this program's plans, not an earlier one's
  compiled_ = true;
}

void CpuRuntime::precompile(const Prepared& prepared) const {
  if (const CpuPrepared* cpu = made_here(prepared)) compile_kernel_objects(cpu->units, options_);
}

std::string cpu_rewrite_rules(int64_t vector_width, bool dot_products) {
  return runtime_rules("cpu.rules") +
         runtime_rules(vector_width >= 16 ? "cpu_tiles_v16.rules" : "cpu_tiles_v8.rules") +
         (vector_width >= 16 && dot_products && cpu_has_bf16_dot() ? runtime_rules("cpu_bf16.rules")
                                                                   : "") +
         (vector_width >= 16 && dot_products && cpu_has_int8_dot() ? runtime_rules("cpu_int8.rules")
                                                                   : "") +
         (vector_width >= 16 && dot_products && cpu_has_amx() ? runtime_rules("cpu_amx.rules")
                                                              : "") +
         (vector_width >= 16 && dot_products && cpu_has_int8_dot() && cpu_has_amx_int8()
              ? runtime_rules("cpu_amx_int8.rules")
              : "");
}

std::string CpuRuntime::rewrite_rules() const {
  return cpu_rewrite_rules(options_.vector_width, options_.dot_products);
}

std::shared_ptr<const egraph::KernelCost> CpuRuntime::kernel_cost() const {
  return std::make_shared<CpuKernelCost>(options_.vector_width);
}

void CpuRuntime::set_data(NodeId input, const void* data, int64_t count, DType dtype) {
  check_set_data(graph_, compiled_, input, count, dtype);
  keep_input(input, data, count, dtype, nullptr);
}

void CpuRuntime::clear_data() {
  inputs_.clear();
  outputs_.clear();
  plan_valid_ = false;
  std::vector<uint8_t>().swap(arena_);  // a check's dims' temporaries are not the next run's
}

void CpuRuntime::set_data_borrowed(NodeId input, const void* data, int64_t count, DType dtype,
                                   std::shared_ptr<const void> owner) {
  check_set_data(graph_, compiled_, input, count, dtype);
  keep_input(input, data, count, dtype, std::move(owner));
}

namespace {
// `bytes` for the panels of `input`, 64-byte aligned; from kHugePage bytes on, in huge pages
// where the system grants them (the packing's first touch of 4 KB pages was two thirds of a
// 2048 x 8192 bf16 weight's 31 ms; and the GEMM's reads of a model's panels miss the TLB less).
constexpr size_t kHugePage = size_t{2} << 20;

std::unique_ptr<uint8_t, void (*)(void*)> allocate_panels(int64_t bytes, const std::string& input) {
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  const size_t align = size >= kHugePage ? kHugePage : static_cast<size_t>(kArenaAlign);
  const size_t rounded = (size + align - 1) / align * align;
  void* p = nullptr;
  if (posix_memalign(&p, align, rounded) != 0) {
    throw ShapeError("set_data: the panels of " + input + ": " + std::to_string(bytes) +
                     " bytes could not be allocated on this machine");
  }
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice: refused is fine
#endif
  return {static_cast<uint8_t*>(p), std::free};
}

// Lays `data` (a parameter's elements, of T: 4 or 2 bytes) out as `panels` in `out`
// (PackedPanels' layout, kernel/weight_layout.h): k block by k block, panel by panel, row by
// row, the panels split over `threads` threads. `step`: k a panel row holds (2 for pairs);
// `row(src, cols, k, rows, dst)` writes the `cols` columns at src of the panel row at k (of the
// block's `rows` k) into dst; pack_blocks pads the row with zeros to the panel's width.
template <typename T, typename Src, typename Row>
void pack_blocks(const PackedPanels& panels, const Src* data, T* out, int64_t step, int threads,
                 const Row& row) {
  const int64_t width = panels.width;
  const int64_t across = (panels.n + width - 1) / width;  // panels a k block
  const int64_t blocks = (panels.k + panels.depth - 1) / panels.depth;
  const int64_t full = (panels.depth + step - 1) / step;  // rows of a whole block's panel
  parallel_for(blocks * across, threads, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t k0 = t / across * panels.depth;
      const int64_t n0 = t % across * width;
      const int64_t rows = std::min(panels.depth, panels.k - k0);
      const int64_t cols = std::min(width, panels.n - n0);
      T* dst = out + (t / across * full * across + t % across * ((rows + step - 1) / step)) * width;
      const Src* block = data + panels.offset + k0 * panels.b_k + n0 * panels.b_n;
      for (int64_t k = 0; k < rows; k += step, dst += width) {
        row(block + k * panels.b_k, cols, k, rows, dst);
        std::fill(dst + cols, dst + width, T{0});
      }
    }
  });
}

template <typename T>
void pack_panels(const PackedPanels& panels, const T* data, T* out, int threads) {
  pack_blocks<T>(panels, data, out, 1, threads,
                 [&](const T* src, int64_t cols, int64_t, int64_t, T* dst) {
                   for (int64_t j = 0; j < cols; ++j) dst[j] = src[j * panels.b_n];
                 });
}

// The same for `pairs` panels of 16-bit elements: a row of a panel is `width` 32-bit words,
// each two k of one column (the lower k in the low half; past the block's last k, 0).
void pack_panel_pairs(const PackedPanels& panels, const uint16_t* data, uint32_t* out,
                      int threads) {
  pack_blocks<uint32_t>(panels, data, out, 2, threads,
                        [&](const uint16_t* lo, int64_t cols, int64_t k, int64_t rows,
                            uint32_t* dst) {
                          for (int64_t j = 0; j < cols; ++j) {
                            const uint32_t hi =
                                k + 1 < rows ? lo[panels.b_k + j * panels.b_n] : 0u;
                            dst[j] = static_cast<uint32_t>(lo[j * panels.b_n]) | hi << 16;
                          }
                        });
}
}  // namespace

void CpuRuntime::keep_input(NodeId input, const void* data, int64_t count, DType dtype,
                            std::shared_ptr<const void> owner) {
  InputData d;
  d.count = count;
  auto layout = packed_.find(input);
  if (layout != packed_.end()) {
    const PackedPanels& panels = layout->second.panels;
    if (panels.last_read() >= count) {
      throw ShapeError("set_data: " + input_desc(graph_, input) + " got " +
                       std::to_string(count) + " elements, fewer than its matmul reads");
    }
    d.panel_bytes = panels.bytes();
    d.panels = allocate_panels(d.panel_bytes, input_desc(graph_, input));
    uint8_t* out = d.panels.get();
    if (panels.row_groups) {
      pack_row_groups(panels, static_cast<const uint8_t*>(data), out, options_.threads);
    } else if (panels.pairs) {
      pack_panel_pairs(panels, static_cast<const uint16_t*>(data),
                       reinterpret_cast<uint32_t*>(out), options_.threads);
    } else if (dtype_size(dtype) == 4) {
      pack_panels(panels, static_cast<const uint32_t*>(data), reinterpret_cast<uint32_t*>(out),
                  options_.threads);
    } else {
      pack_panels(panels, static_cast<const uint16_t*>(data), reinterpret_cast<uint16_t*>(out),
                  options_.threads);
    }
    d.packed = out;
    if (!layout->second.as_stored) {
      inputs_[input] = std::move(d);
      return;
    }
  }
  d.bytes = storage_bytes(dtype, count);
  if (owner) {
    d.data = data;
    d.owner = std::move(owner);
  } else {
    d.copy.resize(static_cast<size_t>(d.bytes));
    if (!d.copy.empty()) std::memcpy(d.copy.data(), data, d.copy.size());
    d.data = d.copy.data();
  }
  inputs_[input] = std::move(d);
}

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void CpuRuntime::execute(const DynMap& dyn_map) { run(dyn_map, nullptr); }

std::vector<std::pair<NodeId, double>> CpuRuntime::kernel_times(const DynMap& dyn_map) {
  std::vector<double> seconds(program_.kernels.size(), 0.0);
  run(dyn_map, seconds.data());
  std::vector<std::pair<NodeId, double>> out;
  for (size_t i = 0; i < seconds.size(); ++i) out.push_back({program_.kernels[i].root, seconds[i]});
  return out;
}

void CpuRuntime::run(const DynMap& dyn_map, double* seconds) {
  Bound bound = bind_buffers(dyn_map);
  if (loaded_.index_fault) *loaded_.index_fault = 0;
  loaded_.run(bound.pointers.data(), bound.dims.data(), options_.threads, seconds, now_seconds);
  if (loaded_.index_fault && *loaded_.index_fault) throw_index_fault(graph_, dyn_map);
}

namespace {
// CpuRuntime's buffers, one kernel at a time, for check_kernels.
class CpuSteps : public KernelSteps {
 public:
  CpuSteps(const Program& program, const LoadedProgram& loaded,
           const std::vector<std::string>& units, std::vector<void*>& pointers,
           const std::vector<int64_t>& dims, const std::vector<int64_t>& numel, int threads)
      : program_(program), loaded_(loaded), units_(units), pointers_(pointers), dims_(dims),
        numel_(numel), threads_(threads) {}
  const Program& program() const override { return program_; }
  void run_kernel(int k) override {
    loaded_.step(k, pointers_.data(), dims_.data(), threads_);
  }
  uint8_t* host_bytes(BufferId b) override { return static_cast<uint8_t*>(pointers_[b]); }
  int64_t numel(BufferId b) const override { return numel_[b]; }
  std::string unit(int k) const override { return units_.at(k); }

 private:
  const Program& program_;
  const LoadedProgram& loaded_;
  const std::vector<std::string>& units_;
  std::vector<void*>& pointers_;
  const std::vector<int64_t>& dims_;
  const std::vector<int64_t>& numel_;
  int threads_;
};
}  // namespace

KernelCheckReport CpuRuntime::check_kernels(
    const DynMap& dyn_map, const std::map<NodeId, native::ElementSource>& inputs,
    const KernelCheckOptions& options) {
  Bound bound = bind_buffers(dyn_map);
  for (NodeId id : graph_.inputs()) {
    if (!inputs.count(id)) throw ShapeError("check_kernels: no check data for " + input_desc(graph_, id));
  }
  CpuSteps steps(program_, loaded_, units_, bound.pointers, bound.dims, bound.numel,
                 options_.threads);
  if (loaded_.index_fault) *loaded_.index_fault = 0;
  KernelCheckReport report = luminal::check_kernels(graph_, steps, inputs, dyn_map, options);
  if (loaded_.index_fault && *loaded_.index_fault) throw_index_fault(graph_, dyn_map);
  return report;
}

CpuRuntime::Bound CpuRuntime::bind_buffers(const DynMap& dyn_map) {
  check_compiled(compiled_, "execute");
  check_symbols(program_.dims, dyn_map);
  check_views_in_bounds(graph_, fixed_reads_, dyn_map, "execute");
  Bound bound;
  std::vector<int64_t>& dims = bound.dims;
  for (const std::string& s : program_.dims) dims.push_back(dyn_map.at(s));
  bound.numel = buffer_numels(graph_, program_, dyn_map, "execute");
  const std::vector<int64_t>& numel = bound.numel;
  std::vector<void*>& pointers = bound.pointers;
  pointers.assign(program_.buffers.size(), nullptr);
  for (const Buffer& b : program_.buffers) {
    if (b.role != BufferRole::kInput) continue;
    auto it = inputs_.find(b.node);
    check_input_count(graph_, b.node, it == inputs_.end() ? -1 : it->second.count, numel[b.id]);
    pointers[b.id] = const_cast<void*>(b.panels ? it->second.packed : it->second.data);
  }
  if (!plan_valid_ || dims != plan_dims_) {
    plan_valid_ = false;
    plan_ = plan_memory(program_, liveness_, numel);
    auto what = [] { return std::string("execute: the arena of temporary buffers"); };
    int64_t need = checked_add_bytes(plan_.arena_bytes, kArenaAlign, what);
    if (static_cast<int64_t>(arena_.size()) < need) allocate_bytes(arena_, need, what);
    plan_dims_ = dims;
    plan_valid_ = true;
  }
  uintptr_t base = reinterpret_cast<uintptr_t>(arena_.data());
  base = (base + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  for (const Buffer& b : program_.buffers) {
    if (b.role == BufferRole::kTemp) {
      pointers[b.id] = reinterpret_cast<void*>(base + static_cast<uintptr_t>(plan_.offsets[b.id]));
    } else if (b.role == BufferRole::kOutput) {
      HostBuffer& out = outputs_[b.node];
      const Node& n = graph_.node(b.node);
      out.dtype = b.dtype;
      out.shape.clear();
      for (const Expr& d : n.shape) out.shape.push_back(d.eval(dyn_map));
      allocate_bytes(out.bytes, numel[b.id] * static_cast<int64_t>(dtype_size(b.dtype)),
                     [&] { return "execute: " + node_desc(graph_, b.node, dyn_map); });
      pointers[b.id] = out.bytes.data();
    }
  }
  return bound;
}

bool CpuRuntime::reads_as_stored(NodeId input) const {
  auto it = inputs_.find(input);
  return it == inputs_.end() || it->second.data != nullptr || it->second.packed == nullptr;
}

CpuMemoryUse CpuRuntime::memory() const {
  CpuMemoryUse use;
  for (const auto& [node, d] : inputs_) {
    use.packed_input_bytes += d.panel_bytes;
    if (d.owner) {
      use.borrowed_input_bytes += d.bytes;
    } else {
      use.owned_input_bytes += d.bytes;
    }
  }
  use.arena_bytes = static_cast<int64_t>(arena_.size());
  for (const auto& [node, out] : outputs_) {
    use.output_bytes += static_cast<int64_t>(out.bytes.size());
  }
  return use;
}

const HostBuffer& CpuRuntime::get(NodeId output) const {
  return output_value(outputs_, output);
}

}  // namespace luminal
