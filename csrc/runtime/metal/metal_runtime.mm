// MetalRuntime on Apple GPUs (Objective-C++, built only on Apple systems): the device and its
// command queue; compile (render MSL with metal_plan.h, one MTLLibrary per program, one
// pipeline per kernel function, pipelines kept across processes in MTLBinaryArchive files);
// inputs in their own shared buffers, temps and outputs in one shared arena from the memory
// plan; every kernel of a run in one command buffer; outputs read straight from shared memory.
// Not a renderer: the MSL and the launch plan come from the device-free metal_plan.h.
//
// Needs macOS 12 or later (MSL 2.4, pinned below: the kernels use int64_t indices, 64-bit
// constant buffers and simd_shuffle_xor) and an Apple GPU of family 7 or later (M1 on: 32-lane
// simdgroups); the constructor refuses anything else with DeviceError.
// Memory management: ARC (-fobjc-arc, set for this file in CMakeLists.txt). The Objective-C
// objects Impl holds are __strong members released with it; Objective-C++ builds with
// -fobjc-arc-exceptions by default, so a C++ exception releases the strong locals it unwinds.
// Autorelease pools wrap the per-call Objective-C work, and no C++ exception leaves a pool:
// errors are collected inside it and thrown after it is drained.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include "runtime/metal/metal.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/errors.h"
#include "core/sizes.h"
#include "kernel/memory_plan.h"
#include "runtime/disk_cache.h"
#include "runtime/metal/metal_plan.h"
#include "runtime/view_bounds.h"

#if !__has_feature(objc_arc)
#error "metal_runtime.mm is written for ARC: compile it with -fobjc-arc"
#endif

namespace luminal {

namespace {

constexpr int64_t kAlign = 256;  // buffer lengths and the arena's output slots
// Grid-stride kernels get at most this many threadgroups (Metal reports no core count; 1024
// threadgroups of 256 threads fill the largest Apple GPUs).
constexpr int kMaxThreadgroups = 1024;
// lm_dims is bound with setBytes, which Apple documents for data under 4 KB.
constexpr size_t kMaxDims = 512;
constexpr NSUInteger kSimdWidth = 32;  // the renderer's simdgroup (and the CUDA warp)
constexpr size_t kMaxCachedPrograms = 32;
constexpr int kSourceLinesInErrors = 40;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string text(NSString* s) {
  const char* c = s == nil ? nullptr : [s UTF8String];
  return c == nullptr ? std::string() : std::string(c);
}

NSString* ns(const std::string& s) { return [NSString stringWithUTF8String:s.c_str()]; }

std::string error_text(NSError* error) {
  return error == nil ? std::string("no reason given") : text(error.localizedDescription);
}

std::string first_lines(const std::string& source, int lines) {
  size_t end = 0;
  for (int i = 0; i < lines; ++i) {
    end = source.find('\n', end);
    if (end == std::string::npos) return source;
    ++end;
  }
  return source.substr(0, end) + "...\n";
}

// A compiled program: its library and a pipeline per kernel function name.
struct MetalProgram {
  id<MTLLibrary> library = nil;
  std::map<std::string, id<MTLComputePipelineState>> pipelines;
};

// What went wrong inside an autorelease pool, thrown once the pool is drained.
struct Failure {
  enum Kind { kNone, kCompile, kDevice } kind = kNone;
  std::string what;

  bool ok() const { return kind == kNone; }
  [[noreturn]] void raise() const {
    if (kind == kCompile) throw CompileError(what);
    throw DeviceError(what);
  }
};

struct InputBuffer {
  id<MTLBuffer> buffer = nil;
  int64_t bytes = 0;
  int64_t count = -1;  // elements set by set_data; -1: none
};

}  // namespace

struct MetalRuntime::Impl {
  id<MTLDevice> device = nil;
  id<MTLCommandQueue> queue = nil;
  id<MTLBuffer> fault = nil;  // lm_index_fault: 4 bytes every kernel takes at buffer(n + 2)
  std::string device_name;
  std::string os_version;
  std::string cache_dir;
  std::map<std::string, std::shared_ptr<MetalProgram>> programs;  // by program_key

