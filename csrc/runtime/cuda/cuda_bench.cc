// CudaRuntime's timing helpers: replays of the captured program timed with device events, and
// the device-to-device copy bandwidth that memory-bound kernels are measured against.
#include <algorithm>
#include <vector>

#include "core/errors.h"
#include "runtime/cuda/cuda.h"

namespace luminal {

namespace {
using namespace cuda;

// A 16-byte-per-thread grid-stride copy: the bandwidth ceiling our kernels can reach.
constexpr const char* kCopySource =
    "extern \"C\" __global__ void lm_copy(uint4* __restrict__ dst, const uint4* __restrict__ "
    "src, long long n) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x) dst[i] = src[i];\n"
    "}\n";

// Median milliseconds of `rounds` timed runs of `body` between two events.
template <typename Body>
double time_ms(const Driver& d, CUstream stream, int rounds, Body body) {
  CUevent start = nullptr;
  CUevent stop = nullptr;
  d.check(d.cuEventCreate(&start, 0), "cuEventCreate");
  d.check(d.cuEventCreate(&stop, 0), "cuEventCreate");
  std::vector<double> times;
  try {
    body();  // warm-up
    d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
    for (int r = 0; r < rounds; ++r) {
      d.check(d.cuEventRecord(start, stream), "cuEventRecord");
      body();
      d.check(d.cuEventRecord(stop, stream), "cuEventRecord");
      d.check(d.cuEventSynchronize(stop), "cuEventSynchronize");
      float ms = 0;
      d.check(d.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      times.push_back(ms);
    }
  } catch (...) {
    d.cuEventDestroy(start);
    d.cuEventDestroy(stop);
    throw;
  }
  d.cuEventDestroy(start);
  d.cuEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
}  // namespace

double CudaRuntime::benchmark(const DynMap& dyn_map, int iters) {
  if (iters < 1) throw ShapeError("benchmark: iters must be >= 1");
  execute(dyn_map);  // checks inputs, captures the graph
  make_current();
  const int per_round = std::max(1, iters / 5);
  double ms = time_ms(*driver_, stream_, 5, [&] {
    for (int i = 0; i < per_round; ++i) {
      driver_->check(driver_->cuGraphLaunch(graph_exec_, stream_), "cuGraphLaunch");
    }
  });
  outputs_stale_ = true;
  return ms / per_round;
}

std::pair<double, double> CudaRuntime::copy_bandwidth(int64_t bytes, int iters) {
  if (bytes < 16 || iters < 1) throw ShapeError("copy_bandwidth: bytes >= 16 and iters >= 1");
  make_current();
  bytes = bytes / 16 * 16;
  std::string cubin = nvrtc_->compile_cubin(kCopySource, "lm_copy.cu", arch_);
  CUmodule module = nullptr;
  driver_->check(driver_->cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  CUdeviceptr src = 0;
  CUdeviceptr dst = 0;
  std::pair<double, double> gbps{0, 0};
  try {
    CUfunction copy = nullptr;
    driver_->check(driver_->cuModuleGetFunction(&copy, module, "lm_copy"), "cuModuleGetFunction");
    src = alloc(bytes);
    dst = alloc(bytes);
    driver_->check(driver_->cuMemsetD8Async(src, 1, static_cast<size_t>(bytes), stream_),
                   "cuMemsetD8Async");
    long long n = bytes / 16;
    unsigned grid = static_cast<unsigned>(
        std::min<long long>((n + 255) / 256, static_cast<long long>(multiprocessors_) * 16));
    double kernel_ms = time_ms(*driver_, stream_, 5, [&] {
      for (int i = 0; i < iters; ++i) {
        void* args[] = {&dst, &src, &n};
        driver_->check(driver_->cuLaunchKernel(copy, grid, 1, 1, 256, 1, 1, 0, stream_, args,
                                               nullptr),
                       "cuLaunchKernel");
      }
    });
    double memcpy_ms = time_ms(*driver_, stream_, 5, [&] {
      for (int i = 0; i < iters; ++i) {
        driver_->check(driver_->cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(bytes), stream_),
                       "cuMemcpyDtoDAsync");
      }
    });
    double moved = 2.0 * static_cast<double>(bytes) * iters;
    gbps = {moved / (kernel_ms * 1e6), moved / (memcpy_ms * 1e6)};
  } catch (...) {
    if (src) driver_->cuMemFree(src);
    if (dst) driver_->cuMemFree(dst);
    driver_->cuModuleUnload(module);
    throw;
  }
  driver_->cuMemFree(src);
  driver_->cuMemFree(dst);
  driver_->cuModuleUnload(module);
  return gbps;
}

}  // namespace luminal
