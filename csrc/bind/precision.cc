// Binding of the half-precision pass: returns the new graph (owned by Python) and the map of
// old node ids to new ones.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "ir/precision.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

void init_precision(nb::module_& m) {
  m.def(
      "to_half",
      [](const Graph& graph, DType half) {
        HalfGraph h = to_half(graph, half);
        return std::make_pair(std::move(h.graph), std::move(h.map));
      },
      "graph"_a, "dtype"_a);
}

}  // namespace luminal
