// match_q8_0_activations: the formula of hl_ops/quant_activations.py, read top down from its
// result. Each tensor the formula names more than once (y, d0, d16, ...) must be one id
// wherever it is read; every edge inside it is an identity view but the broadcasts of the
// block scales along their 32 values and the reads of x.
#include "ir/quant_activations.h"

#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "core/errors.h"
#include "ir/scalar_ops.h"

namespace luminal {

namespace {

// The formula's constants, as f32 (quant_activations.py and codegen/c/quant_int8.cc).
const double kRecip127 = static_cast<float>(1.0 / 127.0);
const double kNextUp = 0x1p-24 + 0x1p-47;
const double kBelowHalf = 0.4999999701976776;

using EdgeTest = std::function<bool(const QaEdge&)>;
using IdTest = std::function<bool(int64_t)>;

class Matcher {
 public:
  explicit Matcher(const QaGraph& g) : g_(g) {}

  std::optional<QaMatch> run(int64_t out) {
    std::vector<Expr> shape = g_.shape(out);
    if (shape.empty() || shape.back().try_const() != std::optional<int64_t>(kQ8Block)) {
      return std::nullopt;
    }
    if (!binary(out, OpKind::Mul, I([this](int64_t q) { return this->q(q); }), block_of("d16"))) {
      return std::nullopt;
    }
    s_.inner.push_back(out);
    return QaMatch{s_.x, std::set<int64_t>(s_.inner.begin(), s_.inner.end())};
  }

 private:
  // The tensors the formula names (definition()), by index.
  static constexpr const char* kNames[] = {"frac", "a",        "sy",  "y",  "inv",
                                           "keep", "d16",      "d",   "up", "residual",
                                           "ulp",  "d0",       "amax"};
  static constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);
  static size_t name_index(const std::string& name) {
    for (size_t k = 0; k < kNameCount; ++k) {
      if (name == kNames[k]) return k;
    }
    throw InternalError("q8_0 activations: no tensor named " + name);
  }

  // What a match has bound so far. Backtracking rolls back to a Mark: the bindings (a few
  // words) and how many inner tensors there were (inner only grows), so no attempt
  // allocates (an e-graph's classes hold many forms of each node).
  struct State {
    std::array<int64_t, kNameCount> named;  // -1: unbound
    QaEdge x;
    std::vector<int64_t> inner;  // the formula's tensors found (repeats allowed)
  };
  struct Mark {
    std::array<int64_t, kNameCount> named;
    QaEdge x;
    size_t inner = 0;
  };
  Mark mark() const { return Mark{s_.named, s_.x, s_.inner.size()}; }
  void roll_back(const Mark& m) {
    s_.named = m.named;
    s_.x = m.x;
    s_.inner.resize(m.inner);
  }

  // One of id's nodes of `op` for which `test` holds (the state rolled back after each miss).
  bool node(int64_t id, OpKind op, const std::function<bool(const QaNode&)>& test) {
    for (const QaNode& n : g_.nodes(id)) {
      if (n.op != op) continue;
      const Mark saved = mark();
      if (test(n)) {
        s_.inner.push_back(id);
        return true;
      }
      roll_back(saved);
    }
    return false;
  }

  // A binary node of `op` reading (a, b), in either order where op commutes.
  bool binary(int64_t id, OpKind op, const EdgeTest& a, const EdgeTest& b) {
    return node(id, op, [&](const QaNode& n) {
      const Mark saved = mark();
      if (a(n.inputs[0]) && b(n.inputs[1])) return true;
      roll_back(saved);
      bool commutes = op == OpKind::Add || op == OpKind::Mul;
      return commutes && a(n.inputs[1]) && b(n.inputs[0]);
    });
  }

  static bool identity(const QaEdge& e) { return e.identity; }

  // An identity read of a tensor for which `test` holds.
  EdgeTest I(IdTest test) {
    return [this, test](const QaEdge& e) { return identity(e) && test(e.id); };
  }

  // An identity read of the tensor the formula calls `name`: bound on its first read. A
  // definition that failed is not tried again with the same x (an e-graph's classes hold
  // many forms, and a miss deep in the formula would be searched again from every branch).
  EdgeTest named(const std::string& name) {
    const size_t k = name_index(name);
    return [this, name, k](const QaEdge& e) {
      if (!identity(e)) return false;
      if (s_.named[k] >= 0) return s_.named[k] == e.id;
      const std::tuple<size_t, int64_t, int64_t, const ShapeTracker*> key{k, e.id, s_.x.id,
                                                                          s_.x.view};
      if (failed_.count(key)) return false;
      if (!definition(name, e.id)) {
        failed_.insert(key);
        return false;
      }
      s_.named[k] = e.id;
      return true;
    };
  }

