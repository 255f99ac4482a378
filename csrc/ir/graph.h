// The HLIR graph: nodes of the ops in ops.def, each reading its inputs through a view
// (ShapeTracker) and producing one contiguous tensor. Identical nodes are shared on creation
// (hash-consing by printed form). Every builder checks shapes and dtypes and throws
// ShapeError / DTypeError; a built graph is always well-formed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/symbolic.h"
#include "ir/op.h"
#include "ir/shape_tracker.h"

namespace luminal {

using NodeId = int32_t;

// A kernel-level choice a runtime's rewrite rules attach to a node (csrc/egraph): the node
// roots its own kernel, built with these parameters (tile sizes, vector width, a reduction
// strategy...). Parameter names belong to the runtime; values are small integers. A schedule
// never changes a node's value: interpreters ignore it, and nodes that differ only in their
// schedule are different nodes (so the search can tell them apart).
// The one spelling of an untyped schedule: a node's (here), a program-wide tuning choice's
// (runtime/runtime.h TuningChoice::params) and a kernel's (kernel/kernel.h Kernel::schedule).
// A runtime reads it through its typed view, which names, checks and defaults its parameters:
// CpuSchedule (codegen/c/schedule.h), CudaSchedule (codegen/cuda/renderer.h).
using ScheduleParams = std::vector<std::pair<std::string, int64_t>>;

// The parameters the lowering itself reads, whatever the runtime (kernel/lower.cc):
// "inline" 1 recomputes an elementwise node in each of its readers, 0 stores it once;
// "row" 1 computes a reduction in the kernels that read it, once per row (kernel/row_kernel.h).
inline constexpr char kInlineParam[] = "inline";
inline constexpr char kRowParam[] = "row";
// "attention" 1 on a SumReduce of softmax weights times values computes the weights' cone in
// its kernel, streaming the keys (kernel/attention.h).
inline constexpr char kAttentionParam[] = "attention";
// "quant_dot" 1 on a SumReduce of quantized activations (the Q8_0 round trip of x,
// ir/quant_activations.h) times a dequantized weight reads x in its kernel, which quantizes it
// itself and multiplies integers (kernel/quant_dot.h).
inline constexpr char kQuantDotParam[] = "quant_dot";
// "prologue" 1 on a SumReduce of a product computes its A (the operand read through a broadcast
// along the matmul's columns) in its kernel from A's rows, a row's statistics once per row: a
// norm before a Linear is never stored (kernel/prologue.h).
inline constexpr char kPrologueParam[] = "prologue";
// "window" 1 on a SumReduce of a product whose B (the operand read through a broadcast along
// the matmul's rows) is a Gather at index arithmetic of its loops (a convolution's windows,
// nn/_grid.gather_linear) reads B through the Gather in its kernel: the windows are gathered
// as the GEMM packs its panels of B, never stored (implicit GEMM; kernel/window.h).
inline constexpr char kWindowParam[] = "window";
// "winograd" m (2 or 4) beside window 1 on a convolution's SumReduce computes it by Winograd's
// F(m x m, 3x3) where it is a 3x3 stride-1 convolution of one group (kernel/winograd.h);
// elsewhere it is the window matmul.
inline constexpr char kWinogradParam[] = "winograd";

// "(tile_m 4) (tile_n 16)"; "" when empty.
std::string schedule_to_string(const ScheduleParams& schedule);
// The value of the first entry of `schedule` named `name`, if any.
std::optional<int64_t> schedule_param(const ScheduleParams& schedule, const std::string& name);

// An input of a node: which node, read through which view.
struct Edge {
  NodeId node;
  ShapeTracker view;
};

struct Node {
  OpKind op;
  std::vector<Edge> inputs;  // op_arity(op) of them
  DType dtype = DType::F32;  // of the output
  std::vector<Expr> shape;   // of the output, which is contiguous
  // Attributes; each is meaningful only for the ops named.
  std::string name;          // Input: the user's name for it
  bool parameter = false;    // Input: a parameter (a weight), constant across executions, so a
                             // runtime may lay it out once when its data is set
  double value = 0;          // Constant: the number, unless expr is set
  std::optional<Expr> expr;  // Constant: a symbolic value; Iota: the element expression in z
  int axis = -1;             // SumReduce, MaxReduce: the reduced axis of the input view
  ScheduleParams schedule;   // any computed node: how its kernel is built (empty: default)
};

class Graph {
 public:
  // `parameter`: the input's data stays the same across executions (Node::parameter).
  NodeId input(const std::string& name, const std::vector<Expr>& shape, DType dtype,
               bool parameter = false);
  NodeId constant(double value, DType dtype);
  NodeId constant_expr(const Expr& value, DType dtype);
  NodeId iota(const Expr& expr, const Expr& length);
  NodeId unary(OpKind op, const Edge& a);
  NodeId binary(OpKind op, const Edge& a, const Edge& b);
  NodeId reduce(OpKind op, const Edge& a, int axis);
  NodeId gather(const Edge& data, const Edge& indices);
  NodeId cast(const Edge& a, DType dtype);
  NodeId output(const Edge& a);
  // A node of like.op with like's attributes (ir/node_text.h attributes_of) and schedule, reading
  // `inputs`, through the builder of its op (so checked like any other). Not for Input.
  NodeId add_like(const Node& like, const std::vector<Edge>& inputs);
  // The node `id` with `schedule` attached (a new node; `id` is unchanged). Only a computed
  // node (not Input, Constant or Output) takes a schedule.
  NodeId scheduled(NodeId id, const ScheduleParams& schedule);

  const Node& node(NodeId id) const;
  size_t size() const { return nodes_.size(); }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  const std::vector<NodeId>& inputs() const { return inputs_; }
  // The Output node reading `edge`, if one was made.
  std::optional<NodeId> find_output(const Edge& edge) const;
  // Nodes needed for the outputs, producers before consumers.
  std::vector<NodeId> topo_order() const;
  // Symbols used anywhere in the graph's shapes, views and expressions.
  std::vector<std::string> symbols() const;

  std::string node_to_string(NodeId id) const;  // "(Add %3 (view ...) %4 (view ...))"
  std::string to_string() const;                // one line per node

 private:
  NodeId add(Node node, bool share);
  void check_edge(const Edge& e, const char* what) const;
  // DTypeError when `e` reads quantized storage, which only a Cast (to a float) may read.
  void refuse_quantized(const Edge& e, const char* what) const;
  std::string tensor_desc(NodeId id) const;  // "'name'" for a named input, "%id" otherwise
  std::vector<Node> nodes_;
  std::vector<NodeId> outputs_;
  std::vector<NodeId> inputs_;
  std::unordered_map<std::string, NodeId> by_text_;  // printed node -> id, for sharing
};

}  // namespace luminal