  // The compiled program.
  bool compiled = false;
  Graph graph;
  std::vector<ViewRead> fixed_reads;  // checked at each execute (view_bounds.h)
  Program program;
  Liveness liveness;
  MetalSource src;
  std::shared_ptr<MetalProgram> kernels;
  std::map<NodeId, BufferId> input_buffer;   // HLIR Input node -> its buffer
  std::map<NodeId, BufferId> output_buffer;  // HLIR Output node -> its buffer

  // Memory: inputs in their own buffers (kept across dim values), the rest in one arena.
  std::map<BufferId, InputBuffer> inputs;
  id<MTLBuffer> arena = nil;
  int64_t arena_bytes = 0;

  // The launch plan and arena layout of the last dim values (one, as the CUDA runtime keeps
  // one captured graph: a sequence that grows a token at a time never revisits old values).
  bool planned = false;
  std::vector<int64_t> planned_dims;
  MetalLaunchPlan plan;
  std::vector<id<MTLComputePipelineState>> launch_pipelines;  // per plan.launches entry
  std::vector<int64_t> lm_dims;                               // plan.dims, at least one
  std::vector<int64_t> offsets;  // per buffer: its byte offset in the arena; -1 for inputs
  std::vector<id<MTLBuffer>> bound;  // per buffer: the MTLBuffer it lives in, for this run

  bool ran = false;
  DynMap last_dyn_map;
  std::map<NodeId, HostBuffer> outputs;  // filled from shared memory on first get()
  bool outputs_stale = true;