  // The block scale `name` (shape (..., blocks)) read along each block's 32 values.
  EdgeTest block_of(const std::string& name) {
    return [this, name](const QaEdge& e) {
      const ShapeTracker& v = *e.view;
      std::vector<Expr> shape = g_.shape(e.id);
      if (v.has_mask() || v.dims.size() != shape.size() + 1 || !is_zero(v.offset)) return false;
      if (v.dims.back().try_const() != std::optional<int64_t>(kQ8Block)) return false;
      if (!is_zero(v.strides.back())) return false;
      Expr stride = 1;
      for (size_t k = shape.size(); k-- > 0;) {
        if (!(v.dims[k] == shape[k]) || !(v.strides[k] == stride || is_one(shape[k]))) {
          return false;
        }
        stride = stride * shape[k];
      }
      ShapeTracker as_identity = ShapeTracker::contiguous(shape);
      QaEdge inner{e.id, &as_identity, true};
      return named(name)(inner);
    };
  }

  EdgeTest constant(double value) {
    return [this, value](const QaEdge& e) {
      std::optional<double> u = g_.uniform(e);
      return u && *u == static_cast<double>(static_cast<float>(value));
    };
  }

  // Row-major strides (an axis of extent 1 may have any), no mask, any offset.
  static bool dense(const ShapeTracker& v) {
    if (v.has_mask()) return false;
    Expr stride = 1;
    for (size_t k = v.dims.size(); k-- > 0;) {
      if (!(v.strides[k] == stride || is_one(v.dims[k]))) return false;
      stride = stride * v.dims[k];
    }
    return true;
  }

  // x, read as (..., blocks, 32) through a dense view (row-major strides, no mask; any
  // offset: a slice of whole rows, such as a model's last position before its head, whose
  // whole blocks the lowering checks, kernel/quant_dot.h): the same read every time.
  EdgeTest x() {
    return [this](const QaEdge& e) {
      if (!dense(*e.view)) return false;
      if (s_.x.id >= 0) return s_.x.id == e.id && s_.x.view->same_as(*e.view);
      s_.x = e;
      return true;
    };
  }

  // Cast(LessThan(a, b), f32): 1 where a < b, else 0.
  bool less(int64_t id, const EdgeTest& a, const EdgeTest& b) {
    return node(id, OpKind::Cast, [&](const QaNode& n) {
      if (n.dtype != DType::F32 || !identity(n.inputs[0])) return false;
      return node(n.inputs[0].id, OpKind::LessThan, [&](const QaNode& l) {
        return a(l.inputs[0]) && b(l.inputs[1]);
      });
    });
  }

  // s = 1 - 2 (v < 0): -1 where v is negative, else 1.
  bool sign_of(int64_t id, const EdgeTest& v) {
    IdTest flip = [&](int64_t f) { return less(f, v, constant(0)); };
    IdTest twice = [&](int64_t t) { return binary(t, OpKind::Mul, I(flip), constant(-2)); };
    return binary(id, OpKind::Add, I(twice), constant(1));
  }

  // out = q * d16: q = round(y) with y = x * inv, halves away from zero.
  bool q(int64_t id) {
    IdTest rounded = [&](int64_t r) {
      IdTest less_frac = [&](int64_t m) {
        return binary(m, OpKind::Mul, named("frac"), constant(-1));
      };
      IdTest floor = [&](int64_t f) { return binary(f, OpKind::Add, named("a"), I(less_frac)); };
      IdTest half = [&](int64_t h) { return less(h, constant(kBelowHalf), named("frac")); };
      return binary(r, OpKind::Add, I(floor), I(half));
    };
    return binary(id, OpKind::Mul, I(rounded), named("sy"));
  }

