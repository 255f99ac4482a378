// Writing and reading program text, and the small recursive-descent parser for symbolic
// expressions that reading needs.
#include "egraph/program_text.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <unordered_map>

#include "core/errors.h"
#include "egraph/sexpr.h"

namespace luminal::egraph {

namespace {
std::string braces(const Expr& e) { return "{" + e.to_string() + "}"; }

std::string expr_list(const std::vector<Expr>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + braces(v[i]);
  return out + ")";
}

std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string view_text(const ShapeTracker& v) {
  return expr_list(v.dims) + " " + expr_list(v.strides) + " " + braces(v.offset) + " " +
         expr_list(v.mask_lo) + " " + expr_list(v.mask_hi);
}
}  // namespace

namespace {
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
    std::string parameter = n.parameter ? " parameter" : "";
    emit(graph.inputs()[i], "(Input " + std::to_string(i) + " " + expr_list(n.shape) + " " +
                                dtype_name(n.dtype) + parameter + ")");
  }
  std::function<void(NodeId)> visit = [&](NodeId id) {
    if (number.count(id)) return;
    const Node& n = graph.node(id);
    for (const Edge& e : n.inputs) visit(e.node);
    std::string line = std::string("(") + op_name(n.op);
    switch (n.op) {
      case OpKind::Constant:
        line += std::string(" ") + dtype_name(n.dtype) + " " +
                (n.expr ? braces(*n.expr) : format_double(n.value));
        break;
      case OpKind::Iota:
        line += " " + braces(*n.expr) + " " + braces(n.shape[0]);
        break;
      case OpKind::SumReduce:
      case OpKind::MaxReduce:
        line += " " + std::to_string(n.axis);
        break;
      case OpKind::Cast:
        line += std::string(" ") + dtype_name(n.dtype);
        break;
      default:
        break;
    }
    for (const Edge& e : n.inputs) {
      line += " (e " + std::to_string(number.at(e.node)) + " " + view_text(e.view) + ")";
    }
    if (!n.schedule.empty()) line += " (schedule " + schedule_to_string(n.schedule) + ")";
    emit(id, line + ")");
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

// ---------------------------------------------------------------- expressions

namespace {
struct ExprParser {
  const std::string& s;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw CompileError("expression '" + s + "': " + what + " at position " + std::to_string(pos));
  }
  void space() {
    while (pos < s.size() && s[pos] == ' ') ++pos;
  }
  bool eat(const std::string& tok) {
    space();
    if (s.compare(pos, tok.size(), tok) != 0) return false;
    bool word = std::isalpha(static_cast<unsigned char>(tok[0]));
    size_t end = pos + tok.size();
    if (word && end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) ||
                                   s[end] == '_')) {
      return false;
    }
    pos = end;
    return true;
  }
  Expr parse_or() {
    Expr e = parse_and();
    while (eat("or")) e = logical_or(e, parse_and());
    return e;
  }
  Expr parse_and() {
    Expr e = parse_compare();
    while (eat("and")) e = logical_and(e, parse_compare());
    return e;
  }
  Expr parse_compare() {
    Expr e = parse_sum();
    if (eat("==")) return eq(e, parse_sum());
    if (eat("!=")) return ne(e, parse_sum());
    if (eat("<=")) return le(e, parse_sum());
    if (eat(">=")) return ge(e, parse_sum());
    if (eat("<")) return lt(e, parse_sum());
    if (eat(">")) return gt(e, parse_sum());
    return e;
  }
  Expr parse_sum() {
    Expr e = parse_term();
    for (;;) {
      if (eat("+")) {
        e = e + parse_term();
      } else if (eat("-")) {
        e = e - parse_term();
      } else {
        return e;
      }
    }
  }
  Expr parse_term() {
    Expr e = parse_unary();
    for (;;) {
      if (eat("*")) {
        e = e * parse_unary();
      } else if (eat("//")) {
        e = e / parse_unary();
      } else if (eat("%")) {
        e = e % parse_unary();
      } else {
        return e;
      }
    }
  }
  Expr parse_unary() {
    if (eat("-")) return -parse_unary();
    return parse_atom();
  }
  Expr parse_atom() {
    space();
    if (pos >= s.size()) fail("unexpected end");
    if (eat("(")) {
      Expr e = parse_or();
      if (!eat(")")) fail("expected ')'");
      return e;
    }
    char c = s[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
      return Expr(static_cast<int64_t>(std::stoull(s.substr(start, pos - start))));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) {
        ++pos;
      }
      std::string name = s.substr(start, pos - start);
      if ((name == "min" || name == "max") && eat("(")) {
        Expr a = parse_or();
        if (!eat(",")) fail("expected ','");
        Expr b = parse_or();
        if (!eat(")")) fail("expected ')'");
        return name == "min" ? min(a, b) : max(a, b);
      }
      return Expr::symbol(name);
    }
    fail(std::string("unexpected '") + c + "'");
  }
};
}  // namespace

Expr parse_expr(const std::string& text) {
  ExprParser p{text};
  Expr e = p.parse_or();
  p.space();
  if (p.pos != text.size()) p.fail("trailing text");
  return e;
}

// ---------------------------------------------------------------- reading programs