  id<MTLBuffer> alloc(int64_t bytes, const std::string& what);
  std::string program_key(const std::string& source) const;
  std::shared_ptr<MetalProgram> build(const MetalSource& source);
  Failure compile_library(const std::string& source, MetalProgram& out);
  Failure make_pipelines(const std::vector<gpu::KernelLaunch>& launches, const std::string& key,
                         MetalProgram& out);
  id<MTLBinaryArchive> open_archive(const std::string& path, const std::string& key);
  void store_archive(id<MTLBinaryArchive> archive, const std::string& path,
                     const std::string& key);
  void check_launches(const std::vector<gpu::KernelLaunch>& launches,
                      const MetalProgram& built) const;
  void plan_run(const DynMap& dyn_map);
  void bind_buffers();
  std::string run(double* gpu_ms);
  void check_index_fault(const DynMap& dyn_map);
};

// ---- setup --------------------------------------------------------------------------

bool metal_available() {
  if (@available(macOS 12.0, *)) {
    @autoreleasepool {
      NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
      for (id<MTLDevice> d in all) {
        if ([d supportsFamily:MTLGPUFamilyApple7]) return true;
      }
    }
  }
  return false;
}

MetalRuntime::MetalRuntime(const MetalOptions& options) : impl_(std::make_unique<Impl>()) {
  if (@available(macOS 12.0, *)) {
  } else {
    throw DeviceError("Metal: the Metal runtime needs macOS 12 or later (MSL 2.4)");
  }
  Impl& s = *impl_;
  s.cache_dir = options.cache_dir;
  Failure failure;
  @autoreleasepool {
    NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
    if (all.count == 0) {
      failure = {Failure::kDevice, "Metal: the system reports no Metal device"};
    } else if (options.device < 0 || static_cast<NSUInteger>(options.device) >= all.count) {
      failure = {Failure::kDevice, "Metal: device " + std::to_string(options.device) +
                                       " requested, " + std::to_string(all.count) + " present"};
    } else {
      s.device = all[static_cast<NSUInteger>(options.device)];
      s.device_name = text(s.device.name);
      s.os_version = text([[NSProcessInfo processInfo] operatingSystemVersionString]);
      if (![s.device supportsFamily:MTLGPUFamilyApple7]) {
        failure = {Failure::kDevice, "Metal: " + s.device_name +
                                         " is not an Apple GPU of family 7 or later (M1 on); "
                                         "the kernels need its 32-lane simdgroups"};
      } else {
        s.queue = [s.device newCommandQueue];
        s.fault = [s.device newBufferWithLength:sizeof(int32_t)
                                        options:MTLResourceStorageModeShared];
        if (s.queue == nil || s.fault == nil) {
          failure = {Failure::kDevice, "Metal: " + s.device_name + " gave no command queue"};
        }
      }
    }
  }
  if (!failure.ok()) failure.raise();
}

MetalRuntime::~MetalRuntime() = default;

std::string MetalRuntime::device_name() const { return impl_->device_name; }

const std::string& MetalRuntime::source() const { return impl_->src.source; }

// A shared (unified memory) buffer of at least `bytes`; newBufferWithLength zero-fills it.
id<MTLBuffer> MetalRuntime::Impl::alloc(int64_t bytes, const std::string& what) {
  bytes = std::max(bytes, kAlign);
  const NSUInteger limit = device.maxBufferLength;
  if (static_cast<uint64_t>(bytes) > static_cast<uint64_t>(limit)) {
    throw DeviceError("Metal: " + what + " needs " + std::to_string(bytes) + " bytes; " +
                      device_name + " allows at most " + std::to_string(limit) +
                      " in one buffer");
  }
  id<MTLBuffer> b = [device newBufferWithLength:static_cast<NSUInteger>(bytes)
                                        options:MTLResourceStorageModeShared];
  if (b == nil) {
    throw DeviceError("Metal: could not allocate " + std::to_string(bytes) + " bytes for " +
                      what + " on " + device_name);
  }
  return b;
}

// ---- compile ------------------------------------------------------------------------

// Pipelines are what Metal documents as storable: an MTLBinaryArchive holds the GPU code of
// the pipelines created through it and is serialized to a file (serializeToURL), then given to
// later pipeline creations (MTLComputePipelineDescriptor.binaryArchives), which skip the GPU
// compile on a hit. The MSL-to-AIR step (newLibraryWithSource) still runs in every process;
// within one, `programs` keeps each program built. An archive is a cache only: one that cannot
// be read or written costs a compile, never a failure. Its key covers the source, the OS
// version (its Metal compiler) and the device.
std::string MetalRuntime::Impl::program_key(const std::string& source) const {
  return hex128("luminal metal program 1\n" + os_version + "\n" + device_name + "\n" + source);
}

std::shared_ptr<MetalProgram> MetalRuntime::Impl::build(const MetalSource& source) {
  std::string key = program_key(source.source);
  auto hit = programs.find(key);
  if (hit != programs.end()) {
    check_launches(source.launches, *hit->second);
    return hit->second;
  }
  auto built = std::make_shared<MetalProgram>();
  Failure failure;
  @autoreleasepool {
    failure = compile_library(source.source, *built);
    if (failure.ok()) failure = make_pipelines(source.launches, key, *built);
  }
  if (!failure.ok()) failure.raise();
  check_launches(source.launches, *built);
  if (programs.size() >= kMaxCachedPrograms) programs.clear();
  programs[key] = built;
  return built;
}

// Fast math off, so exp2 / log2 / division and NaN and infinity behave as the interpreter's.
Failure MetalRuntime::Impl::compile_library(const std::string& source, MetalProgram& out) {
  MTLCompileOptions* options = [MTLCompileOptions new];
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
  options.fastMathEnabled = NO;  // replaced by mathMode from macOS 15 (set below there)
#pragma clang diagnostic pop
#if defined(__MAC_15_0) && __MAC_OS_X_VERSION_MAX_ALLOWED >= __MAC_15_0
  if (@available(macOS 15.0, *)) {
    options.mathMode = MTLMathModeSafe;
    options.mathFloatingPointFunctions = MTLMathFloatingPointFunctionsPrecise;
  }
#endif
  if (@available(macOS 12.0, *)) options.languageVersion = MTLLanguageVersion2_4;
  NSError* error = nil;
  out.library = [device newLibraryWithSource:ns(source) options:options error:&error];
  // A library with warnings comes back with `error` set too: only a nil library failed.
  if (out.library == nil) {
    return {Failure::kCompile, "Metal: the MSL compiler rejected the program: " +
                                   error_text(error) + "\nThe source begins:\n" +
                                   first_lines(source, kSourceLinesInErrors)};
  }
  return {};
}

Failure MetalRuntime::Impl::make_pipelines(const std::vector<gpu::KernelLaunch>& launches,
                                           const std::string& key, MetalProgram& out) {
  std::string path = cache_dir.empty() ? std::string() : cache_dir + "/" + key + ".metallib";
  id<MTLBinaryArchive> archive = path.empty() ? nil : open_archive(path, key);
  bool archive_grew = false;
  for (const gpu::KernelLaunch& l : launches) {
    if (out.pipelines.count(l.name)) continue;  // an identical kernel's launch names it again
    id<MTLFunction> fn = [out.library newFunctionWithName:ns(l.name)];
    if (fn == nil) {
      return {Failure::kCompile, "Metal: the compiled library has no kernel '" + l.name + "'"};
    }
    MTLComputePipelineDescriptor* d = [MTLComputePipelineDescriptor new];
    d.computeFunction = fn;
    id<MTLComputePipelineState> p = nil;
    if (archive != nil) {
      d.binaryArchives = @[ archive ];
      NSError* miss = nil;
      p = [device newComputePipelineStateWithDescriptor:d
                                                options:MTLPipelineOptionFailOnBinaryArchiveMiss
                                             reflection:nil
                                                  error:&miss];
      if (p == nil) {
        NSError* add_error = nil;
        if ([archive addComputePipelineFunctionsWithDescriptor:d error:&add_error]) {
          archive_grew = true;
        }
      }
    }
    NSError* error = nil;
    if (p == nil) {
      p = [device newComputePipelineStateWithDescriptor:d
                                                options:MTLPipelineOptionNone
                                             reflection:nil
                                                  error:&error];
    }
    if (p == nil) {
      return {Failure::kCompile,
              "Metal: kernel '" + l.name + "' did not build a pipeline: " + error_text(error)};
    }
    out.pipelines[l.name] = p;
  }
  if (archive_grew) store_archive(archive, path, key);
  return {};
}

// The archive stored under `key` where its seal holds (disk_cache.h), else an empty one; nil
// where Metal makes none (pipelines then compile as without an archive).
id<MTLBinaryArchive> MetalRuntime::Impl::open_archive(const std::string& path,
                                                      const std::string& key) {
  MTLBinaryArchiveDescriptor* d = [MTLBinaryArchiveDescriptor new];
  NSError* error = nil;
  if (read_sealed(path, key)) {
    d.url = [NSURL fileURLWithPath:ns(path)];
    id<MTLBinaryArchive> stored = [device newBinaryArchiveWithDescriptor:d error:&error];
    if (stored != nil) return stored;
    d.url = nil;  // unreadable by this Metal: start afresh and overwrite it
  }
  return [device newBinaryArchiveWithDescriptor:d error:&error];
}

// Serialized next to its place and renamed into it, then sealed; any failure leaves no entry.
void MetalRuntime::Impl::store_archive(id<MTLBinaryArchive> archive, const std::string& path,
                                       const std::string& key) {
  if (!make_dirs(cache_dir)) return;
  std::string tmp = temp_path(path) + ".metallib";
  NSError* error = nil;
  if (![archive serializeToURL:[NSURL fileURLWithPath:ns(tmp)] error:&error]) {
    std::remove(tmp.c_str());
    return;
  }
  if (rename_into_place(tmp, path)) write_seal(path, key);
}

// Each launch's threadgroup fits its pipeline (whose limit falls with register and threadgroup
// memory use), and the pipelines run the 32-lane simdgroups the kernels are written for.
void MetalRuntime::Impl::check_launches(const std::vector<gpu::KernelLaunch>& launches,
                                        const MetalProgram& built) const {
  for (const gpu::KernelLaunch& l : launches) {
    id<MTLComputePipelineState> p = built.pipelines.at(l.name);
    if (p.threadExecutionWidth != kSimdWidth) {
      throw DeviceError("Metal: kernel '" + l.name + "' runs " +
                        std::to_string(p.threadExecutionWidth) + "-wide simdgroups on " +
                        device_name + "; the kernels are written for 32");
    }
    if (static_cast<NSUInteger>(l.block) > p.maxTotalThreadsPerThreadgroup) {
      throw CompileError("Metal: kernel '" + l.name + "' launches " + std::to_string(l.block) +
                         " threads per threadgroup, but its pipeline on " + device_name +
                         " runs at most " + std::to_string(p.maxTotalThreadsPerThreadgroup) +
                         " (fix a smaller metal_threads)");
    }
    if (p.staticThreadgroupMemoryLength > device.maxThreadgroupMemoryLength) {
      throw CompileError("Metal: kernel '" + l.name + "' needs " +
                         std::to_string(p.staticThreadgroupMemoryLength) +
                         " bytes of threadgroup memory; " + device_name + " has " +
                         std::to_string(device.maxThreadgroupMemoryLength));
    }
  }
}

std::shared_ptr<const Prepared> MetalRuntime::prepare(const Graph& graph,
                                                      const TuningChoice& choice) const {
  auto prepared = std::make_shared<Prepared>();
  prepared->graph = graph;
  prepared->choice = choice;
  prepared->fingerprint =
      hex128(metal_render_graph(graph, choice, fixed_).src.source + "\n" + choice.to_string());
  return prepared;
}

void MetalRuntime::compile(const Graph& graph, const TuningChoice& choice) {
  MetalRendered rendered = metal_render_graph(graph, choice, fixed_);
  if (rendered.program.dims.size() > kMaxDims) {
    throw CompileError("Metal: the program has " + std::to_string(rendered.program.dims.size()) +
                       " symbolic dims; the Metal runtime binds at most " +
                       std::to_string(kMaxDims));
  }
  Impl& s = *impl_;
  std::shared_ptr<MetalProgram> kernels = s.build(rendered.src);
  s.inputs.clear();
  s.graph = graph;
  s.fixed_reads = fixed_operand_reads(s.graph);
  s.program = std::move(rendered.program);
  s.liveness = buffer_liveness(s.program);
  s.src = std::move(rendered.src);
  s.kernels = std::move(kernels);
  s.input_buffer.clear();
  s.output_buffer.clear();
  for (const Buffer& b : s.program.buffers) {
    if (b.role == BufferRole::kInput) s.input_buffer[b.node] = b.id;
    if (b.role == BufferRole::kOutput) s.output_buffer[b.node] = b.id;
  }
  s.planned = false;
  s.ran = false;
  s.outputs.clear();
  s.outputs_stale = true;
  s.compiled = true;
}

std::vector<TuningChoice> MetalRuntime::tuning_space(const Graph& graph) const {
  (void)graph;
  return {fixed_};
}

std::string MetalRuntime::rewrite_rules() const { return metal_rewrite_rules(); }

// ---- data ---------------------------------------------------------------------------

void MetalRuntime::set_data(NodeId input, const void* data, int64_t count, DType dtype) {
  Impl& s = *impl_;
  check_set_data(s.graph, s.compiled, input, count, dtype);
  auto it = s.input_buffer.find(input);
  if (it == s.input_buffer.end()) return;  // the program never reads this input
  int64_t bytes = storage_bytes(dtype, count);  // quantized inputs: whole blocks
  InputBuffer& b = s.inputs[it->second];
  if (b.buffer == nil || b.bytes < bytes) {
    b.buffer = nil;  // the old one goes before the new one is made
    b.bytes = 0;
    b.buffer = s.alloc(align_up(bytes), input_desc(s.graph, input));
    b.bytes = static_cast<int64_t>(b.buffer.length);
  }
  b.count = count;
  if (bytes > 0) std::memcpy(b.buffer.contents, data, static_cast<size_t>(bytes));
}

void MetalRuntime::clear_data() {
  Impl& s = *impl_;
  for (auto& [buffer, b] : s.inputs) b.count = -1;  // buffers stay for the next set_data
  s.outputs.clear();
  s.outputs_stale = true;
}

// ---- execute ------------------------------------------------------------------------

// The launch plan and the arena layout for `dyn_map`'s dim values, made when they change: temps
// where the memory plan puts them (sharing bytes where their live ranges are disjoint), then
// every output in its own aligned slot.
void MetalRuntime::Impl::plan_run(const DynMap& dyn_map) {
  std::vector<int64_t> dims;
  for (const std::string& d : program.dims) dims.push_back(dyn_map.at(d));
  if (planned && dims == planned_dims) return;
  planned = false;
  plan = metal_launch_plan(program, src, graph, dyn_map, kMaxThreadgroups);
  const size_t nb = program.buffers.size();
  std::vector<int64_t> bytes(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buffer = program.buffers[b];
    bytes[b] = checked_bytes(plan.numel[b], buffer.dtype, [&] {
      return "the Metal arena: buffer " + std::to_string(b) + " (of node %" +
             std::to_string(buffer.node) + ")";
    });
  }
  MemoryPlan memory = plan_memory(program, liveness, plan.numel);
  int64_t total = align_up(memory.arena_bytes);
  offsets.assign(nb, -1);
  for (size_t b = 0; b < nb; ++b) {
    const BufferRole role = program.buffers[b].role;
    if (role == BufferRole::kTemp) offsets[b] = memory.offsets[b];
    if (role == BufferRole::kOutput) {
      offsets[b] = total;
      total = checked_add_bytes(total, align_up(std::max<int64_t>(bytes[b], 1)),
                                [] { return std::string("the Metal arena"); });
    }
  }
  if (arena == nil || arena_bytes < total) {
    arena = nil;
    arena_bytes = 0;
    arena = alloc(total, "the arena of temporaries and outputs");
    arena_bytes = static_cast<int64_t>(arena.length);
  }
  launch_pipelines.clear();
  for (const MetalLaunchPlan::Launch& l : plan.launches) {
    auto p = kernels->pipelines.find(l.name);
    if (p == kernels->pipelines.end()) {
      throw InternalError("Metal: the launch plan names kernel '" + l.name +
                          "', which the compiled program lacks");
    }
    launch_pipelines.push_back(p->second);
  }
  lm_dims = plan.dims.empty() ? std::vector<int64_t>{0} : plan.dims;
  planned_dims = dims;
  planned = true;
}

// The MTLBuffer of each buffer for this run (set_data may have replaced an input's).
void MetalRuntime::Impl::bind_buffers() {
  bound.assign(program.buffers.size(), nil);
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (program.buffers[b].role != BufferRole::kInput) {
      bound[b] = arena;
      continue;
    }
    auto it = inputs.find(static_cast<BufferId>(b));
    if (it == inputs.end() || it->second.buffer == nil) {
      throw InternalError("Metal: input buffer " + std::to_string(b) + " has no memory");
    }
    bound[b] = it->second.buffer;
  }
}