  // The definitions of the tensors the formula reads more than once.
  bool definition(const std::string& name, int64_t id) {
    if (name == "frac") {
      return node(id, OpKind::Mod, [&](const QaNode& n) {
        return named("a")(n.inputs[0]) && constant(1)(n.inputs[1]);
      });
    }
    if (name == "a") return binary(id, OpKind::Mul, named("y"), named("sy"));
    if (name == "sy") return sign_of(id, named("y"));
    if (name == "y") return binary(id, OpKind::Mul, x(), block_of("inv"));
    if (name == "inv") {
      IdTest not_kept = [&](int64_t n) {
        IdTest negated = [&](int64_t m) {
          return binary(m, OpKind::Mul, named("keep"), constant(-1));
        };
        return binary(n, OpKind::Add, I(negated), constant(1));
      };
      IdTest safe = [&](int64_t s) { return binary(s, OpKind::Add, named("d"), I(not_kept)); };
      IdTest recip = [&](int64_t r) {
        return node(r, OpKind::Recip, [&](const QaNode& n) { return I(safe)(n.inputs[0]); });
      };
      return binary(id, OpKind::Mul, I(recip), named("keep"));
    }
    if (name == "keep") return less(id, constant(0), named("d16"));
    if (name == "d16") {
      return node(id, OpKind::Cast, [&](const QaNode& n) {
        if (n.dtype != DType::F32) return false;
        return I([&](int64_t h) {
          return node(h, OpKind::Cast, [&](const QaNode& c) {
            return c.dtype == DType::F16 && named("d")(c.inputs[0]);
          });
        })(n.inputs[0]);
      });
    }
    if (name == "d") {
      IdTest step = [&](int64_t s) { return binary(s, OpKind::Mul, named("up"), named("ulp")); };
      return binary(id, OpKind::Add, named("d0"), I(step));
    }
    if (name == "up") {
      IdTest half_ulps = [&](int64_t h) {
        return binary(h, OpKind::Mul, named("ulp"), constant(63.5));
      };
      return less(id, I(half_ulps), named("residual"));
    }
    if (name == "residual") {
      IdTest scaled = [&](int64_t s) {
        return binary(s, OpKind::Mul, named("d0"), constant(-128));
      };
      IdTest part = [&](int64_t p) { return binary(p, OpKind::Add, named("amax"), I(scaled)); };
      return binary(id, OpKind::Add, I(part), named("d0"));
    }
    if (name == "ulp") {
      IdTest tiny = [&](int64_t t) {
        return binary(t, OpKind::Mul, named("d0"), constant(kNextUp));
      };
      IdTest next = [&](int64_t n) { return binary(n, OpKind::Add, named("d0"), I(tiny)); };
      IdTest minus = [&](int64_t m) { return binary(m, OpKind::Mul, named("d0"), constant(-1)); };
      return binary(id, OpKind::Add, I(next), I(minus));
    }
    if (name == "d0") return binary(id, OpKind::Mul, named("amax"), constant(kRecip127));
    if (name == "amax") {
      return node(id, OpKind::MaxReduce, [&](const QaNode& n) {
        const std::vector<Expr>& dims = n.inputs[0].view->dims;
        if (n.axis < 0 || static_cast<size_t>(n.axis) + 1 != dims.size()) return false;
        if (dims.back().try_const() != std::optional<int64_t>(kQ8Block)) return false;
        IdTest ax = [&](int64_t a) {
          IdTest sign = [&](int64_t s) { return sign_of(s, x()); };
          return binary(a, OpKind::Mul, x(), I(sign));
        };
        return I(ax)(n.inputs[0]);
      });
    }
    return false;
  }

  const QaGraph& g_;
  State s_ = [] {
    State s;
    s.named.fill(-1);
    return s;
  }();
  std::set<std::tuple<size_t, int64_t, int64_t, const ShapeTracker*>> failed_;
};

}  // namespace

std::optional<QaMatch> match_q8_0_activations(const QaGraph& g, int64_t out) {
  return Matcher(g).run(out);
}

bool rounds_computed_activations(const Graph& g) {
  GraphQa qa(g);
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (n.op != OpKind::Mul) continue;
    for (const Edge& e : n.inputs) {
      std::optional<QaMatch> m = match_q8_0_activations(qa, e.node);
      if (m && g.node(static_cast<NodeId>(m->x.id)).op != OpKind::Input) return true;
    }
    // A computed f32 value rounded to 16 bits and widened again (Linear(activations="bf16"));
    // not the f16 scale inside a Q8_0 round trip.
    if (match_q8_0_activations(qa, id)) continue;
    for (const Edge& e : n.inputs) {
      const Node& widened = g.node(e.node);
      if (widened.op != OpKind::Cast || widened.dtype != DType::F32) continue;
      const Node& rounded = g.node(widened.inputs[0].node);
      if (rounded.op != OpKind::Cast || !is_half(rounded.dtype)) continue;
      const Node& x = g.node(rounded.inputs[0].node);
      if (x.op != OpKind::Input && x.dtype == DType::F32) return true;
    }
  }
  return false;
}

const std::vector<QaNode>& GraphQa::nodes(int64_t id) const {
  auto [it, fresh] = nodes_.try_emplace(id);
  if (!fresh) return it->second;
  const Node& n = g_.node(static_cast<NodeId>(id));
  QaNode q{n.op, n.dtype, n.axis, {}};
  for (const Edge& e : n.inputs) {
    const bool identity =
        e.view.is_contiguous() && e.view.dims == g_.node(e.node).shape;
    q.inputs.push_back(QaEdge{e.node, &e.view, identity});
  }
  it->second.push_back(std::move(q));
  return it->second;
}

std::vector<Expr> GraphQa::shape(int64_t id) const {
  return g_.node(static_cast<NodeId>(id)).shape;
}

std::optional<double> GraphQa::uniform(const QaEdge& e) const {
  if (e.view->has_mask()) return std::nullopt;
  const Node& n = g_.node(static_cast<NodeId>(e.id));
  if (n.op == OpKind::Constant && !n.expr) return round_to_dtype(n.value, n.dtype);
  if (n.op == OpKind::Cast && g_.node(n.inputs[0].node).dtype == n.dtype) {
    return uniform(QaEdge{n.inputs[0].node, &n.inputs[0].view});
  }
  return std::nullopt;
}

}  // namespace luminal
