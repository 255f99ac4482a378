// Graph builders with their shape/dtype checks, sharing of identical nodes, and printing.
#include "ir/graph.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "core/errors.h"
#include "ir/infer.h"
#include "ir/node_text.h"

namespace luminal {

namespace {
std::string shape_desc(const ShapeTracker& v) { return v.dims_string(); }

void add_symbols(const Expr& e, std::set<std::string>& out) {
  for (auto& s : e.symbols()) out.insert(s);
}

// `n` with its dtype and shape given by the typing rule (ir/infer.h), from its inputs in `nodes`.
Node typed(Node n, const std::vector<Node>& nodes) {
  std::vector<Operand> operands;
  for (const Edge& e : n.inputs) operands.push_back({nodes[e.node].dtype, &e.view});
  NodeType t = infer(n.op, n, operands);
  n.dtype = t.dtype;
  n.shape = std::move(t.shape);
  return n;
}

bool multiple_of(const Expr& e, int64_t block) {
  std::optional<int64_t> v = e.try_const();
  return !v || *v % block == 0;  // symbolic: checked where it is evaluated (set_data)
}

// A view of quantized storage reads whole blocks: no padding, an offset and every stride but
// the unit one a multiple of the block, and the unit-stride axis a whole number of blocks long.
void check_block_view(const ShapeTracker& v, DType dtype, const std::string& tensor) {
  const int64_t block = block_values(dtype);
  bool whole = !v.has_mask() && multiple_of(v.offset, block);
  for (size_t k = 0; k < v.rank(); ++k) {
    if (v.strides[k].try_const() == std::optional<int64_t>(1)) {
      whole = whole && multiple_of(v.dims[k], block);
    } else {
      whole = whole && multiple_of(v.strides[k], block);
    }
  }
  if (!whole) {
    throw ShapeError("Cast: the view " + v.to_string() + " of " + dtype_name(dtype) + " tensor " +
                     tensor + " splits its blocks of " + std::to_string(block) +
                     " values (slice or pad after the Cast instead)");
  }
}
}  // namespace

std::string Graph::tensor_desc(NodeId id) const {
  const Node& n = nodes_[id];
  return n.name.empty() ? "%" + std::to_string(id) : "'" + n.name + "'";
}

void Graph::refuse_quantized(const Edge& e, const char* what) const {
  DType dt = nodes_[e.node].dtype;
  if (!is_quantized(dt)) return;
  throw DTypeError(std::string(what) + ": " + dtype_name(dt) + " tensor " + tensor_desc(e.node) +
                   " is parameter storage only; Cast it to a float first");
}

std::string schedule_to_string(const ScheduleParams& schedule) {
  std::string out;
  for (const auto& [name, value] : schedule) {
    out += (out.empty() ? "(" : " (") + name + " " + std::to_string(value) + ")";
  }
  return out;
}

std::optional<int64_t> schedule_param(const ScheduleParams& schedule, const std::string& name) {
  for (const auto& [key, value] : schedule) {
    if (key == name) return value;
  }
  return std::nullopt;
}

void Graph::check_edge(const Edge& e, const char* what) const {
  if (e.node < 0 || static_cast<size_t>(e.node) >= nodes_.size()) {
    throw ShapeError(std::string(what) + ": node %" + std::to_string(e.node) +
                     " is not in this graph");
  }
  const Node& src = nodes_[e.node];
  if (src.op == OpKind::Output) {
    throw ShapeError(std::string(what) + ": cannot read from an Output node");
  }
  const ShapeTracker& v = e.view;
  if (v.strides.size() != v.rank() || v.mask_lo.size() != v.rank() ||
      v.mask_hi.size() != v.rank()) {
    throw ShapeError(std::string(what) + ": malformed view " + v.to_string());
  }
}

NodeId Graph::add(Node node, bool share) {
  NodeId id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(std::move(node));
  if (!share) return id;
  std::string key = node_to_string(id);
  auto it = by_text_.find(key);
  if (it != by_text_.end()) {
    nodes_.pop_back();
    return it->second;
  }
  by_text_.emplace(std::move(key), id);
  return id;
}

NodeId Graph::input(const std::string& name, const std::vector<Expr>& shape, DType dtype,
                    bool parameter) {
  if (is_quantized(dtype) && (shape.empty() || !multiple_of(shape.back(), block_values(dtype)))) {
    throw ShapeError("input '" + name + "' of " + dtype_name(dtype) + ": its last dimension (" +
                     (shape.empty() ? std::string("none") : shape.back().to_string()) +
                     ") is not a whole number of blocks of " +
                     std::to_string(block_values(dtype)));
  }
  Node n{OpKind::Input, {}, dtype, shape};
  n.name = name;
  n.parameter = parameter;
  NodeId id = add(std::move(n), false);
  inputs_.push_back(id);
  return id;
}

NodeId Graph::constant(double value, DType dtype) {
  Node n{OpKind::Constant, {}, dtype, {}};
  n.value = value;
  return add(std::move(n), true);
}

NodeId Graph::constant_expr(const Expr& value, DType dtype) {
  Node n{OpKind::Constant, {}, dtype, {}};
  n.expr = value;
  return add(std::move(n), true);
}

NodeId Graph::iota(const Expr& expr, const Expr& length) {
  Node n{OpKind::Iota, {}, DType::Int, {length}};
  n.expr = expr;
  return add(std::move(n), true);
}

NodeId Graph::unary(OpKind op, const Edge& a) {
  if (!is_unary(op)) throw InternalError(std::string(op_name(op)) + " is not a unary op");
  check_edge(a, op_name(op));
  refuse_quantized(a, op_name(op));
  DType dt = nodes_[a.node].dtype;
  if (!is_float(dt)) {
    throw DTypeError(std::string(op_name(op)) + ": needs a float tensor, got " +
                     dtype_name(dt) + " of shape " + shape_desc(a.view));
  }
  return add(typed(Node{op, {a}}, nodes_), true);
}

NodeId Graph::binary(OpKind op, const Edge& a, const Edge& b) {
  if (!is_binary(op)) throw InternalError(std::string(op_name(op)) + " is not a binary op");
  check_edge(a, op_name(op));
  check_edge(b, op_name(op));
  refuse_quantized(a, op_name(op));
  refuse_quantized(b, op_name(op));
  if (a.view.dims != b.view.dims) {
    throw ShapeError(std::string(op_name(op)) + ": shapes " + shape_desc(a.view) + " and " +
                     shape_desc(b.view) + " differ (broadcast them first)");
  }
  DType da = nodes_[a.node].dtype;
  DType db = nodes_[b.node].dtype;
  if (da != db) {
    throw DTypeError(std::string(op_name(op)) + ": dtypes " + dtype_name(da) + " and " +
                     dtype_name(db) + " differ (cast one first)");
  }
  if (op == OpKind::Mod && da == DType::Bool) {
    throw DTypeError("Mod: bool operands are not supported");
  }
  return add(typed(Node{op, {a, b}}, nodes_), true);
}

NodeId Graph::reduce(OpKind op, const Edge& a, int axis) {
  if (!is_reduce(op)) throw InternalError(std::string(op_name(op)) + " is not a reduction");
  check_edge(a, op_name(op));
  refuse_quantized(a, op_name(op));
  int rank = static_cast<int>(a.view.rank());
  if (axis < 0 || axis >= rank) {
    throw ShapeError(std::string(op_name(op)) + ": axis " + std::to_string(axis) +
                     " out of range for shape " + shape_desc(a.view));
  }
  DType dt = nodes_[a.node].dtype;
  if (op == OpKind::SumReduce && dt == DType::Bool) {
    throw DTypeError("SumReduce: bool tensors must be cast to int or float first");
  }
  Node n{op, {a}};
  n.axis = axis;
  return add(typed(std::move(n), nodes_), true);
}

NodeId Graph::gather(const Edge& data, const Edge& indices) {
  check_edge(data, "Gather");
  check_edge(indices, "Gather");
  refuse_quantized(data, "Gather");
  if (nodes_[indices.node].dtype != DType::Int) {
    throw DTypeError(std::string("Gather: indices must be int, got ") +
                     dtype_name(nodes_[indices.node].dtype));
  }
  return add(typed(Node{OpKind::Gather, {data, indices}}, nodes_), true);
}

NodeId Graph::cast(const Edge& a, DType dtype) {
  check_edge(a, "Cast");
  if (is_quantized(dtype)) {
    throw DTypeError(std::string("Cast: to ") + dtype_name(dtype) +
                     " is not an op (quantize weights when they are written: luminal quantize)");
  }
  DType from = nodes_[a.node].dtype;
  if (is_quantized(from)) {
    if (!is_float(dtype)) {
      throw DTypeError(std::string("Cast: ") + dtype_name(from) + " tensor " +
                       tensor_desc(a.node) + " dequantizes to a float, not " + dtype_name(dtype));
    }
    check_block_view(a.view, from, tensor_desc(a.node));
  }
  return add(typed(Node{OpKind::Cast, {a}, dtype}, nodes_), true);
}

NodeId Graph::output(const Edge& a) {
  check_edge(a, "Output");
  refuse_quantized(a, "Output");
  NodeId id = add(typed(Node{OpKind::Output, {a}}, nodes_), true);
  if (std::find(outputs_.begin(), outputs_.end(), id) == outputs_.end()) outputs_.push_back(id);
  return id;
}

NodeId Graph::add_like(const Node& like, const std::vector<Edge>& inputs) {
  if (static_cast<int>(inputs.size()) != op_arity(like.op)) {
    throw InternalError(std::string("add_like: ") + op_name(like.op) + " takes " +
                        std::to_string(op_arity(like.op)) + " inputs");
  }
  NodeId id = -1;
  switch (like.op) {
    case OpKind::Input:
      throw InternalError("add_like: an Input is made by Graph::input");
    case OpKind::Constant:
      id = like.expr ? constant_expr(*like.expr, like.dtype) : constant(like.value, like.dtype);
      break;
    case OpKind::Iota:
      id = iota(*like.expr, like.shape.at(0));
      break;
    case OpKind::SumReduce:
    case OpKind::MaxReduce:
      id = reduce(like.op, inputs[0], like.axis);
      break;
    case OpKind::Gather:
      id = gather(inputs[0], inputs[1]);
      break;
    case OpKind::Cast:
      id = cast(inputs[0], like.dtype);
      break;
    case OpKind::Output:
      id = output(inputs[0]);
      break;
    default:
      id = is_unary(like.op) ? unary(like.op, inputs[0]) : binary(like.op, inputs[0], inputs[1]);
      break;
  }
  return like.schedule.empty() ? id : scheduled(id, like.schedule);
}

NodeId Graph::scheduled(NodeId id, const ScheduleParams& schedule) {
  Node n = node(id);
  if (n.op == OpKind::Input || n.op == OpKind::Constant || n.op == OpKind::Output) {
    throw ShapeError(std::string("schedule: a ") + op_name(n.op) + " node takes no schedule");
  }
  for (const auto& [name, value] : schedule) {
    bool word = !name.empty();
    for (char c : name) word = word && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!word) throw ShapeError("schedule: bad parameter name '" + name + "'");
  }
  n.schedule = schedule;
  return add(std::move(n), true);
}

