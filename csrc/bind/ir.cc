// Bindings of dtypes, ops, ShapeTracker and Graph. Graph nodes cross as integer ids; a
// Graph is owned by its Python object.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core/sizes.h"
#include "ir/graph.h"
#include "ir/quant_activations.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

void init_ir(nb::module_& m) {
  nb::enum_<DType> dtypes(m, "DType");
#define LUMINAL_DTYPE(name, ...) dtypes.value(#name, DType::name);
#include "core/dtypes.def"
#undef LUMINAL_DTYPE
  m.def("dtype_name", &dtype_name);
  m.def("dtype_size", &dtype_size);
  m.def("is_quantized", &is_quantized);
  m.def("block_values", &block_values);
  m.def("block_bytes", &block_bytes);
  m.def("storage_bytes", &storage_bytes, "dtype"_a, "count"_a);
  m.def("rounds_computed_activations", &rounds_computed_activations, "graph"_a);
  m.attr("max_buffer_bytes") = kMaxBufferBytes;
  m.def("schedule_to_string", &schedule_to_string, "schedule"_a);

  nb::enum_<OpKind> ops(m, "OpKind");
#define LUMINAL_OP(name, ...) ops.value(#name, OpKind::name);
#include "ir/ops.def"
#undef LUMINAL_OP
  nb::enum_<OpCategory>(m, "OpCategory")
      .value("Source", OpCategory::Source)
      .value("Unary", OpCategory::Unary)
      .value("Binary", OpCategory::Binary)
      .value("Reduce", OpCategory::Reduce)
      .value("Other", OpCategory::Other)
      .value("Sink", OpCategory::Sink);
  m.def("op_arity", &op_arity, "op"_a);
  m.def("op_category", &op_category, "op"_a);

  nb::class_<ShapeTracker>(m, "ShapeTracker")
      .def_static("contiguous", &ShapeTracker::contiguous, "dims"_a)
      .def_ro("dims", &ShapeTracker::dims)
      .def_ro("strides", &ShapeTracker::strides)
      .def_ro("offset", &ShapeTracker::offset)
      .def_ro("mask_lo", &ShapeTracker::mask_lo)
      .def_ro("mask_hi", &ShapeTracker::mask_hi)
      .def("rank", &ShapeTracker::rank)
      .def("numel", &ShapeTracker::numel)
      .def("has_mask", &ShapeTracker::has_mask)
      .def("is_contiguous", &ShapeTracker::is_contiguous)
      .def("same_as", &ShapeTracker::same_as)
      .def("permute", &ShapeTracker::permute, "axes"_a)
      .def("insert_axis", &ShapeTracker::insert_axis, "axis"_a, "size"_a)
      .def("expand_axis", &ShapeTracker::expand_axis, "axis"_a, "size"_a)
      .def("remove_axis", &ShapeTracker::remove_axis, "axis"_a)
      .def("slice", &ShapeTracker::slice, "axis"_a, "start"_a, "stop"_a, "step"_a)
      .def("flip", &ShapeTracker::flip, "axis"_a)
      .def("pad", &ShapeTracker::pad, "axis"_a, "before"_a, "after"_a)
      .def("reshape", &ShapeTracker::reshape, "dims"_a)
      .def("__str__", &ShapeTracker::to_string)
      .def("__repr__", &ShapeTracker::to_string);

  nb::class_<Graph>(m, "Graph")
      .def(nb::init<>())
      .def("input", &Graph::input, "name"_a, "shape"_a, "dtype"_a, "parameter"_a = false)
      .def("constant", &Graph::constant, "value"_a, "dtype"_a)
      .def("constant_expr", &Graph::constant_expr, "value"_a, "dtype"_a)
      .def("iota", &Graph::iota, "expr"_a, "length"_a)
      .def("unary", [](Graph& g, OpKind op, NodeId a, const ShapeTracker& av) {
        return g.unary(op, {a, av});
      })
      .def("binary", [](Graph& g, OpKind op, NodeId a, const ShapeTracker& av, NodeId b,
                        const ShapeTracker& bv) { return g.binary(op, {a, av}, {b, bv}); })
      .def("reduce", [](Graph& g, OpKind op, NodeId a, const ShapeTracker& av, int axis) {
        return g.reduce(op, {a, av}, axis);
      })
      .def("gather", [](Graph& g, NodeId d, const ShapeTracker& dv, NodeId i,
                        const ShapeTracker& iv) { return g.gather({d, dv}, {i, iv}); })
      .def("cast", [](Graph& g, NodeId a, const ShapeTracker& av, DType dtype) {
        return g.cast({a, av}, dtype);
      })
      .def("output", [](Graph& g, NodeId a, const ShapeTracker& av) { return g.output({a, av}); })
      .def("find_output", [](const Graph& g, NodeId a, const ShapeTracker& av) {
        return g.find_output({a, av});
      })
      .def("node_op", [](const Graph& g, NodeId id) { return g.node(id).op; })
      .def("node_dtype", [](const Graph& g, NodeId id) { return g.node(id).dtype; })
      .def("node_shape", [](const Graph& g, NodeId id) { return g.node(id).shape; })
      .def("node_name", [](const Graph& g, NodeId id) { return g.node(id).name; })
      .def("node_parameter", [](const Graph& g, NodeId id) { return g.node(id).parameter; })
      .def("node_inputs", [](const Graph& g, NodeId id) {
        std::vector<std::pair<NodeId, ShapeTracker>> edges;
        for (const Edge& e : g.node(id).inputs) edges.emplace_back(e.node, e.view);
        return edges;
      })
      .def("node_axis", [](const Graph& g, NodeId id) { return g.node(id).axis; })
      // A numeric Constant's value; None for any other node (a symbolic constant too).
      .def("node_value",
           [](const Graph& g, NodeId id) -> std::optional<double> {
             const Node& n = g.node(id);
             if (n.op != OpKind::Constant || n.expr) return std::nullopt;
             return n.value;
           })
      .def("node_schedule", [](const Graph& g, NodeId id) { return g.node(id).schedule; })
      .def("scheduled", &Graph::scheduled, "node"_a, "schedule"_a)
      .def("node_to_string", &Graph::node_to_string)
      .def("outputs", &Graph::outputs)
      .def("inputs", &Graph::inputs)
      .def("topo_order", &Graph::topo_order)
      .def("symbols", &Graph::symbols)
      .def("__len__", &Graph::size)
      .def("__str__", &Graph::to_string);
}

}  // namespace luminal
