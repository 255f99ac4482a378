// Matmul epilogues (kernel/epilogue.h): the region of a reduction's readers its kernel
// computes, and the value order that puts the reduction's loop body first.
#include "kernel/epilogue.h"

#include <algorithm>
#include "kernel/buffer_plan.h"
#include "kernel/view_index.h"

namespace luminal {

namespace {

constexpr int64_t kMaxTrailing = 16;  // elements of the trailing axes a region node may add

bool same(const Expr& a, const Expr& b) { return is_zero(a - b); }

// The product of dims[from:], when every one of them is a constant.
std::optional<int64_t> trailing_elements(const std::vector<Expr>& dims, size_t from) {
  int64_t total = 1;
  for (size_t k = from; k < dims.size(); ++k) {
    std::optional<int64_t> d = dims[k].try_const();
    if (!d) return std::nullopt;
    total *= *d;
  }
  return total;
}

// Whether view `v` of a producer of `shape` reads, at consumer index (i, j...), the producer's
// element (i, j'...): the leading axes `rows` as laid out, the trailing ones (constant, few)
// inside the producer's own trailing block (a stacked pair's padding included).
bool reads_in_place(const ShapeTracker& v, const std::vector<Expr>& shape,
                    const std::vector<Expr>& rows) {
  const size_t r = rows.size();
  if (v.rank() < r || shape.size() < r) return false;
  const std::vector<Expr> strides = row_major_strides(shape);
  for (size_t k = 0; k < r; ++k) {
    if (!same(v.dims[k], rows[k]) || !same(shape[k], rows[k])) return false;
    if (!same(v.strides[k], strides[k]) || v.axis_masked(k)) return false;
  }
  std::optional<int64_t> block = trailing_elements(shape, r);
  std::optional<int64_t> count = trailing_elements(v.dims, r);
  std::optional<int64_t> offset = v.offset.try_const();
  if (!block || !count || !offset || *count > kMaxTrailing) return false;
  // Every valid trailing index of the view lands inside the block.
  for (int64_t flat = 0; flat < *count; ++flat) {
    int64_t at = *offset;
    int64_t rest = flat;
    bool valid = true;
    for (size_t k = v.rank(); k-- > r;) {
      const int64_t extent = *v.dims[k].try_const();
      const int64_t j = rest % extent;
      rest /= extent;
      std::optional<int64_t> stride = v.strides[k].try_const();
      std::optional<int64_t> lo = v.mask_lo[k].try_const();
      std::optional<int64_t> hi = v.mask_hi[k].try_const();
      if (!stride || !lo || !hi) return false;
      if (j < *lo || j >= *hi) valid = false;
      at += j * *stride;
    }
    if (valid && (at < 0 || at >= *block)) return false;
  }
  return true;
}

bool elementwise(const Node& n) { return is_elementwise(n.op) || unrolled_reduce(n); }

// A node the region may end on but not pass: one the plan stores whatever (forced, or
// scheduled as its own kernel or as stored). `row` means nothing on the elementwise nodes
// (and unrolled reductions) a region holds.
bool stops_region(const Node& n, bool forced) {
  if (forced) return true;
  for (const auto& [name, value] : n.schedule) {
    if (name == kRowParam) continue;
    if (name != kInlineParam || value != 1) return true;
  }
  return false;
}

}  // namespace

EpilogueRegion epilogue_region(const Graph& graph, const std::vector<NodeId>& order,
                               const std::vector<std::vector<NodeId>>& readers,
                               const std::vector<bool>& forced, const std::set<NodeId>& taken,
                               NodeId reduce) {
  EpilogueRegion best;
  const std::vector<Expr>& rows = graph.node(reduce).shape;
  auto start = std::find(order.begin(), order.end(), reduce);
  if (start == order.end() || readers[reduce].empty() || forced[reduce]) return best;
  std::set<NodeId> region = {reduce};
  std::vector<NodeId> members = {reduce};
  size_t open = readers[reduce].size();  // edges from the region to nodes outside it
  for (auto it = start + 1; it != order.end() && members.size() <= kMaxEpilogueNodes; ++it) {
    const NodeId id = *it;
    const Node& n = graph.node(id);
    size_t from_region = 0;
    bool fits = elementwise(n) && n.shape.size() >= rows.size() && !taken.count(id);
    for (const Edge& e : n.inputs) {
      if (!region.count(e.node)) continue;
      ++from_region;
      fits = fits && reads_in_place(e.view, graph.node(e.node).shape, rows);
    }
    if (from_region == 0) continue;
    std::optional<int64_t> extra = trailing_elements(n.shape, rows.size());
    fits = fits && extra && *extra <= kMaxTrailing;
    for (size_t k = 0; fits && k < rows.size(); ++k) fits = same(n.shape[k], rows[k]);
    if (!fits) break;
    region.insert(id);
    members.push_back(id);
    open = open - from_region + readers[id].size();
    // The whole region is read through this node alone, at the rows' own shape: a sink.
    const bool closes = open == readers[id].size() && !readers[id].empty();
    if (closes && n.shape.size() == rows.size()) {
      best.sink = id;
      best.inner.assign(members.begin(), members.end() - 1);
    }
    if (stops_region(n, forced[id])) break;
  }
  return best;
}

void reduction_first(Kernel& kernel) {
  if (kernel.reduce_at < 0) return;
  const size_t n = kernel.values.size();
  std::vector<bool> cone = kernel.cone(kernel.reduce_at);
  // Values outside the reduction's cone that the stored (last) value does not need are
  // dropped: lowering leaves some (a padded place's elementwise chain, emitted before the
  // padding's zero replaced it), and moved after the reduction one of them would end up last,
  // where the store takes its value.
  std::vector<bool> live = kernel.cone(static_cast<ValueId>(n) - 1);
  std::vector<ValueId> order;  // new position -> old id
  for (size_t i = 0; i < n; ++i) {
    if (cone[i]) order.push_back(static_cast<ValueId>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    if (!cone[i] && live[i]) order.push_back(static_cast<ValueId>(i));
  }
  std::vector<ValueId> renamed(n, -1);
  for (size_t k = 0; k < order.size(); ++k) renamed[order[k]] = static_cast<ValueId>(k);
  std::vector<Value> values;
  for (ValueId old : order) {
    Value v = kernel.values[old];
    for (ValueId& a : v.args) a = renamed[a];
    for (Bind& b : v.binds) b.value = renamed[b.value];
    values.push_back(std::move(v));
  }
  kernel.values = std::move(values);
  kernel.reduce_at = renamed[kernel.reduce_at];
}

}  // namespace luminal
