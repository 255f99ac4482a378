// CudaRuntime: device setup, compile (lower, render, NVRTC with the CUBIN cache, load),
// inputs in their own allocations, temps and outputs in one arena, the program captured as a
// CUDA graph per set of dim values and replayed, outputs copied back on first read.
#include "runtime/cuda/cuda.h"

#include <algorithm>
#include <cstring>

#include "core/errors.h"
#include "kernel/lower.h"
#include "runtime/cuda/cuda_arena.h"
#include "runtime/cuda/cuda_kernel_cost.h"
#include "runtime/disk_cache.h"
#include "runtime/runtime_rules.h"

namespace luminal {

namespace {
using namespace cuda;

constexpr int64_t kAlign = kArenaAlign;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

int sm_of(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) throw CompileError("CUDA: arch '" + arch + "' is not sm_XX");
  try {
    return std::stoi(arch.substr(3));
  } catch (const std::exception&) {
    throw CompileError("CUDA: arch '" + arch + "' is not sm_XX");
  }
}

std::string compile_cached(const Nvrtc& nvrtc, const CubinCache& cache,
                           const std::string& source, const std::string& arch) {
  std::string key = CubinCache::key(source, nvrtc.major(), nvrtc.minor(), arch);
  if (auto hit = cache.load(key)) return *hit;
  std::string cubin = nvrtc.compile_cubin(source, "luminal.cu", arch);
  cache.store(key, cubin);
  return cubin;
}

// The graph's nodes' schedules checked (CompileError naming the node), then lowered.
Program lower_checked(const Graph& graph) {
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    if (!n.schedule.empty()) check_cuda_schedule(n.schedule, "node %" + std::to_string(id));
  }
  return lower_graph(graph);
}

struct Rendered {
  Program program;
  CudaSource src;
};

// `graph` lowered and rendered for `sm`: each kernel with `choice`, overridden by its node's
// schedule, overridden by `fixed`.
Rendered render_graph(const Graph& graph, int sm, const TuningChoice& choice,
                      const TuningChoice& fixed) {
  Rendered r;
  CudaSchedule base = cuda_schedule(choice);
  CudaSchedule over = cuda_schedule(fixed);
  r.program = lower_checked(graph);
  r.src = CudaRenderer(base, sm, over).render_program(r.program);
  return r;
}
}  // namespace

CudaSchedule cuda_schedule(const TuningChoice& choice) {
  check_cuda_schedule(choice.params, "tuning choice " + choice.to_string());
  return CudaSchedule{}.with(choice.params);
}

std::string cuda_rewrite_rules(int sm) {
  std::string rules = runtime_rules("cuda.rules");
  if (sm >= 80) rules += runtime_rules("cuda_sm80.rules");
  return rules;
}

std::string cuda_codegen_check(const Graph& graph, const std::string& arch,
                               const CudaOptions& options, const TuningChoice& choice) {
  std::string source = cuda_render(graph, arch, choice);
  std::shared_ptr<Nvrtc> nvrtc = Nvrtc::load(options.nvrtc_library);
  compile_cached(*nvrtc, CubinCache(options.cache_dir), source, arch);
  return source;
}

std::string cuda_render(const Graph& graph, const std::string& arch, const TuningChoice& choice,
                        const TuningChoice& fixed) {
  return render_graph(graph, sm_of(arch), choice, fixed).src.source;
}

CudaLaunchPlan cuda_launch_plan(const Graph& graph, const std::string& arch,
                                const TuningChoice& choice, const DynMap& dyn_map,
                                int multiprocessors) {
  auto [program, src] = render_graph(graph, sm_of(arch), choice, TuningChoice{});
  return gpu_launch_plan(program, src.launches, graph, dyn_map, multiprocessors, 32,
                         "cuda_launch_plan");
}

std::string cuda_codegen_check_batch(const std::vector<const Graph*>& graphs,
                                     const std::string& arch, const CudaOptions& options,
                                     const TuningChoice& choice) {
  CudaRenderer renderer(cuda_schedule(choice), sm_of(arch));
  std::string source;
  for (size_t i = 0; i < graphs.size(); ++i) {
    Program program = lower_checked(*graphs[i]);
    for (Kernel& k : program.kernels) k.name = "g" + std::to_string(i) + "_" + k.name;
    source += renderer.render_program(program, i == 0).source;
  }
  std::shared_ptr<Nvrtc> nvrtc = Nvrtc::load(options.nvrtc_library);
  compile_cached(*nvrtc, CubinCache(options.cache_dir), source, arch);
  return source;
}

