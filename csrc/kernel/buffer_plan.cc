// The default lowering's fusion decisions (buffer_plan.h).
#include "kernel/buffer_plan.h"

#include <algorithm>
#include <optional>

#include "kernel/attention.h"
#include "kernel/epilogue.h"
#include "kernel/prologue.h"
#include "kernel/quant_dot.h"
#include "kernel/row_kernel.h"
#include "kernel/view_index.h"
#include "kernel/window.h"

namespace luminal {

namespace {
constexpr int64_t kUnrollReduce = 4;  // the most elements an unrolled reduction combines
// The longest chain of nodes fused into one kernel: lowering (kernel/lower.cc) recurses along
// it, so a longer chain (20000 chained adds) is cut by storing the node that would pass it.
constexpr int kMaxFusedDepth = 512;
}  // namespace

bool unrolled_reduce(const Node& n) {
  if (!is_reduce(n.op) || (n.dtype != DType::F32 && n.dtype != DType::Int)) return false;
  auto extent = n.inputs[0].view.dims[static_cast<size_t>(n.axis)].try_const();
  return extent && *extent >= 1 && *extent <= kUnrollReduce;
}

namespace {

class Planner {
 public:
  Planner(const Graph& graph, const std::set<NodeId>& unfused) : g_(graph), unfused_(unfused) {}

