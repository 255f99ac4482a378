// quant_dot_region and quant_dot_shaped (kernel/quant_dot.h).
#include "kernel/quant_dot.h"

#include <map>
#include <optional>

#include "ir/quant_activations.h"
#include "kernel/buffer_plan.h"

namespace luminal {

namespace {

// A constant multiple of `block`.
bool whole_blocks(const Expr& e, int64_t block) {
  std::optional<int64_t> v = e.try_const();
  return v && *v % block == 0;
}

// Whether load `v`'s index moves in whole blocks along every loop of `k` but the reduction
// (stride 1 there) and starts on one.
bool reads_whole_blocks(const Kernel& k, const Value& v, int64_t block) {
  std::map<std::string, Expr> zero = {{k.reduce[0].var, 0}};
  for (const Loop& l : k.loops) {
    zero[l.var] = 0;
    std::optional<Expr> stride = affine_stride(v.index, l.var);
    if (!stride || (!is_zero(*stride) && !whole_blocks(*stride, block))) return false;
  }
  // where it starts: a constant, or a symbolic offset in whole blocks (a slice of rows)
  return is_zero(v.index.substitute(zero) % Expr(block));
}

}  // namespace

QuantDotRegion quant_dot_region(const Graph& graph, NodeId reduce) {
  QuantDotRegion none;
  const Node& root = graph.node(reduce);
  if (root.op != OpKind::SumReduce || unrolled_reduce(root)) return none;
  NodeId product = root.inputs[0].node;
  if (graph.node(product).op != OpKind::Mul) return none;
  GraphQa qa(graph);
  for (const Edge& e : graph.node(product).inputs) {
    std::optional<QaMatch> m = match_q8_0_activations(qa, e.node);
    if (!m) continue;
    QuantDotRegion r;
    r.out = e.node;
    r.x = Edge{static_cast<NodeId>(m->x.id), *m->x.view};
    for (int64_t id : m->inner) r.inner.insert(static_cast<NodeId>(id));
    r.inner.insert(product);
    return r;
  }
  return none;
}

bool quant_dot_shaped(const Kernel& k, BufferId x) {
  const MatmulInfo& mm = k.matmul;
  if (!mm.present || mm.a_widened || mm.product_widened || mm.dtype != DType::F32) return false;
  const Value& a = k.values[mm.a];
  if (a.kind != ValueKind::kLoad || a.buffer != x || !a.binds.empty() || !is_one(a.valid)) {
    return false;
  }
  DType w = mm.b_stored;
  if (!mm.b_widened || !is_quantized(w)) return false;
  if (k.values[k.reduce_at].dtype != DType::F32 || k.values.back().dtype != DType::F32) {
    return false;
  }
  if (!is_one(mm.a_k) || !is_one(mm.b_k) || k.reduce.size() != 1) return false;
  const int64_t block = block_values(w);
  const Expr& depth = k.reduce[0].extent;
  if (!whole_blocks(depth, block) || !whole_blocks(depth, kQ8Block)) return false;
  if (!whole_blocks(mm.b_n, block)) return false;
  return reads_whole_blocks(k, a, kQ8Block) && reads_whole_blocks(k, k.values[mm.b], block);
}

}  // namespace luminal
