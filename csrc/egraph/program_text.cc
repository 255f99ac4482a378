// Writing and reading program text.
#include "egraph/program_text.h"

#include <functional>
#include <unordered_map>

#include "core/errors.h"
#include "core/sexpr.h"
#include "ir/node_text.h"

namespace luminal::egraph {

namespace {
// A view as program text writes an edge's: dims, strides, offset, mask bounds, braced.
std::string view_text(const ShapeTracker& v) {
  constexpr ExprSpelling kBraced = ExprSpelling::Braced;
  return exprs_text(v.dims, kBraced) + " " + exprs_text(v.strides, kBraced) + " " +
         expr_text(v.offset, kBraced) + " " + exprs_text(v.mask_lo, kBraced) + " " +
         exprs_text(v.mask_hi, kBraced);
}

// The text of `candidate`; with `line_nodes`, also the node each line was written from.
std::string write_program(const Candidate& candidate, std::vector<NodeId>* line_nodes) {
  const Graph& graph = candidate.graph;
  std::unordered_map<NodeId, int> number;
  std::string out = "(program\n";
  auto emit = [&](NodeId id, const std::string& line) {
    number[id] = static_cast<int>(number.size());
    if (line_nodes) line_nodes->push_back(id);
    out += " " + line + "\n";
  };
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Node& n = graph.node(graph.inputs()[i]);
    emit(graph.inputs()[i],
         "(Input " + std::to_string(i) + attrs_text(n, ExprSpelling::Braced) + ")");
  }
  std::function<void(NodeId)> visit = [&](NodeId id) {
    if (number.count(id)) return;
    const Node& n = graph.node(id);
    for (const Edge& e : n.inputs) visit(e.node);
    std::string line = std::string("(") + op_name(n.op) + attrs_text(n, ExprSpelling::Braced);
    for (const Edge& e : n.inputs) {
      line += " (e " + std::to_string(number.at(e.node)) + " " + view_text(e.view) + ")";
    }
    emit(id, line + schedule_text(n.schedule) + ")");
  };
  // One line per output position, repeats included, so parse_program rebuilds the same list.
  for (NodeId id : candidate.outputs) {
    const Edge& e = graph.node(id).inputs.at(0);
    visit(e.node);
    out += " (Output (e " + std::to_string(number.at(e.node)) + " " + view_text(e.view) + "))\n";
    number[-1 - static_cast<NodeId>(number.size())] = static_cast<int>(number.size());
    if (line_nodes) line_nodes->push_back(id);
  }
  return out + ")\n";
}
}  // namespace

std::string program_text(const Candidate& candidate) { return write_program(candidate, nullptr); }

// ---------------------------------------------------------------- reading programs

namespace {
constexpr char kWhere[] = "program text";

[[noreturn]] void bad(const SExpr& e, const std::string& what) {
  throw CompileError(std::string(kWhere) + " line " + std::to_string(e.line) + ": " + what);
}

int int_of(const SExpr& e) { return static_cast<int>(read_int(e, kWhere)); }

// parse_program; with `line_nodes`, also the node each line made.
Candidate read_program(const std::string& text, const Graph& original,
                       std::vector<NodeId>* line_nodes) {
  std::vector<SExpr> top = read_sexprs(text, "program text");
  if (top.size() != 1 || !top[0].is_list || top[0].items.empty() ||
      top[0].items[0].atom != "program") {
    throw CompileError("program text: expected one (program ...)");
  }
  Candidate p;
  std::vector<NodeId> ids;
  auto edge = [&](const SExpr& e) {
    if (!e.is_list || e.items.size() != 7 || e.items[0].is_list || e.items[0].atom != "e") {
      bad(e, "expected (e ...)");
    }
    int k = int_of(e.items[1]);
    if (k < 0 || k >= static_cast<int>(ids.size())) bad(e, "edge to an unknown node");
    ShapeTracker v;
    v.dims = read_exprs(e.items[2], kWhere);
    v.strides = read_exprs(e.items[3], kWhere);
    v.offset = read_expr(e.items[4], kWhere);
    v.mask_lo = read_exprs(e.items[5], kWhere);
    v.mask_hi = read_exprs(e.items[6], kWhere);
    return Edge{ids[k], v};
  };
  const auto& lines = top[0].items;
  for (size_t li = 1; li < lines.size(); ++li) {
    SExpr l = lines[li];
    if (!l.is_list || l.items.empty() || l.items[0].is_list) bad(l, "expected (Op ...)");
    ScheduleParams schedule = parse_schedule(l.items, kWhere);
    OpKind op;
    try {
      op = op_from_name(l.items[0].atom);
    } catch (const LuminalError&) {
      bad(l, "unknown op " + l.items[0].to_string());
    }
    size_t pos = op == OpKind::Input ? 2 : 1;  // an Input's position comes first
    if (pos > l.items.size()) bad(l, "wrong number of items in " + l.to_string());
    Node attrs = parse_attrs(op, l.items, &pos, kWhere);
    attrs.schedule = schedule;
    if (l.items.size() - pos != static_cast<size_t>(op_arity(op))) {
      bad(l, "wrong number of items in " + l.to_string());
    }
    NodeId id = -1;
    if (op == OpKind::Input) {
      size_t k = static_cast<size_t>(int_of(l.items[1]));
      if (k != p.inputs.size() || k >= original.inputs().size()) bad(l, "inputs out of order");
      const Node& n = original.node(original.inputs()[k]);
      if (attrs.shape != n.shape || attrs.dtype != n.dtype || attrs.parameter != n.parameter) {
        bad(l, "input " + std::to_string(k) + " does not match the graph's");
      }
      id = p.graph.input(n.name, n.shape, n.dtype, n.parameter);
      p.inputs.push_back(id);
    } else {
      std::vector<Edge> inputs;
      for (; pos < l.items.size(); ++pos) inputs.push_back(edge(l.items[pos]));
      id = p.graph.add_like(attrs, inputs);
      if (op == OpKind::Output) p.outputs.push_back(id);
    }
    ids.push_back(id);
    if (line_nodes) line_nodes->push_back(id);
  }
  if (p.inputs.size() != original.inputs().size()) {
    throw CompileError("program text: has " + std::to_string(p.inputs.size()) +
                       " inputs, the graph " + std::to_string(original.inputs().size()));
  }
  if (p.outputs.size() != original.outputs().size()) {
    throw CompileError("program text: has " + std::to_string(p.outputs.size()) +
                       " outputs, the graph " + std::to_string(original.outputs().size()));
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const Node& a = p.graph.node(p.outputs[i]);
    const Node& b = original.node(original.outputs()[i]);
    if (a.shape != b.shape || a.dtype != b.dtype) {
      throw CompileError("program text: output " + std::to_string(i) +
                         " does not match the graph's in shape or dtype");
    }
  }
  return p;
}

}  // namespace

Candidate parse_program(const std::string& text, const Graph& original) {
  return read_program(text, original, nullptr);
}

Candidate canonical_candidate(const Candidate& candidate, const Graph& original) {
  std::vector<NodeId> written;
  std::vector<NodeId> read;
  Candidate out = read_program(write_program(candidate, &written), original, &read);
  out.cost = candidate.cost;
  out.node_class.assign(out.graph.size(), -1);
  for (size_t line = 0; line < written.size(); ++line) {
    NodeId from = written[line];
    if (from >= 0 && from < static_cast<NodeId>(candidate.node_class.size())) {
      out.node_class[read[line]] = candidate.node_class[from];
    }
  }
  return out;
}

}  // namespace luminal::egraph