// One run of the planned program: every launch in one compute encoder of one command buffer
// (serial dispatch: each kernel sees the writes of those before it), committed and waited
// for. Returns "" or what failed; `gpu_ms`, when given, receives the GPU's time for it.
std::string MetalRuntime::Impl::run(double* gpu_ms) {
  std::string failure;
  @autoreleasepool {
    *static_cast<int32_t*>(fault.contents) = 0;
    id<MTLCommandBuffer> cb = [queue commandBuffer];
    id<MTLComputeCommandEncoder> encoder = cb == nil ? nil : [cb computeCommandEncoder];
    if (encoder == nil) {
      failure = "Metal: " + device_name + " gave no command buffer or compute encoder";
    } else {
      const NSUInteger dims_bytes = lm_dims.size() * sizeof(int64_t);
      for (size_t k = 0; k < plan.launches.size(); ++k) {
        const MetalLaunchPlan::Launch& l = plan.launches[k];
        if (l.dims.empty) continue;
        [encoder setComputePipelineState:launch_pipelines[k]];
        NSUInteger index = 0;
        for (BufferId b : l.buffers) {
          const NSUInteger offset = offsets[b] < 0 ? 0 : static_cast<NSUInteger>(offsets[b]);
          [encoder setBuffer:bound[b] offset:offset atIndex:index++];
        }
        [encoder setBytes:lm_dims.data() length:dims_bytes atIndex:index++];
        [encoder setBuffer:fault offset:0 atIndex:index];
        [encoder dispatchThreadgroups:MTLSizeMake(l.dims.grid[0], l.dims.grid[1], l.dims.grid[2])
                threadsPerThreadgroup:MTLSizeMake(l.dims.block[0], l.dims.block[1],
                                                  l.dims.block[2])];
      }
      [encoder endEncoding];
      [cb commit];
      [cb waitUntilCompleted];
      if (cb.status == MTLCommandBufferStatusError) {
        failure = "Metal: the program failed on " + device_name + ": " + error_text(cb.error);
      } else if (cb.status != MTLCommandBufferStatusCompleted) {
        failure = "Metal: the command buffer ended in status " +
                  std::to_string(static_cast<long>(cb.status)) + " on " + device_name;
      } else if (gpu_ms != nullptr) {
        *gpu_ms = (cb.GPUEndTime - cb.GPUStartTime) * 1e3;
      }
    }
  }
  return failure;
}

