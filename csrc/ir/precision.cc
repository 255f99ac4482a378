// to_half: a memoized rebuild of the graph where each float node exists in up to two
// versions, its half one and (inside a sum's input chain) its f32 one.
#include "ir/precision.h"

#include <map>
#include <utility>

#include "core/errors.h"

namespace luminal {

namespace {
bool broadcasts(const ShapeTracker& v) {
  for (size_t k = 0; k < v.rank(); ++k) {
    auto s = v.strides[k].try_const();
    auto d = v.dims[k].try_const();
    if (s && *s == 0 && !(d && *d == 1)) return true;
  }
  return false;
}

class HalfPass {
 public:
  HalfPass(const Graph& g, DType half) : g_(g), half_(half) {}

  HalfGraph run() {
    HalfGraph out;
    out.map.assign(g_.size(), -1);
    // Node ids are topologically ordered: inputs before their readers.
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) out.map[id] = convert(id, false);
    out.graph = std::move(ng_);
    return out;
  }

 private:
  // A sum over products of two broadcast views: a matmul, kept in half.
  bool is_matmul_sum(const Node& n) const {
    const Node& in = g_.node(n.inputs[0].node);
    if (in.op != OpKind::Mul) return false;
    return broadcasts(in.inputs[0].view) && broadcasts(in.inputs[1].view);
  }

  Edge edge(const Edge& e, bool f32) { return Edge{convert(e.node, f32), e.view}; }

  // Computed from constants alone (no input): 1/n, eps, ...
  bool constant_like(NodeId id) {
    auto it = constant_.find(id);
    if (it != constant_.end()) return it->second;
    const Node& n = g_.node(id);
    bool out = n.op != OpKind::Input;
    for (const Edge& e : n.inputs) out = out && constant_like(e.node);
    constant_[id] = out;
    return out;
  }

  // A value downstream of an f32 sum that stays f32 until it meets a full tensor: the sum
  // itself, and unary ops or ops with a constant of what is (mean = sum * 1/n, + eps, rsqrt).
  bool stays_f32(NodeId id) {
    auto it = stays_.find(id);
    if (it != stays_.end()) return it->second;
    const Node& n = g_.node(id);
    bool out = false;
    if (is_float(n.dtype)) {
      if (n.op == OpKind::SumReduce) {
        out = !is_matmul_sum(n);
      } else if (is_unary(n.op)) {
        out = stays_f32(n.inputs[0].node);
      } else if (n.op == OpKind::Add || n.op == OpKind::Mul || n.op == OpKind::Mod) {
        NodeId a = n.inputs[0].node;
        NodeId b = n.inputs[1].node;
        bool a_const = constant_like(a);
        bool b_const = constant_like(b);
        out = (stays_f32(a) && (b_const || stays_f32(b))) || (a_const && stays_f32(b));
      }
    }
    stays_[id] = out;
    return out;
  }

  // The dtype node `n` gets: f32 inside a sum's chain, else half for f32 nodes.
  DType target(const Node& n, bool f32) const {
    if (!is_float(n.dtype)) return n.dtype;
    if (f32) return DType::F32;
    return n.dtype == DType::F32 ? half_ : n.dtype;
  }

  NodeId convert(NodeId id, bool f32) {
    const Node& n = g_.node(id);
    if (!is_float(n.dtype)) f32 = false;  // ints and bools have one version
    auto key = std::make_pair(id, f32);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    NodeId out = build(n, id, f32);
    memo_[key] = out;
    return out;
  }

  NodeId build(const Node& n, NodeId id, bool f32) {
    DType t = target(n, f32);
    if (!f32 && stays_f32(id)) {
      return ng_.cast(Edge{convert(id, true), ShapeTracker::contiguous(n.shape)}, t);
    }
    if (is_unary(n.op)) return ng_.unary(n.op, edge(n.inputs[0], f32));
    switch (n.op) {
      case OpKind::Input:
        if (f32) return up(convert(id, false), n.shape);
        return ng_.input(n.name, n.shape, t, n.parameter);
      case OpKind::Constant:
        return n.expr ? ng_.constant_expr(*n.expr, t) : ng_.constant(n.value, t);
      case OpKind::Iota:
        return ng_.iota(*n.expr, n.shape[0]);
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Mod:
        return ng_.binary(n.op, edge(n.inputs[0], f32), edge(n.inputs[1], f32));
      case OpKind::LessThan:
        return ng_.binary(n.op, edge(n.inputs[0], false), edge(n.inputs[1], false));
      case OpKind::SumReduce: {
        if (!is_float(n.dtype) || is_matmul_sum(n)) {
          NodeId r = ng_.reduce(n.op, edge(n.inputs[0], false), n.axis);
          return f32 ? up(r, n.shape) : r;
        }
        return ng_.reduce(n.op, edge(n.inputs[0], true), n.axis);  // f32: see stays_f32
      }
      case OpKind::MaxReduce:
        return ng_.reduce(n.op, edge(n.inputs[0], f32), n.axis);
      case OpKind::Gather:
        return ng_.gather(edge(n.inputs[0], f32), edge(n.inputs[1], false));
      case OpKind::Cast: {
        const Node& in = g_.node(n.inputs[0].node);
        return ng_.cast(edge(n.inputs[0], f32 && is_float(in.dtype)), t);
      }
      case OpKind::Output:
        return ng_.output(edge(n.inputs[0], false));
      default:
        break;  // unary ops above
    }
    throw InternalError("to_half: unknown op");
  }

  NodeId up(NodeId half_node, const std::vector<Expr>& shape) {
    return ng_.cast(Edge{half_node, ShapeTracker::contiguous(shape)}, DType::F32);
  }

  const Graph& g_;
  DType half_;
  Graph ng_;
  std::map<std::pair<NodeId, bool>, NodeId> memo_;
  std::map<NodeId, bool> stays_;
  std::map<NodeId, bool> constant_;
};
}  // namespace

HalfGraph to_half(const Graph& graph, DType half) {
  if (half != DType::F16 && half != DType::BF16) {
    throw DTypeError(std::string("to_half: dtype must be f16 or bf16, got ") + dtype_name(half));
  }
  return HalfPass(graph, half).run();
}

}  // namespace luminal
