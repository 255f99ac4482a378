// view_bounds.h: each edge's view evaluated at the binding, its lowest and highest position read
// compared with the operand's elements.
#include "runtime/view_bounds.h"

#include <algorithm>

#include "core/errors.h"
#include "runtime/native/host_elements.h"
#include "runtime/runtime.h"

namespace luminal {

namespace {
// The binding's values, "p = 1, s = 40".
std::string binding(const DynMap& dims) {
  std::string out;
  for (const auto& [name, value] : dims) {
    out += (out.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  }
  return out;
}

bool has_symbols(const ShapeTracker& view) {
  auto symbolic = [](const std::vector<Expr>& exprs) {
    return std::any_of(exprs.begin(), exprs.end(), [](const Expr& e) { return !e.is_const(); });
  };
  return !view.offset.is_const() || symbolic(view.dims) || symbolic(view.strides) ||
         symbolic(view.mask_lo) || symbolic(view.mask_hi);
}

// The read's finding at `dims` ("" when inside), the operand's size memoized in `numel`.
std::string overrun_of(const Graph& graph, const ViewRead& read, const DynMap& dims,
                       std::vector<int64_t>& numel) {
  const Edge& e = graph.node(read.first).inputs[read.second];
  const native::ConcreteView v = native::evaluate(e.view, dims);
  // The positions read: the indices inside both the dims and the mask, per axis.
  int64_t low = v.offset, high = v.offset;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    const int64_t first = std::max<int64_t>(v.lo[k], 0);
    const int64_t last = std::min(v.hi[k], v.dims[k]) - 1;
    if (first > last) return "";  // reads nothing
    low += std::min(v.strides[k] * first, v.strides[k] * last);
    high += std::max(v.strides[k] * first, v.strides[k] * last);
  }
  int64_t& size = numel[e.node];
  if (size < 0) {
    size = 1;
    for (int64_t d : native::evaluate(graph.node(e.node).shape, dims)) size *= d;
  }
  if (low >= 0 && high < size) return "";
  return node_desc(graph, read.first) + " reads element " + std::to_string(low < 0 ? low : high) +
         " of its operand " + node_desc(graph, e.node) + " (" + std::to_string(size) +
         " elements) at " + binding(dims);
}
}  // namespace

std::vector<ViewRead> fixed_operand_reads(const Graph& graph) {
  std::vector<ViewRead> reads;
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (product(graph.node(n.inputs[k].node).shape).is_const() && has_symbols(n.inputs[k].view)) {
        reads.emplace_back(id, k);
      }
    }
  }
  return reads;
}

std::string view_overrun(const Graph& graph, const std::vector<ViewRead>& reads,
                         const DynMap& dims) {
  std::vector<int64_t> numel(graph.size(), -1);
  for (const ViewRead& read : reads) {
    std::string found = overrun_of(graph, read, dims, numel);
    if (!found.empty()) return found;
  }
  return "";
}

std::string view_overrun(const Graph& graph, const DynMap& dims) {
  std::vector<ViewRead> reads;
  for (NodeId id : graph.topo_order()) {
    for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) reads.emplace_back(id, k);
  }
  return view_overrun(graph, reads, dims);
}

void check_views_in_bounds(const Graph& graph, const std::vector<ViewRead>& reads,
                           const DynMap& dims, const char* fn) {
  const std::string overrun = view_overrun(graph, reads, dims);
  if (!overrun.empty()) {
    throw ShapeError(std::string(fn) + ": the symbols' values are outside what this graph can " +
                     "take: " + overrun);
  }
}

}  // namespace luminal
