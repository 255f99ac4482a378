// Bindings of the CUDA runtime, the device-free codegen check, and the pure pieces its tests
// check without a GPU (launch dimensions, arena layout, NVRTC facts): .def lines and
// conversions to Python tuples only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bind/launch_plan.h"
#include "runtime/cuda/cuda.h"
#include "runtime/cuda/cuda_arena.h"
#include "codegen/gpu_launch.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

namespace {
std::tuple<std::vector<uint32_t>, std::vector<uint32_t>, bool> launch_dims_py(
    int mode, int block, const Expr& items, const Expr& m, const Expr& n, const Expr& batch,
    int64_t tile_m, int64_t tile_n, const DynMap& dims, int multiprocessors) {
  const gpu::KernelLaunch l{"test", static_cast<gpu::LaunchMode>(mode), block, items, m, n,
                             batch, tile_m, tile_n};
  gpu::LaunchDims d = gpu::launch_dims(l, dims, multiprocessors);
  return {{d.grid[0], d.grid[1], d.grid[2]}, {d.block[0], d.block[1], d.block[2]}, d.empty};
}

// Per buffer: (role, offset, bytes, first kernel, last kernel), and the arena's total bytes.
std::pair<std::vector<std::tuple<int, int64_t, int64_t, int, int>>, int64_t> arena_layout_py(
    const Graph& graph, const DynMap& dyn_map) {
  cuda::GraphArena a = cuda::graph_arena_layout(graph, dyn_map);
  std::vector<std::tuple<int, int64_t, int64_t, int, int>> rows;
  for (const cuda::ArenaRow& r : a.rows) {
    rows.emplace_back(static_cast<int>(r.role), r.offset, r.bytes, r.first, r.last);
  }
  return {rows, a.total};
}

nb::tuple launch_plan_py(const Graph& graph, const std::string& arch, const TuningChoice& choice,
                         const DynMap& dyn_map, int multiprocessors) {
  return launch_plan_tuple(cuda_launch_plan(graph, arch, choice, dyn_map, multiprocessors));
}

// Compiles CUDA source text to CUBIN with NVRTC (no device); returns the CUBIN's size.
size_t nvrtc_compile(const std::string& source, const std::string& arch,
                     const std::string& library) {
  auto n = cuda::Nvrtc::load(library);
  return n->compile_cubin(source, "luminal_check.cu", arch).size();
}

std::tuple<int, int, std::vector<std::string>> nvrtc_info(const std::string& library) {
  auto n = cuda::Nvrtc::load(library);
  return {n->major(), n->minor(), n->supported_archs()};
}
}  // namespace

void init_cuda(nb::module_& m) {
  nb::class_<CudaOptions>(m, "CudaOptions")
      .def(nb::init<>())
      .def_rw("driver_library", &CudaOptions::driver_library)
      .def_rw("nvrtc_library", &CudaOptions::nvrtc_library)
      .def_rw("cache_dir", &CudaOptions::cache_dir)
      .def_rw("device", &CudaOptions::device);
  nb::class_<CudaRuntime, Runtime>(m, "CudaRuntime")
      .def(nb::init<const CudaOptions&>(), "options"_a)
      .def("fix_choice", &CudaRuntime::fix_choice, "choice"_a)
      .def("benchmark", &CudaRuntime::benchmark, "dyn_map"_a, "iters"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("copy_bandwidth", &CudaRuntime::copy_bandwidth, "bytes"_a, "iters"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("device_name", &CudaRuntime::device_name)
      .def_prop_ro("arch", &CudaRuntime::arch)
      .def_prop_ro("multiprocessors", &CudaRuntime::multiprocessors)
      .def_prop_ro("source", &CudaRuntime::source);
  m.def("cuda_codegen_check", &cuda_codegen_check, "graph"_a, "arch"_a, "options"_a,
        "choice"_a = TuningChoice{}, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "cuda_codegen_check_batch",
      [](const std::vector<Graph*>& graphs, const std::string& arch, const CudaOptions& options,
         const TuningChoice& choice) {
        std::vector<const Graph*> all(graphs.begin(), graphs.end());
        nb::gil_scoped_release release;
        return cuda_codegen_check_batch(all, arch, options, choice);
      },
      "graphs"_a, "arch"_a, "options"_a, "choice"_a = TuningChoice{});
  m.def("cuda_render", &cuda_render, "graph"_a, "arch"_a, "choice"_a = TuningChoice{},
        "fixed"_a = TuningChoice{});
  m.def("cuda_fingerprint", &cuda_fingerprint, "graph"_a, "arch"_a, "choice"_a = TuningChoice{},
        "fixed"_a = TuningChoice{});
  m.def("cuda_rewrite_rules", &cuda_rewrite_rules, "sm"_a);
  m.def("cuda_launch_dims", &launch_dims_py, "mode"_a, "block"_a, "items"_a, "m"_a, "n"_a,
        "batch"_a, "tile_m"_a, "tile_n"_a, "dims"_a, "multiprocessors"_a);
  m.def("cuda_launch_plan", &launch_plan_py, "graph"_a, "arch"_a, "choice"_a, "dyn_map"_a,
        "multiprocessors"_a);
  m.def("cuda_arena_layout", &arena_layout_py, "graph"_a, "dyn_map"_a);
  m.def("cuda_nvrtc_info", &nvrtc_info, "library"_a);
  m.def("cuda_nvrtc_compile", &nvrtc_compile, "source"_a, "arch"_a, "library"_a,
        nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace luminal