// After a run: a ShapeError if a Gather read an index out of range (the flag cleared), worded
// as every runtime words it (runtime.h).
void MetalRuntime::Impl::check_index_fault(const DynMap& dyn_map) {
  int32_t* flag = static_cast<int32_t*>(fault.contents);
  if (*flag == 0) return;
  *flag = 0;
  throw_index_fault(graph, dyn_map);
}

void MetalRuntime::execute(const DynMap& dyn_map) {
  Impl& s = *impl_;
  check_compiled(s.compiled, "execute");
  check_symbols(s.program.dims, dyn_map);
  check_views_in_bounds(s.graph, s.fixed_reads, dyn_map, "execute");
  std::vector<int64_t> numel = buffer_numels(s.graph, s.program, dyn_map, "execute");
  for (const auto& [node, buffer] : s.input_buffer) {
    auto it = s.inputs.find(buffer);
    int64_t count = it == s.inputs.end() ? -1 : it->second.count;
    check_input_count(s.graph, node, count, numel[buffer]);
  }
  s.ran = false;  // until this run completes, no output is readable
  s.outputs_stale = true;
  s.plan_run(dyn_map);
  s.bind_buffers();
  std::string failure = s.run(nullptr);
  if (!failure.empty()) throw DeviceError(failure);
  s.ran = true;
  s.last_dyn_map = dyn_map;
  s.check_index_fault(dyn_map);
}

