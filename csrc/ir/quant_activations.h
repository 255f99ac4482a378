// Recognizes the Q8_0 round trip of a tensor x along its last dim, as
// python/luminal/hl_ops/quant_activations.py writes it in primitives (its formula, op for op,
// with either operand order of Add and Mul and constants in any uniform form), in an HLIR graph
// or an e-graph: the fact a rule condition (egraph/rewrite.h quant-dot) and the lowering's
// int8 region (kernel/quant_dot.h) rest on. Not the integer kernel (codegen/c/quant_int8.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace luminal {

constexpr int64_t kQ8Block = 32;  // values per block of quantized activations

// What the matcher reads. An id names a tensor (an HLIR node, an e-class); nodes(id) the ways
// it is computed (one in a graph, a class's e-nodes in an e-graph).
struct QaEdge {
  int64_t id = -1;
  const ShapeTracker* view = nullptr;
  bool identity = false;  // the view reads the tensor as produced (contiguous over its shape)
};
struct QaNode {
  OpKind op = OpKind::Add;
  DType dtype = DType::F32;
  int axis = -1;  // reductions
  std::vector<QaEdge> inputs;
};
class QaGraph {
 public:
  virtual ~QaGraph() = default;
  // Valid while the QaGraph lives (the matcher asks again and again as it backtracks).
  virtual const std::vector<QaNode>& nodes(int64_t id) const = 0;
  virtual std::vector<Expr> shape(int64_t id) const = 0;
  // The one value every element read through `e` has, if known (a constant, broadcast).
  virtual std::optional<double> uniform(const QaEdge& e) const = 0;
};

struct QaMatch {
  QaEdge x;                // x read as (..., K / 32, 32): a contiguous view
  std::set<int64_t> inner;  // the formula's tensors, `out` among them (not x, not constants)
};

// Whether `out` (shape (..., K / 32, 32)) is the Q8_0 round trip of some x.
std::optional<QaMatch> match_q8_0_activations(const QaGraph& g, int64_t out);

// Whether `g` rounds a value it computes (not one of its inputs) to Q8_0 activations, or to
// f16/bf16 and back to f32, that a Mul reads (a matmul's product): a rounding that moves by a
// whole step wherever a sum upstream is reassociated, so that equivalent programs of such a
// graph differ there by more than rounding (python/luminal/search/check.py compares their
// outputs normwise).
bool rounds_computed_activations(const Graph& g);

// The HLIR graph as a QaGraph (constants: Constant nodes, through same-dtype Casts).
class GraphQa : public QaGraph {
 public:
  explicit GraphQa(const Graph& g) : g_(g) {}
  const std::vector<QaNode>& nodes(int64_t id) const override;
  std::vector<Expr> shape(int64_t id) const override;
  std::optional<double> uniform(const QaEdge& e) const override;

 private:
  const Graph& g_;
  mutable std::unordered_map<int64_t, std::vector<QaNode>> nodes_;
};

}  // namespace luminal