  BufferPlan run(const std::vector<NodeId>& order) {
    p_.buffer_of.assign(g_.size(), -1);
    depth_.assign(g_.size(), 0);
    std::vector<int>& uses = uses_;
    uses.assign(g_.size(), 0);
    std::vector<bool> forced(g_.size(), false);
    std::vector<bool> gathered(g_.size(), false);
    std::vector<std::vector<NodeId>> readers(g_.size());
    row_kind_.assign(g_.size(), RowKind::kOther);
    index_arithmetic_.assign(g_.size(), false);
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      row_kind_[id] = row_kind(id);
      index_arithmetic_[id] = index_arithmetic(id);
      // The computed 16-bit values a Cast widens in its readers are stored (rounding x to
      // bf16 for a bf16 dot product: rules/cpu_bf16.rules), as an input is.
      const bool widens = widened_in_readers(id);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Edge& e = n.inputs[k];
        uses[e.node]++;
        readers[e.node].push_back(id);
        bool in_readers = widened_in_readers(e.node) || row_kind_[e.node] == RowKind::kRow;
        if (widens && g_.node(e.node).op != OpKind::Input) forced[e.node] = true;
        // A Gather's data is a buffer, or a widened Cast of one (an embedding table kept
        // quantized or in 16 bits: the Gather widens the rows it takes, lower.cc).
        if (n.op == OpKind::Gather && k == 0 && !widened_in_readers(e.node)) {
          forced[e.node] = true;
          gathered[e.node] = true;  // a constant too: the Gather loads (and bounds-checks) it
        }
        if (broadcasts(e.view) && !in_readers && !index_arithmetic_[e.node]) {
          forced[e.node] = true;
        }
        if (product(g_.node(e.node).shape).try_const() == std::optional<int64_t>(0)) {
          forced[e.node] = true;
        }
      }
    }
    // An Output that is the only reader of a computed node, through an identity view, takes
    // over that node's kernel: the node stores straight into the output buffer.
    std::vector<NodeId> output_of(g_.size(), -1);
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op != OpKind::Output) continue;
      const Edge& e = n.inputs[0];
      OpKind src = g_.node(e.node).op;
      if (src == OpKind::Input || uses[e.node] != 1 || forced[e.node]) continue;
      if (!is_identity_view(e.view, g_.node(e.node).shape)) continue;
      output_of[e.node] = id;
      p_.skipped.insert(id);
    }
    plan_attention(order, readers);
    plan_quant_dots(order, readers, forced);
    plan_prologues(order, readers);
    plan_windows(order);
    plan_epilogues(order, readers, forced);
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      bool source = n.op == OpKind::Constant || n.op == OpKind::Iota;
      if (p_.skipped.count(id)) continue;
      if (epilogue_inner_.count(id) || attention_inner_.count(id) || quant_inner_.count(id) ||
          prologue_inner_.count(id) || window_inner_.count(id)) {
        depth_[id] = fused_depth(n);
        continue;
      }
      if (output_of[id] >= 0) {
        add(output_of[id], BufferRole::kOutput);
        p_.buffer_of[id] = p_.buffer_of[output_of[id]];
      } else if (n.op == OpKind::Input) {
        add(id, BufferRole::kInput);
      } else if (n.op == OpKind::Output) {
        add(id, BufferRole::kOutput);
      } else if (row_fused(id) && !forced[id]) {
        // computed by its readers
      } else if ((is_reduce(n.op) && !unrolled_reduce(n)) || epilogue_sinks_.count(id)) {
        add(id, BufferRole::kTemp);
      } else if (source ? (forced[id] && (n.op == OpKind::Iota || gathered[id]))
                        : ((uses[id] > 1 && !recomputed(id)) || forced[id] || roots_kernel(n) ||
                           fused_depth(n) > kMaxFusedDepth)) {
        add(id, BufferRole::kTemp);
      }
      depth_[id] = p_.buffer_of[id] >= 0 ? 0 : fused_depth(n);
    }
    return std::move(p_);
  }

  // The chain of fused nodes `n` would end: 1 + the longest among its unstored inputs.
  int fused_depth(const Node& n) const {
    int most = 0;
    for (const Edge& e : n.inputs) {
      if (p_.buffer_of[e.node] < 0) most = std::max(most, depth_[e.node]);
    }
    return most + 1;
  }

 private:
  // The regions of the SumReduces scheduled `epilogue 1` (kernel/epilogue.h), in order; a node
  // belongs to one region at most (a later matmul whose reader an earlier region took, as
  // SwiGLU's up projection, is stored).
  void plan_epilogues(const std::vector<NodeId>& order,
                      const std::vector<std::vector<NodeId>>& readers,
                      const std::vector<bool>& forced) {
    std::set<NodeId> taken = attention_inner_;
    taken.insert(quant_inner_.begin(), quant_inner_.end());
    taken.insert(prologue_inner_.begin(), prologue_inner_.end());
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op != OpKind::SumReduce || unrolled_reduce(n)) continue;
      if (schedule_param(n.schedule, kEpilogueParam) != std::optional<int64_t>(1)) continue;
      if (taken.count(id)) continue;
      EpilogueRegion region = epilogue_region(g_, order, readers, forced, taken, id);
      if (region.sink < 0) continue;
      epilogue_sinks_.insert(region.sink);
      taken.insert(region.sink);
      for (NodeId inner : region.inner) {
        epilogue_inner_.insert(inner);
        taken.insert(inner);
      }
    }
  }

  // The regions of the SumReduces scheduled `attention 1` (kernel/attention.h), last first (a
  // region read by a later one's is left to it); a node belongs to one region at most.
  void plan_attention(const std::vector<NodeId>& order,
                      const std::vector<std::vector<NodeId>>& readers) {
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Node& n = g_.node(*it);
      if (n.op != OpKind::SumReduce || unfused_.count(*it) || attention_inner_.count(*it)) {
        continue;
      }
      if (schedule_param(n.schedule, kAttentionParam) != std::optional<int64_t>(1)) continue;
      AttentionRegion region = attention_region(g_, readers, *it);
      bool clash = false;
      for (NodeId inner : region.inner) clash = clash || attention_roots_.count(inner);
      if (region.inner.empty() || clash) continue;
      attention_roots_.insert(*it);
      p_.attention_roots.insert(*it);
      attention_inner_.insert(region.inner.begin(), region.inner.end());
      p_.attention_keys.insert(region.keys.begin(), region.keys.end());
    }
  }

  // The SumReduces scheduled `quant_dot 1` (kernel/quant_dot.h): each reads its x, which is
  // stored; the formula's nodes read by none but such reduces (their products) are computed by
  // none. A reduce whose region another region's sits in is left to that one (none do here).
  void plan_quant_dots(const std::vector<NodeId>& order,
                       const std::vector<std::vector<NodeId>>& readers,
                       std::vector<bool>& forced) {
    std::set<NodeId> roots;
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op != OpKind::SumReduce || unfused_.count(id) || attention_inner_.count(id)) continue;
      if (schedule_param(n.schedule, kQuantDotParam) != std::optional<int64_t>(1)) continue;
      QuantDotRegion region = quant_dot_region(g_, id);
      if (region.out < 0 || attention_inner_.count(region.x.node)) continue;
      bool clash = false;
      for (NodeId inner : region.inner) clash = clash || attention_inner_.count(inner);
      if (clash) continue;
      roots.insert(id);
      p_.quant_dots.emplace(id, std::make_pair(region.out, region.x));
      quant_inner_.insert(region.inner.begin(), region.inner.end());
      forced[region.x.node] = true;
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = quant_inner_.begin(); it != quant_inner_.end();) {
        bool inside = true;
        for (NodeId r : readers[*it]) inside = inside && (roots.count(r) || quant_inner_.count(r));
        if (inside) {
          ++it;
          continue;
        }
        it = quant_inner_.erase(it);
        changed = true;
      }
    }
  }

  // The SumReduces scheduled `prologue 1` (kernel/prologue.h): each computes its A's cone; a
  // node of a cone stays computed inline only while all its readers are in some cone or are
  // such a SumReduce's product (the Q, K and V projections of one norm each compute it), else
  // it is planned as by default and the kernels read it.
  void plan_prologues(const std::vector<NodeId>& order,
                      const std::vector<std::vector<NodeId>>& readers) {
    std::set<NodeId> taken = attention_inner_;
    taken.insert(quant_inner_.begin(), quant_inner_.end());
    std::set<NodeId> products;
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op != OpKind::SumReduce || unfused_.count(id) || taken.count(id)) continue;
      if (schedule_param(n.schedule, kPrologueParam) != std::optional<int64_t>(1)) continue;
      std::set<NodeId> region = prologue_region(g_, id, taken);
      if (region.empty()) continue;
      p_.prologues.insert(id);
      products.insert(n.inputs[0].node);
      prologue_inner_.insert(region.begin(), region.end());
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = prologue_inner_.begin(); it != prologue_inner_.end();) {
        bool inside = true;
        for (NodeId r : readers[*it]) {
          inside = inside && (products.count(r) || prologue_inner_.count(r));
        }
        if (inside) {
          ++it;
          continue;
        }
        it = prologue_inner_.erase(it);
        changed = true;
      }
    }
  }

  // The SumReduces scheduled `window 1` (kernel/window.h): each computes its B's Gather, read
  // by it alone, at index arithmetic of its loops (a view of the data, lower.cc emit_gather).
  void plan_windows(const std::vector<NodeId>& order) {
    for (NodeId id : order) {
      const Node& n = g_.node(id);
      if (n.op != OpKind::SumReduce || unfused_.count(id) || attention_inner_.count(id) ||
          quant_inner_.count(id) || prologue_inner_.count(id)) {
        continue;
      }
      if (schedule_param(n.schedule, kWindowParam) != std::optional<int64_t>(1)) continue;
      const NodeId gather = window_gather(g_, id, uses_);
      if (gather < 0 || !index_arithmetic_[g_.node(gather).inputs[1].node]) continue;
      p_.windows.insert(id);
      window_inner_.insert(gather);
    }
  }

  void add(NodeId id, BufferRole role) {
    p_.buffer_of[id] = static_cast<int>(p_.buffers.size());
    p_.buffers.push_back(PlannedBuffer{id, role});
  }

  // Fusion of nodes read by several kernels: an elementwise node whose inlined cone (up to
  // buffers) costs at most kRecomputeCost is recomputed by each reader instead of stored once
  // and loaded by each: a few flops are cheaper than a pass over memory and a kernel launch.
  // A cone holding another node read by several kernels is stored instead: recomputing chains
  // of them (a residual stream, each layer's sum read by its norm and by the next sum) repeats
  // each link in every later reader, and the kernels of a stack of identical layers would
  // differ layer by layer instead of repeating (one compile each, not one for all).
  static constexpr int kRecomputeCost = 16;

  bool cheap_to_recompute(NodeId id) const { return inline_cost(id, kRecomputeCost) >= 0; }

  // The cost of computing node `id` where it is read (0 for a buffer), or -1 when over `budget`
  // or not recomputable (a reduction loop, a gather, an output, a cone holding another node of
  // several readers). Weights: ops.def's recompute.
  int inline_cost(NodeId id, int budget, bool root = true) const {
    const Node& n = g_.node(id);
    if (p_.buffer_of[id] >= 0 || n.op == OpKind::Constant) return 0;
    if (row_kind_[id] == RowKind::kRow) return 0;  // a statistic, computed once per row
    if (!root && uses_[id] > 1 && !index_arithmetic_[id]) return -1;
    int own = op_recompute_weight(n.op);
    if (is_reduce(n.op)) {
      auto extent = n.inputs[0].view.dims[static_cast<size_t>(n.axis)].try_const();
      own = unrolled_reduce(n) ? own * static_cast<int>(*extent) : -1;
    }
    if (own < 0) return -1;
    int total = own;
    for (const Edge& e : n.inputs) {
      if (total > budget) return -1;
      int c = inline_cost(e.node, budget - total, false);
      if (c < 0) return -1;
      total += c;
    }
    return total > budget ? -1 : total;
  }

  // Schedule parameter kInlineParam = 1: an elementwise node read by several kernels is
  // recomputed in each instead of stored once (a fusion choice of the search); = 0 stores it.
  // Without the parameter, cheap nodes are recomputed (cheap_to_recompute).
  bool recomputed(NodeId id) const {
    std::optional<int64_t> choice = schedule_param(g_.node(id).schedule, kInlineParam);
    return choice ? *choice == 1 : index_arithmetic_[id] || cheap_to_recompute(id);
  }

  // Int arithmetic of loop indices: an Iota, an integral constant, or a few sums and products
  // of such (a conv's window index, nn/_grid.gather_linear), not scheduled `inline 0`. It is
  // recomputed by its readers, even through a broadcast or shared by several: a few integer
  // ops, which a Gather reading by it turns into a view (lower.cc emit_gather) where storing
  // it would cost a pass over memory and a division per element. Set for inputs before nodes.
  static constexpr int kIndexArithmeticNodes = 16;
  bool index_arithmetic(NodeId id) const {
    const Node& n = g_.node(id);
    if (n.dtype != DType::Int) return false;
    if (schedule_param(n.schedule, kInlineParam) == std::optional<int64_t>(0)) return false;
    if (n.op == OpKind::Iota || n.op == OpKind::Constant) return true;
    if (n.op != OpKind::Add && n.op != OpKind::Mul) return false;
    std::vector<NodeId> stack = {id};
    int seen = 0;
    while (!stack.empty()) {  // the cone, each path counted: small cones only
      const Node& m = g_.node(stack.back());
      stack.pop_back();
      if (++seen > kIndexArithmeticNodes) return false;
      if (m.op == OpKind::Add || m.op == OpKind::Mul) {
        for (const Edge& e : m.inputs) {
          if (!index_arithmetic_[e.node]) return false;
          stack.push_back(e.node);
        }
      }
    }
    return true;
  }

  // A Cast of a 16-bit float (or quantized) input to f32 scheduled inline 1 is widened in the
  // registers of each reader, even through a broadcast: a matmul then packs or streams the
  // narrow storage (half the bytes, or a quarter and less) and no f32 copy is kept. So is one
  // of a 16-bit float the graph computes and stores (scheduled inline 0: a rounding,
  // rules/cpu_bf16.rules). Other nodes read through a broadcast are stored: recomputing them
  // would repeat their work along the broadcast.
  bool widened_in_readers(NodeId id) const {
    const Node& n = g_.node(id);
    if (n.op != OpKind::Cast || n.dtype != DType::F32) return false;
    const Node& source = g_.node(n.inputs[0].node);
    const bool stored = source.op == OpKind::Input ||
                        (is_half(source.dtype) &&
                         schedule_param(source.schedule, kInlineParam) == std::optional<int64_t>(0));
    if (!stored || !is_narrow_storage(source.dtype)) return false;
    return schedule_param(n.schedule, kInlineParam) == std::optional<int64_t>(1);
  }

  // A reduction scheduled `row 1` and not excluded by lowering: fused into its readers. Not a
  // sum of a broadcast product (a matmul, whose blocked kernel it would lose).
  bool row_fused(NodeId id) const {
    const Node& n = g_.node(id);
    if (!is_reduce(n.op) || unrolled_reduce(n) || unfused_.count(id)) return false;
    if (schedule_param(n.schedule, kRowParam).value_or(0) < 1) return false;
    return !broadcast_product(n);
  }

  // A SumReduce of a Mul (or of a Cast of one) whose operands are both read through a
  // broadcast: how hl_ops writes a matmul.
  bool broadcast_product(const Node& n) const {
    if (n.op != OpKind::SumReduce) return false;
    const Node* product = &g_.node(n.inputs[0].node);
    if (product->op == OpKind::Cast) product = &g_.node(product->inputs[0].node);
    if (product->op != OpKind::Mul) return false;
    return broadcasts(product->inputs[0].view) && broadcasts(product->inputs[1].view);
  }

  // A statistic of the rows: a fused reduction, or elementwise work on fused reductions and
  // constants (layer_norm's 1 / sqrt(var + eps), log_softmax's log of the sum). Read through a
  // broadcast along the row, it is computed once per row by its reader (a row kernel), so it is
  // not stored as other broadcast reads are. Set for the inputs of a node before the node.
  // kRow for such a statistic, kConstant for a constant or elementwise work on constants only
  // (mean's count), kOther for anything else.
  enum class RowKind : uint8_t { kOther, kConstant, kRow };
  RowKind row_kind(NodeId id) const {
    const Node& n = g_.node(id);
    if (row_fused(id)) return RowKind::kRow;
    if (n.op == OpKind::Constant) return RowKind::kConstant;
    bool elementwise = is_unary(n.op) || is_binary(n.op) || n.op == OpKind::Cast ||
                       unrolled_reduce(n);
    if (!elementwise || roots_kernel(n)) return RowKind::kOther;
    if (schedule_param(n.schedule, kInlineParam) == std::optional<int64_t>(0)) {
      return RowKind::kOther;
    }
    RowKind kind = RowKind::kConstant;
    for (const Edge& e : n.inputs) {
      RowKind k = row_kind_[e.node];
      if (k == RowKind::kOther) return RowKind::kOther;
      if (k == RowKind::kRow) kind = RowKind::kRow;
    }
    return kind;
  }

  // Any other schedule parameter makes the node the root of its own kernel.
  static bool roots_kernel(const Node& n) {
    for (const auto& [name, value] : n.schedule) {
      if (name != kInlineParam && name != kRowParam) return true;
    }
    return false;
  }

  const Graph& g_;
  const std::set<NodeId>& unfused_;
  BufferPlan p_;
  std::vector<int> uses_;   // readers of each node
  std::vector<bool> index_arithmetic_;  // per node: index_arithmetic, in topological order
  std::vector<int> depth_;  // fused_depth of each node planned so far (0: stored)
  std::set<NodeId> epilogue_inner_;  // computed inline in their region's sink (epilogue.h)
  std::set<NodeId> epilogue_sinks_;  // the stored ends of those regions
  std::set<NodeId> attention_inner_;  // computed inline in their attention kernel
  std::set<NodeId> attention_roots_;  // the SumReduces whose regions those are
  std::set<NodeId> quant_inner_;  // quantized activations no kernel computes (quant_dot.h)
  std::set<NodeId> prologue_inner_;  // computed inline in the matmuls reading them (prologue.h)
  std::set<NodeId> window_inner_;  // Gathers computed inline in the matmuls reading them (window.h)
  std::vector<RowKind> row_kind_;  // per node: row_kind, set in topological order
};

}  // namespace

BufferPlan plan_buffers(const Graph& graph, const std::vector<NodeId>& order,
                        const std::set<NodeId>& unfused) {
  return Planner(graph, unfused).run(order);
}

}  // namespace luminal