const Node& Graph::node(NodeId id) const {
  if (id < 0 || static_cast<size_t>(id) >= nodes_.size()) {
    throw ShapeError("node %" + std::to_string(id) + " is not in this graph");
  }
  return nodes_[id];
}

std::optional<NodeId> Graph::find_output(const Edge& edge) const {
  for (NodeId id : outputs_) {
    const Edge& e = nodes_[id].inputs[0];
    if (e.node == edge.node && e.view.same_as(edge.view)) return id;
  }
  return std::nullopt;
}

std::vector<NodeId> Graph::topo_order() const {
  // Node ids are created after their inputs, so id order is a topological order.
  std::vector<bool> needed(nodes_.size(), false);
  for (NodeId o : outputs_) needed[o] = true;
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (!needed[i]) continue;
    for (const Edge& e : nodes_[i].inputs) needed[e.node] = true;
  }
  std::vector<NodeId> order;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (needed[i]) order.push_back(static_cast<NodeId>(i));
  }
  return order;
}

std::vector<std::string> Graph::symbols() const {
  std::set<std::string> out;
  for (const Node& n : nodes_) {
    for (const Expr& d : n.shape) add_symbols(d, out);
    if (n.expr) add_symbols(*n.expr, out);  // a Constant's value, an Iota's expression
    for (const Edge& e : n.inputs) {
      add_symbols(e.view.offset, out);
      for (size_t k = 0; k < e.view.rank(); ++k) {
        add_symbols(e.view.dims[k], out);
        add_symbols(e.view.strides[k], out);
        add_symbols(e.view.mask_lo[k], out);
        add_symbols(e.view.mask_hi[k], out);
      }
    }
  }
  out.erase("z");  // the Iota index variable, bound per element
  return {out.begin(), out.end()};
}

std::string Graph::node_to_string(NodeId id) const {
  const Node& n = node(id);
  std::string out = std::string("(") + op_name(n.op);
  if (n.op == OpKind::Input) out += " \"" + n.name + "\"";
  out += attrs_text(n, ExprSpelling::Plain);
  if (n.op == OpKind::Input) out += " #" + std::to_string(id);  // inputs are never shared
  for (const Edge& e : n.inputs) out += " %" + std::to_string(e.node) + " " + e.view.to_string();
  return out + schedule_text(n.schedule) + ")";
}

std::string Graph::to_string() const {
  std::string out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    out += "%" + std::to_string(i) + " = " + node_to_string(static_cast<NodeId>(i)) + "\n";
  }
  return out;
}

}  // namespace luminal