// ---- setup --------------------------------------------------------------------------

CudaRuntime::CudaRuntime(const CudaOptions& options) : cache_(options.cache_dir) {
  driver_ = Driver::load(options.driver_library);
  int count = 0;
  driver_->check(driver_->cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw DeviceError("CUDA: the driver reports no CUDA device");
  if (options.device < 0 || options.device >= count) {
    throw DeviceError("CUDA: device " + std::to_string(options.device) + " requested, " +
                      std::to_string(count) + " present");
  }
  driver_->check(driver_->cuDeviceGet(&device_, options.device), "cuDeviceGet");
  char name[256] = {0};
  driver_->check(driver_->cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
  device_name_ = name;
  int major = 0;
  int minor = 0;
  driver_->check(driver_->cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, device_),
                 "cuDeviceGetAttribute");
  driver_->check(driver_->cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, device_),
                 "cuDeviceGetAttribute");
  driver_->check(driver_->cuDeviceGetAttribute(&multiprocessors_, kAttrMultiprocessorCount,
                                               device_),
                 "cuDeviceGetAttribute");
  nvrtc_ = Nvrtc::load(options.nvrtc_library);
  // The newest architecture NVRTC knows that the device can run.
  int device_sm = major * 10 + minor;
  for (const std::string& a : nvrtc_->supported_archs()) {
    int s = sm_of(a);
    if (s <= device_sm && s / 10 == major && s > sm_) sm_ = s;
  }
  if (sm_ == 0) {
    throw DeviceError("CUDA: NVRTC " + std::to_string(nvrtc_->major()) + "." +
                      std::to_string(nvrtc_->minor()) + " cannot compile for sm_" +
                      std::to_string(device_sm) + " (" + device_name_ + ")");
  }
  arch_ = "sm_" + std::to_string(sm_);
  driver_->check(driver_->cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
  driver_->check(driver_->cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate");
}

CudaRuntime::~CudaRuntime() {
  if (!driver_) return;
  driver_->cuCtxSetCurrent(context_);
  release_program();
  for (auto& [id, b] : inputs_) driver_->cuMemFree(b.ptr);
  if (arena_.ptr) driver_->cuMemFree(arena_.ptr);
  if (stream_) driver_->cuStreamDestroy(stream_);
  if (context_) driver_->cuDevicePrimaryCtxRelease(device_);
}

void CudaRuntime::make_current() const {
  driver_->check(driver_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

void CudaRuntime::release_graph() {
  if (graph_exec_) driver_->cuGraphExecDestroy(graph_exec_);
  graph_exec_ = nullptr;
  captured_ = false;
}

void CudaRuntime::release_program() {
  release_graph();
  if (module_) driver_->cuModuleUnload(module_);
  module_ = nullptr;
  index_fault_ = 0;
  functions_.clear();
}

CUdeviceptr CudaRuntime::alloc(int64_t bytes) {
  CUdeviceptr p = 0;
  driver_->check(driver_->cuMemAlloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, kAlign))),
                 "cuMemAlloc");
  return p;
}

// ---- compile ------------------------------------------------------------------------

std::shared_ptr<const Prepared> CudaRuntime::prepare(const Graph& graph,
                                                     const TuningChoice& choice) const {
  auto prepared = std::make_shared<Prepared>();
  prepared->graph = graph;
  prepared->choice = choice;
  prepared->fingerprint = cuda_fingerprint(graph, arch_, choice, fixed_);
  return prepared;
}

std::string cuda_fingerprint(const Graph& graph, const std::string& arch,
                             const TuningChoice& choice, const TuningChoice& fixed) {
  return hex128(cuda_render(graph, arch, choice, fixed) + "\n" + choice.to_string());
}

void CudaRuntime::compile(const Graph& graph, const TuningChoice& choice) {
  make_current();
  auto [program, src] = render_graph(graph, sm_, choice, fixed_);
  std::string cubin = compile_cached(*nvrtc_, cache_, src.source, arch_);
  release_program();
  for (auto& [id, b] : inputs_) driver_->cuMemFree(b.ptr);
  inputs_.clear();
  driver_->check(driver_->cuModuleLoadData(&module_, cubin.data()), "cuModuleLoadData");
  for (const gpu::KernelLaunch& l : src.launches) {
    CUfunction f = nullptr;
    driver_->check(driver_->cuModuleGetFunction(&f, module_, l.name.c_str()),
                   "cuModuleGetFunction");
    functions_.push_back(f);
  }
  if (reads_bound_indices(program)) {
    size_t bytes = 0;
    driver_->check(driver_->cuModuleGetGlobal(&index_fault_, &bytes, module_, kIndexFault),
                   "cuModuleGetGlobal");
  }
  graph_ = graph;
  fixed_reads_ = fixed_operand_reads(graph_);
  program_ = std::move(program);
  liveness_ = buffer_liveness(program_);
  source_ = std::move(src.source);
  launches_ = std::move(src.launches);
  input_buffer_.clear();
  output_buffer_.clear();
  for (const Buffer& b : program_.buffers) {
    if (b.role == BufferRole::kInput) input_buffer_[b.node] = b.id;
    if (b.role == BufferRole::kOutput) output_buffer_[b.node] = b.id;
  }
  outputs_.clear();
  outputs_stale_ = true;
  compiled_ = true;
}

std::vector<TuningChoice> CudaRuntime::tuning_space(const Graph& graph) const {
  (void)graph;
  return {fixed_};
}

std::string CudaRuntime::rewrite_rules() const { return cuda_rewrite_rules(sm_); }

std::shared_ptr<const egraph::KernelCost> CudaRuntime::kernel_cost() const {
  return std::make_shared<CudaKernelCost>();
}

// ---- data ---------------------------------------------------------------------------

void CudaRuntime::set_data(NodeId input, const void* data, int64_t count, DType dtype) {
  check_set_data(graph_, compiled_, input, count, dtype);
  auto it = input_buffer_.find(input);
  if (it == input_buffer_.end()) return;  // the program never reads this input
  make_current();
  int64_t bytes = storage_bytes(dtype, count);  // quantized inputs: whole blocks
  DeviceBuffer& b = inputs_[it->second];
  if (b.ptr == 0 || b.bytes < bytes) {
    if (b.ptr) driver_->cuMemFree(b.ptr);
    b.ptr = alloc(align_up(bytes));
    b.bytes = align_up(bytes);
    release_graph();  // the captured graph holds the old pointer
  }
  b.count = count;
  if (bytes > 0) {
    driver_->check(driver_->cuMemcpyHtoD(b.ptr, data, static_cast<size_t>(bytes)),
                   "cuMemcpyHtoD");
  }
}

void CudaRuntime::clear_data() {
  for (auto& [buffer, b] : inputs_) b.count = -1;  // allocations stay for the next set_data
  outputs_.clear();
  outputs_stale_ = true;
}

DynMap CudaRuntime::program_dims(const DynMap& dyn_map) const {
  DynMap out;
  for (size_t k = 0; k < program_.dims.size(); ++k) {
    out[CLikeRenderer::dim_name(k)] = dyn_map.at(program_.dims[k]);
  }
  return out;
}

void CudaRuntime::plan_run(const DynMap& dims) {
  if (captured_ && dims == captured_dims_) return;
  release_graph();
  size_t nb = program_.buffers.size();
  cuda::ArenaLayout layout = arena_layout(program_, liveness_, dims);
  numel_ = layout.numel;
  const int64_t total = layout.total;
  const std::vector<int64_t>& offset = layout.offsets;
  if (arena_.bytes < total) {
    if (arena_.ptr) driver_->cuMemFree(arena_.ptr);
    arena_.ptr = 0;
    arena_.ptr = alloc(total);
    arena_.bytes = total;
  }
  pointers_.assign(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    if (program_.buffers[b].role == BufferRole::kInput) {
      pointers_[b] = inputs_.at(static_cast<BufferId>(b)).ptr;
    } else {
      pointers_[b] = arena_.ptr + static_cast<CUdeviceptr>(offset[b]);
    }
  }
  // Capture every launch into one graph.
  driver_->check(driver_->cuStreamBeginCapture(stream_, kCaptureModeThreadLocal),
                 "cuStreamBeginCapture");
  CUresult failure = 0;
  const char* failed_call = nullptr;
  for (size_t k = 0; k < program_.kernels.size() && failure == 0; ++k) {
    const Kernel& kernel = program_.kernels[k];
    gpu::LaunchDims d = gpu::launch_dims(launches_[k], dims, multiprocessors_);
    if (d.empty) continue;
    std::vector<CUdeviceptr> ptrs;
    ptrs.push_back(pointers_[kernel.out]);
    for (BufferId b : kernel.reads()) ptrs.push_back(pointers_[b]);
    std::vector<int64_t> dim_values;
    for (size_t i = 0; i < program_.dims.size(); ++i) {
      dim_values.push_back(dims.at(CLikeRenderer::dim_name(i)));
    }
    std::vector<void*> args;
    for (CUdeviceptr& p : ptrs) args.push_back(&p);
    for (int64_t& v : dim_values) args.push_back(&v);
    failure = driver_->cuLaunchKernel(functions_[k], d.grid[0], d.grid[1], d.grid[2], d.block[0],
                                      d.block[1], d.block[2], d.shared_bytes, stream_,
                                      args.data(), nullptr);
    if (failure) failed_call = "cuLaunchKernel";
  }
  CUgraph graph = nullptr;
  CUresult end = driver_->cuStreamEndCapture(stream_, &graph);
  if (failure) {
    if (graph) driver_->cuGraphDestroy(graph);
    driver_->check(failure, failed_call);
  }
  driver_->check(end, "cuStreamEndCapture");
  CUresult inst = driver_->cuGraphInstantiateWithFlags(&graph_exec_, graph, 0);
  driver_->cuGraphDestroy(graph);
  driver_->check(inst, "cuGraphInstantiateWithFlags");
  captured_dims_ = dims;
  captured_ = true;
}

void CudaRuntime::execute(const DynMap& dyn_map) {
  check_compiled(compiled_, "execute");
  check_symbols(program_.dims, dyn_map);
  check_views_in_bounds(graph_, fixed_reads_, dyn_map, "execute");
  DynMap dims = program_dims(dyn_map);
  std::vector<int64_t> numel = buffer_numels(graph_, program_, dyn_map, "execute");
  for (const auto& [node, buffer] : input_buffer_) {
    auto it = inputs_.find(buffer);
    int64_t count = it == inputs_.end() ? -1 : it->second.count;
    check_input_count(graph_, node, count, numel[buffer]);
  }
  make_current();
  plan_run(dims);
  driver_->check(driver_->cuGraphLaunch(graph_exec_, stream_), "cuGraphLaunch");
  driver_->check(driver_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  last_dyn_map_ = dyn_map;
  outputs_stale_ = true;
  check_index_fault(dyn_map);
}

void CudaRuntime::check_index_fault(const DynMap& dyn_map) {
  if (!index_fault_) return;
  int32_t fault = 0;
  driver_->check(driver_->cuMemcpyDtoH(&fault, index_fault_, sizeof fault), "cuMemcpyDtoH");
  if (!fault) return;
  driver_->check(driver_->cuMemsetD8Async(index_fault_, 0, sizeof fault, stream_),
                 "cuMemsetD8Async");
  driver_->check(driver_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  throw_index_fault(graph_, dyn_map);
}

const HostBuffer& CudaRuntime::get(NodeId output) const {
  auto it = output_buffer_.find(output);
  if (!compiled_ || it == output_buffer_.end() || !captured_) {
    static const std::map<NodeId, HostBuffer> kNone;
    output_value(kNone, output);  // throws the shared "has no value" error
  }
  if (outputs_stale_) {
    outputs_.clear();
    outputs_stale_ = false;
  }
  auto hit = outputs_.find(output);
  if (hit != outputs_.end()) return hit->second;
  make_current();
  const Buffer& b = program_.buffers[it->second];
  HostBuffer h;
  h.dtype = b.dtype;
  for (const Expr& d : graph_.node(output).shape) h.shape.push_back(d.eval(last_dyn_map_));
  h.bytes.resize(static_cast<size_t>(numel_[b.id]) * dtype_size(b.dtype));
  if (!h.bytes.empty()) {
    driver_->check(driver_->cuMemcpyDtoH(h.bytes.data(), pointers_[b.id], h.bytes.size()),
                   "cuMemcpyDtoH");
  }
  return outputs_[output] = std::move(h);
}

}  // namespace luminal
