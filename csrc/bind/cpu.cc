// Bindings of CpuRuntime. set_data borrows the caller's C-contiguous array without copying:
// the runtime holds a reference to it (released under the GIL) until the input is set again.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/vector.h>

#include "core/errors.h"
#include "codegen/c/schedule.h"
#include "codegen/planted_fault.h"
#include "runtime/cpu/cpu.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

namespace {
using CpuArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;  // read-only too

void set_data_borrowed(CpuRuntime& rt, NodeId input, const CpuArray& data, DType dtype) {
  const int64_t count = elements_in(dtype, data.itemsize(), static_cast<int64_t>(data.size()));
  auto* holder = new CpuArray(data);
  std::shared_ptr<const void> owner(data.data(), [holder](const void*) {
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing left to release
    nb::gil_scoped_acquire gil;
    delete holder;
  });
  rt.set_data_borrowed(input, data.data(), count, dtype,
                       std::move(owner));
}

std::unique_ptr<CpuRuntime> make_cpu(const std::string& compiler,
                                     const std::vector<std::string>& extra_flags,
                                     const std::string& cache_dir, int threads,
                                     int compile_jobs, int vector_width, bool dot_products) {
  CpuOptions o{compiler, extra_flags, cache_dir, threads, compile_jobs, vector_width,
               dot_products};
  return std::make_unique<CpuRuntime>(o);
}
}  // namespace

void init_cpu(nb::module_& m) {
  nb::class_<CompileStats>(m, "CompileStats")
      .def_ro("kernels", &CompileStats::kernels)
      .def_ro("objects_compiled", &CompileStats::objects_compiled)
      .def_ro("linked", &CompileStats::linked)
      .def_ro("seconds", &CompileStats::seconds)
      .def("__repr__", [](const CompileStats& s) {
        return "CompileStats(kernels=" + std::to_string(s.kernels) +
               ", objects_compiled=" + std::to_string(s.objects_compiled) +
               ", linked=" + (s.linked ? "True" : "False") +
               ", seconds=" + std::to_string(s.seconds) + ")";
      });
  nb::class_<CpuMemoryUse>(m, "CpuMemoryUse")
      .def_ro("borrowed_input_bytes", &CpuMemoryUse::borrowed_input_bytes)
      .def_ro("owned_input_bytes", &CpuMemoryUse::owned_input_bytes)
      .def_ro("packed_input_bytes", &CpuMemoryUse::packed_input_bytes)
      .def_ro("arena_bytes", &CpuMemoryUse::arena_bytes)
      .def_ro("output_bytes", &CpuMemoryUse::output_bytes);
  nb::class_<CpuRuntime, Runtime>(m, "CpuRuntime")
      .def(nb::new_(&make_cpu), "compiler"_a, "extra_flags"_a, "cache_dir"_a, "threads"_a,
           "compile_jobs"_a = 0, "vector_width"_a = 0, "dot_products"_a = true)
      .def("set_data", &set_data_borrowed, "input"_a, "data"_a, "dtype"_a)
      .def_prop_ro("source", &CpuRuntime::source)
      .def_prop_ro("source_path", &CpuRuntime::source_path)
      .def_prop_ro("compiled_fresh", &CpuRuntime::compiled_fresh)
      .def_prop_ro("last_compile_stats", &CpuRuntime::last_compile_stats,
                   nb::rv_policy::copy)
      .def_prop_ro("arena_bytes", &CpuRuntime::arena_bytes)
      .def("memory", &CpuRuntime::memory)
      .def("reads_as_stored", &CpuRuntime::reads_as_stored, "input"_a)
      .def_prop_ro("threads", [](const CpuRuntime& rt) { return rt.options().threads; })
      .def_prop_ro("vector_width", [](const CpuRuntime& rt) { return rt.options().vector_width; })
      .def_prop_ro("dot_products", [](const CpuRuntime& rt) { return rt.options().dot_products; })
      .def("program_text", [](const CpuRuntime& rt) { return rt.program().to_string(); });
  m.def(
      "cpu_compile_flags",
      [](int vector_width, bool dot_products) {
        return cpu_compile_flags(cpu_vector_width(vector_width), dot_products);
      },
      "vector_width"_a = 0, "dot_products"_a = true);
  m.def("cpu_render", &cpu_render, "graph"_a, "choice"_a = TuningChoice{}, "vector_width"_a = 0,
        "dot_products"_a = true);
  m.def("cpu_rewrite_rules", &cpu_rewrite_rules, "vector_width"_a, "dot_products"_a = true);
  m.def("cpu_has_bf16_dot", &cpu_has_bf16_dot);
  // Test-only (codegen/planted_fault.h).
  m.def("_plant_fault", &plant_fault, "name"_a);
  m.def("cpu_has_int8_dot", &cpu_has_int8_dot);
  m.def("cpu_has_amx", &cpu_has_amx);
  m.def("cpu_has_amx_int8", &cpu_has_amx_int8);
  m.def("cpu_native_vector_width", &cpu_native_vector_width);
  nb::class_<KernelWork>(m, "KernelWork")
      .def_ro("root", &KernelWork::root)
      .def_ro("outputs", &KernelWork::outputs)
      .def_ro("iterations", &KernelWork::iterations)
      .def_ro("flops", &KernelWork::flops)
      .def_ro("special", &KernelWork::special)
      .def_ro("bytes_read", &KernelWork::bytes_read)
      .def_ro("loads", &KernelWork::loads)
      .def_ro("bytes_written", &KernelWork::bytes_written)
      .def_ro("matmul_flops", &KernelWork::matmul_flops)
      .def_ro("matmul_cycles", &KernelWork::matmul_cycles)
      .def_ro("parallel", &KernelWork::parallel)
      .def_ro("team", &KernelWork::team);
  m.def("cpu_kernel_work", &cpu_kernel_work, "graph"_a, "choice"_a, "dims"_a, "threads"_a = 1,
        "vector_width"_a = 0);
}

}  // namespace luminal