double MetalRuntime::benchmark(const DynMap& dyn_map, int iters) {
  if (iters < 1) throw ShapeError("benchmark: iters must be >= 1");
  execute(dyn_map);  // checks the inputs, plans, and warms up
  Impl& s = *impl_;
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    double ms = 0;
    std::string failure = s.run(&ms);
    if (!failure.empty()) {
      s.ran = false;
      throw DeviceError(failure);
    }
    times.push_back(ms);
  }
  s.outputs_stale = true;
  s.check_index_fault(dyn_map);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

const HostBuffer& MetalRuntime::get(NodeId output) const {
  Impl& s = *impl_;
  auto it = s.output_buffer.find(output);
  if (!s.compiled || it == s.output_buffer.end() || !s.ran) {
    static const std::map<NodeId, HostBuffer> kNone;
    return output_value(kNone, output);  // throws the shared "has no value" error
  }
  if (s.outputs_stale) {
    s.outputs.clear();
    s.outputs_stale = false;
  }
  auto hit = s.outputs.find(output);
  if (hit != s.outputs.end()) return hit->second;
  const Buffer& b = s.program.buffers[it->second];
  HostBuffer h;
  h.dtype = b.dtype;
  for (const Expr& d : s.graph.node(output).shape) h.shape.push_back(d.eval(s.last_dyn_map));
  h.bytes.resize(static_cast<size_t>(s.plan.numel[b.id]) * dtype_size(b.dtype));
  if (!h.bytes.empty()) {
    const uint8_t* base = static_cast<const uint8_t*>(s.arena.contents);
    std::memcpy(h.bytes.data(), base + s.offsets[b.id], h.bytes.size());
  }
  return s.outputs[output] = std::move(h);
}

}  // namespace luminal