namespace {
[[noreturn]] void bad(const SExpr& e, const std::string& what) {
  throw CompileError("program text line " + std::to_string(e.line) + ": " + what);
}

const std::string& atom(const SExpr& e) {
  if (e.is_list) bad(e, "expected an atom, got " + e.to_string());
  return e.atom;
}

Expr expr_of(const SExpr& e) {
  const std::string& a = atom(e);
  if (a.size() < 2 || a.front() != '{' || a.back() != '}') bad(e, "expected {expr}, got " + a);
  return parse_expr(a.substr(1, a.size() - 2));
}

std::vector<Expr> exprs_of(const SExpr& e) {
  if (!e.is_list) bad(e, "expected a list of {expr}");
  std::vector<Expr> out;
  for (const SExpr& x : e.items) out.push_back(expr_of(x));
  return out;
}

int int_of(const SExpr& e) {
  const std::string& a = atom(e);
  char* end = nullptr;
  long v = std::strtol(a.c_str(), &end, 10);
  if (a.empty() || end != a.c_str() + a.size()) bad(e, "expected an integer, got " + a);
  return static_cast<int>(v);
}
}  // namespace

namespace {
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
    if (!e.is_list || e.items.size() != 7 || atom(e.items[0]) != "e") bad(e, "expected (e ...)");
    int k = int_of(e.items[1]);
    if (k < 0 || k >= static_cast<int>(ids.size())) bad(e, "edge to an unknown node");
    ShapeTracker v;
    v.dims = exprs_of(e.items[2]);
    v.strides = exprs_of(e.items[3]);
    v.offset = expr_of(e.items[4]);
    v.mask_lo = exprs_of(e.items[5]);
    v.mask_hi = exprs_of(e.items[6]);
    return Edge{ids[k], v};
  };
  const auto& lines = top[0].items;
  for (size_t li = 1; li < lines.size(); ++li) {
    SExpr l = lines[li];
    if (!l.is_list || l.items.empty()) bad(l, "expected (Op ...)");
    ScheduleParams schedule;
    if (const SExpr& last = l.items.back(); last.is_list && !last.items.empty() &&
                                            !last.items[0].is_list &&
                                            last.items[0].atom == "schedule") {
      for (size_t i = 1; i < last.items.size(); ++i) {
        const SExpr& item = last.items[i];
        if (!item.is_list || item.items.size() != 2) bad(item, "expected (name integer)");
        schedule.push_back({atom(item.items[0]), int_of(item.items[1])});
      }
      l.items.pop_back();
    }
    OpKind op;
    try {
      op = op_from_name(atom(l.items[0]));
    } catch (const LuminalError&) {
      bad(l, "unknown op " + l.items[0].to_string());
    }
    auto want = [&](size_t n) {
      if (l.items.size() != n) bad(l, "wrong number of items in " + l.to_string());
    };
    NodeId id = -1;
    if (op == OpKind::Input) {
      bool parameter = l.items.size() == 5 && atom(l.items[4]) == "parameter";
      want(parameter ? 5 : 4);
      size_t k = static_cast<size_t>(int_of(l.items[1]));
      if (k != p.inputs.size() || k >= original.inputs().size()) bad(l, "inputs out of order");
      const Node& n = original.node(original.inputs()[k]);
      if (exprs_of(l.items[2]) != n.shape || dtype_from_name(atom(l.items[3])) != n.dtype ||
          parameter != n.parameter) {
        bad(l, "input " + std::to_string(k) + " does not match the graph's");
      }
      id = p.graph.input(n.name, n.shape, n.dtype, n.parameter);
      p.inputs.push_back(id);
    } else if (op == OpKind::Constant) {
      want(3);
      DType dt = dtype_from_name(atom(l.items[1]));
      const std::string& v = atom(l.items[2]);
      if (!v.empty() && v[0] == '{') {
        id = p.graph.constant_expr(expr_of(l.items[2]), dt);
      } else {
        char* end = nullptr;
        double x = std::strtod(v.c_str(), &end);
        if (v.empty() || end != v.c_str() + v.size()) bad(l, "bad number " + v);
        id = p.graph.constant(x, dt);
      }
    } else if (op == OpKind::Iota) {
      want(3);
      id = p.graph.iota(expr_of(l.items[1]), expr_of(l.items[2]));
    } else if (is_unary(op)) {
      want(2);
      id = p.graph.unary(op, edge(l.items[1]));
    } else if (is_binary(op)) {
      want(3);
      id = p.graph.binary(op, edge(l.items[1]), edge(l.items[2]));
    } else if (is_reduce(op)) {
      want(3);
      id = p.graph.reduce(op, edge(l.items[2]), int_of(l.items[1]));
    } else if (op == OpKind::Gather) {
      want(3);
      id = p.graph.gather(edge(l.items[1]), edge(l.items[2]));
    } else if (op == OpKind::Cast) {
      want(3);
      id = p.graph.cast(edge(l.items[2]), dtype_from_name(atom(l.items[1])));
    } else {
      want(2);
      id = p.graph.output(edge(l.items[1]));
      p.outputs.push_back(id);
    }
    if (!schedule.empty()) id = p.graph.scheduled(id, schedule);
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
