// The CUDA driver API and NVRTC, loaded with dlopen at run time: our own declarations of the
// few entry points luminal uses, so no CUDA header or library is needed to build. Every call
// goes through check(), which throws DeviceError (driver) or CompileError (NVRTC) naming the
// call and the error. Not a general CUDA wrapper: only what the CUDA runtime needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace luminal::cuda {

// Opaque driver handles, declared as the driver's own header declares them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// The driver's enum values we pass (from the driver API's documentation).
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kFuncAttrMaxDynamicShared = 8;
constexpr int kStreamNonBlocking = 1;
constexpr int kCaptureModeThreadLocal = 1;

// libcuda.so.1 with its entry points resolved. Construct with load(); one per runtime.
class Driver {
 public:
  // dlopens `library` (e.g. "libcuda.so.1"), resolves every entry point and calls cuInit(0).
  // Throws DeviceError when the library, a symbol or the driver's initialization is missing.
  static std::shared_ptr<Driver> load(const std::string& library);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Throws DeviceError("cuXxx failed: CUDA_ERROR_NAME (code): description") unless r == 0.
  void check(CUresult r, const char* call) const;

  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;

 private:
  Driver() = default;
  void* handle_ = nullptr;
};

// NVRTC with its entry points resolved.
class Nvrtc {
 public:
  // dlopens `library` (a full path, or "" to try the loader's default names) and resolves the
  // entry points. Throws DeviceError naming every path tried when none loads.
  static std::shared_ptr<Nvrtc> load(const std::string& library);
  ~Nvrtc();
  Nvrtc(const Nvrtc&) = delete;
  Nvrtc& operator=(const Nvrtc&) = delete;

  int major() const { return major_; }
  int minor() const { return minor_; }
  // "sm_75", "sm_80", ... the architectures this NVRTC can compile CUBIN for.
  std::vector<std::string> supported_archs() const;
  // Compiles `source` (named `name` in messages) to CUBIN for `arch` ("sm_90"). Throws
  // CompileError with NVRTC's log when the source is rejected.
  std::string compile_cubin(const std::string& source, const std::string& name,
                            const std::string& arch) const;
  // The options passed to NVRTC for `arch`: part of the cache key.
  static std::vector<std::string> options(const std::string& arch);

 private:
  Nvrtc() = default;
  void check(int r, const char* call) const;
  void* handle_ = nullptr;
  int major_ = 0;
  int minor_ = 0;
  using Program = struct _nvrtcProgram*;
  const char* (*nvrtcGetErrorString)(int) = nullptr;
  int (*nvrtcVersion)(int*, int*) = nullptr;
  int (*nvrtcGetNumSupportedArchs)(int*) = nullptr;
  int (*nvrtcGetSupportedArchs)(int*) = nullptr;
  int (*nvrtcCreateProgram)(Program*, const char*, const char*, int, const char* const*,
                            const char* const*) = nullptr;
  int (*nvrtcDestroyProgram)(Program*) = nullptr;
  int (*nvrtcCompileProgram)(Program, int, const char* const*) = nullptr;
  int (*nvrtcGetProgramLogSize)(Program, size_t*) = nullptr;
  int (*nvrtcGetProgramLog)(Program, char*) = nullptr;
  int (*nvrtcGetCUBINSize)(Program, size_t*) = nullptr;
  int (*nvrtcGetCUBIN)(Program, char*) = nullptr;
};

}  // namespace luminal::cuda
