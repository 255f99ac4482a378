// Bindings of the Metal runtime (runtime/metal/metal.h): its options, the runtime on the
// Runtime base, and whether this build and system have Metal. .def lines only; on a build
// without Metal the constructor raises DeviceError (runtime/metal/metal_unavailable.cc).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "runtime/metal/metal.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

void init_metal_runtime(nb::module_& m) {
  nb::class_<MetalOptions>(m, "MetalOptions")
      .def(nb::init<>())
      .def_rw("cache_dir", &MetalOptions::cache_dir)
      .def_rw("device", &MetalOptions::device);
  nb::class_<MetalRuntime, Runtime>(m, "MetalRuntime")
      .def(nb::init<const MetalOptions&>(), "options"_a)
      .def("fix_choice", &MetalRuntime::fix_choice, "choice"_a)
      .def("benchmark", &MetalRuntime::benchmark, "dyn_map"_a, "iters"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("device_name", &MetalRuntime::device_name)
      .def_prop_ro("source", &MetalRuntime::source);
  m.def("metal_available", &metal_available);
}

}  // namespace luminal
