// CostModel::node_cost: per-op weights (transcendentals cost more than adds) times elements,
// plus reads priced by their view: contiguous 1, strided 1.5, padded 2, a broadcast scalar 0.1.
// An f32 matmul and a Cast widening a 16-bit float or rounding to one are priced by the
// runtime's KernelCost where one is given (the CPU's: runtime/cpu/cpu_kernel_cost.cc).
#include "egraph/cost.h"

#include <algorithm>

#include "egraph/matmul_shape.h"

namespace luminal::egraph {

double CostModel::elements(const std::vector<Expr>& shape) const {
  Expr n = product(shape);
  DynMap env = dims;
  for (const std::string& s : n.symbols()) env.emplace(s, kDefaultDim);
  return static_cast<double>(std::max<int64_t>(n.eval(env), 1));
}

// A matmul under the runtime's KernelCost, or -1 (no KernelCost, not a matmul, or not priced).
double CostModel::matmul_cost(const EGraph& g, const ENode& n) const {
  if (!kernel_cost) return -1;
  auto shape = matmul_shape(g, n);
  if (!shape) return -1;
  MatmulSize sized;
  sized.batch = size(shape->batch);
  sized.m = size(shape->m);
  if (shape->b_shared) {  // the batch runs as more rows of one matmul, B packed once
    sized.m *= sized.batch;
    sized.batch = 1;
  }
  sized.n = size(shape->n);
  sized.k = size(shape->k);
  sized.b_parameter = shape->b_parameter;
  double priced = kernel_cost->matmul(sized, g.attr(n.attr).node.schedule);
  return priced < 0 ? -1 : launch + priced;
}

double CostModel::priced_plain_cost(const EGraph& g, const ENode& n) const {
  auto it = plain_costs_->find(n);
  if (it != plain_costs_->end()) return it->second;
  double cost = plain_cost(g, n);
  plain_costs_->emplace(n, cost);
  return cost;
}

double CostModel::node_cost(const EGraph& g, const ENode& n, Id cls) const {
  double base = priced_plain_cost(g, n);
  static const ScheduleParams kNone;
  const ScheduleParams& s = n.attr >= 0 ? g.attr(n.attr).node.schedule : kNone;
  // Recomputing a node in each reader (inline 1) saves a store and a load per reader but
  // repeats the work; the model cannot count readers, so either fixed choice is priced a shade
  // above the lowering's default (the model's pick keeps the default) and timing decides.
  if (schedule_param(s, kInlineParam)) base *= 1.01;
  // A reduction computed in its readers, once per row (row 1), saves its launch and the pass
  // that stores it; a matmul so computed would lose its blocked kernel (a shade above).
  // The online max and sum of a softmax (row 2) is priced a shade above: timing decides.
  if (std::optional<int64_t> row = schedule_param(s, kRowParam); row && *row >= 1) {
    base = matmul_shape(g, n) ? base * 1.01 : base - launch;
    if (*row == 2) base *= 1.01;
  }
  // A fused attention (kernel/attention.h) saves the scores' passes over memory and the
  // softmax's kernels, which the model prices on other nodes: with the CPU's KernelCost (its
  // tiled kernel) its matmul is priced at half; elsewhere (CUDA's warp per row, untiled) a
  // shade above, and timing decides.
  if (schedule_param(s, kAttentionParam) == std::optional<int64_t>(1)) {
    base *= kernel_cost ? 0.5 : 1.01;
  }
  // Integer dot products of quantized activations (kernel/quant_dot.h): the CPU's KernelCost
  // prices them; elsewhere a shade above, and timing decides.
  if (schedule_param(s, kQuantDotParam) == std::optional<int64_t>(1) && !kernel_cost) {
    base *= 1.01;
  }
  // A matmul computing its A from its rows (kernel/prologue.h) saves the norm's pass and its
  // launch, which the model prices on other nodes: a shade above, and timing decides.
  if (schedule_param(s, kPrologueParam) == std::optional<int64_t>(1)) base *= 1.01;
  // A matmul gathering its B as it packs it (kernel/window.h) saves the windows' store and
  // reload and their buffer (k*k times the input), which the model prices on the Gather
  // either way; its pack copies runs of the input (c/window.cc) about as fast as the stored
  // windows' (benchmarks/conv.py on ResNet-18's layers: 18-40% below the stored windows' time
  // on the stem and the 64- and 128-channel layers, within 6% above on the 256- and
  // 512-channel ones): priced a pass over B below the stored windows' matmul, and timing
  // decides.
  if (schedule_param(s, kWindowParam) == std::optional<int64_t>(1)) {
    if (auto shape = matmul_shape(g, n)) {
      base -= size(shape->batch) * size(shape->k) * size(shape->n);
    }
    base *= 0.99;
  }
  if (!prefer.empty() && s == prefer) return base / 100;
  auto it = prefer_in_class.find(cls);
  if (it != prefer_in_class.end() && schedule_to_string(s) == it->second) return base / 100;
  return base;
}

double CostModel::plain_cost(const EGraph& g, const ENode& n) const {
  if (n.op == OpKind::Input || n.op == OpKind::Constant) return 0;
  auto read = [&](const EEdge& e) {
    const ClassData& d = g.data(e.cls);
    if (d.shape.empty()) return 0.1;  // a scalar, broadcast
    if (g.view_masked(e.view)) return 2.0;
    if (g.is_identity(e)) return 1.0;
    return 1.5;
  };
  if (n.op == OpKind::Iota) return launch + elements(g.attr(n.attr).node.shape);
  if (n.op == OpKind::SumReduce && g.data(n.children[0].cls).dtype == DType::F32) {
    if (double c = matmul_cost(g, n); c >= 0) return c;
  }
  if (n.op == OpKind::Cast && kernel_cost) {  // a widening or a rounding, as the runtime prices
    DType from = g.data(n.children[0].cls).dtype;
    DType to = g.attr(n.attr).node.dtype;
    const ScheduleParams& schedule = g.attr(n.attr).node.schedule;
    double count = elements(g.view(n.children[0].view).dims);
    if (is_narrow_storage(from) && to == DType::F32) {
      if (double c = kernel_cost->widen(count, schedule); c >= 0) return c;
    } else if (from == DType::F32 && is_half(to)) {
      if (double c = kernel_cost->narrow(count, schedule); c >= 0) return launch + c;
    }
  }
  if (is_reduce(n.op)) {
    return launch + elements(g.view(n.children[0].view).dims) * (1 + read(n.children[0]));
  }
  // Elementwise, Cast, Gather: one output element per element of the last operand's view.
  double count = elements(g.view(n.children.back().view).dims);
  double per = op_cost_weight(n.op);  // ops.def's cost column: work per element
  for (const EEdge& e : n.children) per += read(e);
  return launch + count * per;
}

double graph_work(const Graph& graph, const DynMap& dims) {
  CostModel model;
  model.dims = dims;
  double total = 0;
  for (NodeId id : graph.topo_order()) {
    const Node& n = graph.node(id);
    double most = model.elements(n.shape);
    for (const Edge& e : n.inputs) most = std::max(most, model.elements(e.view.dims));
    total += most;
  }
  return total;
}

}  // namespace luminal::egraph
