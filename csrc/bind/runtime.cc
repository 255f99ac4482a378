// Bindings of the runtimes. Input data arrives as a C-contiguous CPU ndarray already in the
// input's storage format (the Python side converts); outputs leave as numpy arrays that own
// a copy of the result.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "core/errors.h"
#include "runtime/kernel_check.h"
#include "runtime/native/native.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

namespace {
// Read-only arrays too (memory-mapped weights, np.broadcast_to): runtimes only read inputs.
using CpuArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

void set_data(Runtime& rt, NodeId input, const CpuArray& data, DType dtype) {
  const int64_t count = elements_in(dtype, data.itemsize(), static_cast<int64_t>(data.size()));
  rt.set_data(input, data.data(), count, dtype);
}

// Runtime::check_kernels with the inputs' data as (node, array, dtype) triples, and the graph
// as written with each program node's original (KernelCheckOptions::original, optional) and
// the kernels checked before (KernelCheckOptions::checked); each kernel's verdict as a tuple
// (kernel, root, dtype, elements, got, want, problem, original), the kernels checked, the
// kernels' seconds and whether it stopped past stop_after_seconds.
nb::dict check_kernels_of(Runtime& rt, const DynMap& dyn_map,
                       const std::vector<std::tuple<NodeId, CpuArray, DType>>& inputs,
                       int samples, int repeat_samples, int64_t step_budget, uint64_t seed,
                       const Graph* original, const std::vector<NodeId>& original_of,
                       const std::set<std::string>& checked, double stop_after_seconds,
                       bool run_repeats) {
  std::map<NodeId, native::ElementSource> sources;
  for (const auto& [node, data, dtype] : inputs) {
    const int64_t count = elements_in(dtype, data.itemsize(), static_cast<int64_t>(data.size()));
    sources[node] = {static_cast<const uint8_t*>(data.data()), dtype, count};
  }
  KernelCheckOptions options;
  options.samples = samples;
  options.repeat_samples = repeat_samples;
  options.step_budget = step_budget;
  options.seed = seed;
  options.original = original;
  options.original_of = original_of;
  options.checked = checked;
  options.stop_after_seconds = stop_after_seconds;
  options.run_repeats = run_repeats;
  KernelCheckReport report;
  {
    nb::gil_scoped_release release;
    report = rt.check_kernels(dyn_map, sources, options);
  }
  nb::list kernels;
  for (const KernelSamples& k : report.kernels) {
    kernels.append(nb::make_tuple(k.kernel, k.root, k.dtype, k.elements, k.got, k.want,
                                  k.problem, k.original));
  }
  nb::dict out;
  out["kernels"] = kernels;
  out["steps"] = report.steps;
  out["distinct"] = report.distinct;
  out["classes_checked"] = report.classes_checked;
  out["checked"] = report.checked;
  out["kernel_seconds"] = report.kernel_seconds;
  out["stopped"] = report.stopped;
  out["skipped"] = report.skipped;
  return out;
}

nb::dlpack::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return nb::dtype<float>();
    case DType::F16:
      return nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::BF16:
      return nb::dtype<uint16_t>();  // raw bits; the Python side widens to float32
    case DType::Int:
      return nb::dtype<int32_t>();
    case DType::Bool:
      return nb::dtype<bool>();
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      break;  // never an output (Graph::output refuses them)
  }
  throw InternalError("unknown dtype");
}

nb::ndarray<nb::numpy> get(const Runtime& rt, NodeId output) {
  const HostBuffer& b = rt.get(output);
  auto* copy = new uint8_t[b.bytes.size() ? b.bytes.size() : 1];
  if (!b.bytes.empty()) std::memcpy(copy, b.bytes.data(), b.bytes.size());
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  std::vector<size_t> shape(b.shape.begin(), b.shape.end());
  return nb::ndarray<nb::numpy>(copy, shape.size(), shape.data(), owner, nullptr,
                                numpy_dtype(b.dtype));
}
}  // namespace

void init_runtime(nb::module_& m) {
  nb::class_<TuningChoice>(m, "TuningChoice")
      .def(nb::init<>())
      .def_rw("params", &TuningChoice::params)
      .def("__str__", &TuningChoice::to_string)
      .def("__repr__", &TuningChoice::to_string);
  nb::class_<Prepared>(m, "Prepared")
      .def_ro("fingerprint", &Prepared::fingerprint)
      .def_prop_ro("choice", [](const Prepared& p) { return p.choice; });
  nb::class_<Runtime>(m, "Runtime")
      .def_prop_ro("name", &Runtime::name)
      .def("compile", nb::overload_cast<const Graph&>(&Runtime::compile), "graph"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("compile", nb::overload_cast<const Graph&, const TuningChoice&>(&Runtime::compile),
           "graph"_a, "choice"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("prepare", &Runtime::prepare, "graph"_a, "choice"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("compile_prepared", nb::overload_cast<const Prepared&>(&Runtime::compile),
           "prepared"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("precompile", &Runtime::precompile, "prepared"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("kernel_work", &Runtime::kernel_work, "prepared"_a, "dims"_a)
      .def("reports_kernel_work", &Runtime::reports_kernel_work)
      .def("tuning_space", &Runtime::tuning_space, "graph"_a)
      .def("rewrite_rules", &Runtime::rewrite_rules)
      .def("set_data", &set_data, "input"_a, "data"_a, "dtype"_a)
      .def("execute", &Runtime::execute, "dyn_map"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("execute_carrying", &Runtime::execute_carrying, "dyn_map"_a, "carries"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("clear_data", &Runtime::clear_data)
      .def("can_time_kernels", &Runtime::can_time_kernels)
      .def("kernel_times", &Runtime::kernel_times, "dyn_map"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("get", &get, "output"_a)
      .def("can_check_kernels", &Runtime::can_check_kernels)
      .def("check_kernels", &check_kernels_of, "dyn_map"_a, "inputs"_a, "samples"_a,
           "repeat_samples"_a, "step_budget"_a, "seed"_a, "original"_a.none() = nb::none(),
           "original_of"_a = std::vector<NodeId>{}, "checked"_a = std::set<std::string>{},
           "stop_after_seconds"_a = 0.0, "run_repeats"_a = true);
  nb::class_<NativeRuntime, Runtime>(m, "NativeRuntime").def(nb::init<>());
}

}  // namespace luminal
