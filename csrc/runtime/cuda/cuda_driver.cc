// dlopen/dlsym of libcuda and NVRTC, and the checked NVRTC compile to CUBIN. Versioned driver
// entry points (cuMemAlloc_v2, ...) are resolved by the names the driver exports for them.
#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <initializer_list>

#include "core/errors.h"

namespace luminal::cuda {

namespace {
std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// Resolves the first of `names` that `handle` exports into `fn`.
template <typename Fn>
void resolve(void* handle, const std::string& library, Fn& fn,
             std::initializer_list<const char*> names) {
  for (const char* name : names) {
    void* p = dlsym(handle, name);
    if (p) {
      fn = reinterpret_cast<Fn>(p);
      return;
    }
  }
  throw DeviceError(std::string("CUDA: ") + library + " has no entry point " + *names.begin() +
                    " (too old a driver or not a CUDA library)");
}
}  // namespace

// ---- driver -------------------------------------------------------------------------

std::shared_ptr<Driver> Driver::load(const std::string& library) {
  std::shared_ptr<Driver> d(new Driver());
  d->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d->handle_) {
    throw DeviceError("CUDA: cannot load the driver library '" + library + "' (" + dl_error() +
                      "); is an NVIDIA driver installed?");
  }
  void* h = d->handle_;
  resolve(h, library, d->cuInit, {"cuInit"});
  resolve(h, library, d->cuDriverGetVersion, {"cuDriverGetVersion"});
  resolve(h, library, d->cuGetErrorName, {"cuGetErrorName"});
  resolve(h, library, d->cuGetErrorString, {"cuGetErrorString"});
  resolve(h, library, d->cuDeviceGetCount, {"cuDeviceGetCount"});
  resolve(h, library, d->cuDeviceGet, {"cuDeviceGet"});
  resolve(h, library, d->cuDeviceGetName, {"cuDeviceGetName"});
  resolve(h, library, d->cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  resolve(h, library, d->cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  resolve(h, library, d->cuDevicePrimaryCtxRelease,
          {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  resolve(h, library, d->cuCtxSetCurrent, {"cuCtxSetCurrent"});
  resolve(h, library, d->cuCtxSynchronize, {"cuCtxSynchronize"});
  resolve(h, library, d->cuMemAlloc, {"cuMemAlloc_v2"});
  resolve(h, library, d->cuMemFree, {"cuMemFree_v2"});
  resolve(h, library, d->cuMemGetInfo, {"cuMemGetInfo_v2"});
  resolve(h, library, d->cuMemcpyHtoD, {"cuMemcpyHtoD_v2"});
  resolve(h, library, d->cuMemcpyDtoH, {"cuMemcpyDtoH_v2"});
  resolve(h, library, d->cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
  resolve(h, library, d->cuMemsetD8Async, {"cuMemsetD8Async"});
  resolve(h, library, d->cuModuleLoadData, {"cuModuleLoadData"});
  resolve(h, library, d->cuModuleUnload, {"cuModuleUnload"});
  resolve(h, library, d->cuModuleGetFunction, {"cuModuleGetFunction"});
  resolve(h, library, d->cuModuleGetGlobal, {"cuModuleGetGlobal_v2"});
  resolve(h, library, d->cuFuncSetAttribute, {"cuFuncSetAttribute"});
  resolve(h, library, d->cuLaunchKernel, {"cuLaunchKernel"});
  resolve(h, library, d->cuStreamCreate, {"cuStreamCreate"});
  resolve(h, library, d->cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"});
  resolve(h, library, d->cuStreamSynchronize, {"cuStreamSynchronize"});
  resolve(h, library, d->cuStreamBeginCapture, {"cuStreamBeginCapture_v2"});
  resolve(h, library, d->cuStreamEndCapture, {"cuStreamEndCapture"});
  resolve(h, library, d->cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"});
  resolve(h, library, d->cuGraphLaunch, {"cuGraphLaunch"});
  resolve(h, library, d->cuGraphExecDestroy, {"cuGraphExecDestroy"});
  resolve(h, library, d->cuGraphDestroy, {"cuGraphDestroy"});
  resolve(h, library, d->cuEventCreate, {"cuEventCreate"});
  resolve(h, library, d->cuEventRecord, {"cuEventRecord"});
  resolve(h, library, d->cuEventSynchronize, {"cuEventSynchronize"});
  resolve(h, library, d->cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  resolve(h, library, d->cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  d->check(d->cuInit(0), "cuInit");
  return d;
}

Driver::~Driver() {
  if (handle_) dlclose(handle_);
}

void Driver::check(CUresult r, const char* call) const {
  if (r == 0) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string msg = std::string("CUDA: ") + call + " failed: " + (name ? name : "CUDA_ERROR") +
                    " (" + std::to_string(r) + ")";
  if (text) msg += ": " + std::string(text);
  throw DeviceError(msg);
}

// ---- NVRTC --------------------------------------------------------------------------

std::shared_ptr<Nvrtc> Nvrtc::load(const std::string& library) {
  std::shared_ptr<Nvrtc> n(new Nvrtc());
  std::vector<std::string> tried;
  if (!library.empty()) {
    tried.push_back(library);
  } else {
    tried = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  }
  std::string errors;
  for (const std::string& path : tried) {
    n->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (n->handle_) break;
    errors += "\n  " + path + ": " + dl_error();
  }
  if (!n->handle_) {
    throw DeviceError("CUDA: cannot load NVRTC; tried:" + errors +
                      "\n(install it with `pip install nvidia-cuda-nvrtc` or pass its path)");
  }
  const std::string lib = library.empty() ? "libnvrtc" : library;
  void* h = n->handle_;
  resolve(h, lib, n->nvrtcGetErrorString, {"nvrtcGetErrorString"});
  resolve(h, lib, n->nvrtcVersion, {"nvrtcVersion"});
  resolve(h, lib, n->nvrtcGetNumSupportedArchs, {"nvrtcGetNumSupportedArchs"});
  resolve(h, lib, n->nvrtcGetSupportedArchs, {"nvrtcGetSupportedArchs"});
  resolve(h, lib, n->nvrtcCreateProgram, {"nvrtcCreateProgram"});
  resolve(h, lib, n->nvrtcDestroyProgram, {"nvrtcDestroyProgram"});
  resolve(h, lib, n->nvrtcCompileProgram, {"nvrtcCompileProgram"});
  resolve(h, lib, n->nvrtcGetProgramLogSize, {"nvrtcGetProgramLogSize"});
  resolve(h, lib, n->nvrtcGetProgramLog, {"nvrtcGetProgramLog"});
  resolve(h, lib, n->nvrtcGetCUBINSize, {"nvrtcGetCUBINSize"});
  resolve(h, lib, n->nvrtcGetCUBIN, {"nvrtcGetCUBIN"});
  if (n->nvrtcVersion(&n->major_, &n->minor_) != 0) {
    throw DeviceError("CUDA: nvrtcVersion failed in " + lib);
  }
  return n;
}

Nvrtc::~Nvrtc() {
  if (handle_) dlclose(handle_);
}

void Nvrtc::check(int r, const char* call) const {
  if (r == 0) return;
  throw CompileError(std::string("NVRTC: ") + call + " failed: " + nvrtcGetErrorString(r) +
                     " (" + std::to_string(r) + ")");
}

std::vector<std::string> Nvrtc::supported_archs() const {
  int count = 0;
  check(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<size_t>(count));
  if (count > 0) check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  std::vector<std::string> names;
  for (int a : archs) names.push_back("sm_" + std::to_string(a));
  return names;
}

std::vector<std::string> Nvrtc::options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-std=c++17"};
}

std::string Nvrtc::compile_cubin(const std::string& source, const std::string& name,
                                 const std::string& arch) const {
  Program prog = nullptr;
  check(nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  std::vector<std::string> opts = options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  int r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  std::string log;
  if (nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(log_size - 1);
  }
  if (r != 0) {
    nvrtcDestroyProgram(&prog);
    throw CompileError("NVRTC: nvrtcCompileProgram failed for " + name + " (" + arch + "): " +
                       nvrtcGetErrorString(r) + "\n" + log);
  }
  size_t size = 0;
  std::string cubin;
  int rs = nvrtcGetCUBINSize(prog, &size);
  if (rs == 0) {
    cubin.resize(size);
    rs = nvrtcGetCUBIN(prog, cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  check(rs, "nvrtcGetCUBIN");
  return cubin;
}

}  // namespace luminal::cuda
