// ir/node_text.h: one switch over the ops that carry attributes, written and read.
#include "ir/node_text.h"

#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace luminal {

std::string expr_text(const Expr& e, ExprSpelling s) {
  return s == ExprSpelling::Braced ? "{" + e.to_string() + "}" : e.to_string();
}

std::string exprs_text(const std::vector<Expr>& exprs, ExprSpelling s) {
  if (s == ExprSpelling::Plain) return dims_to_string(exprs);
  std::string out = "(";
  for (size_t i = 0; i < exprs.size(); ++i) out += (i ? " " : "") + expr_text(exprs[i], s);
  return out + ")";
}

namespace {
[[noreturn]] void bad(const SExpr& e, const std::string& where, const std::string& what) {
  throw CompileError(where + " line " + std::to_string(e.line) + ": " + what);
}

const std::string& atom_of(const SExpr& e, const std::string& where) {
  if (e.is_list) bad(e, where, "expected an atom, got " + e.to_string());
  return e.atom;
}

DType dtype_of(const SExpr& e, const std::string& where) {
  const std::string& a = atom_of(e, where);
  try {
    return dtype_from_name(a);
  } catch (const LuminalError&) {
    bad(e, where, "unknown dtype " + a);
  }
}
}  // namespace

Expr read_expr(const SExpr& e, const std::string& where) {
  const std::string& a = atom_of(e, where);
  if (a.size() < 2 || a.front() != '{' || a.back() != '}') {
    bad(e, where, "expected {expr}, got " + a);
  }
  return parse_expr(a.substr(1, a.size() - 2));
}

std::vector<Expr> read_exprs(const SExpr& e, const std::string& where) {
  if (!e.is_list) bad(e, where, "expected a list of {expr}");
  std::vector<Expr> out;
  for (const SExpr& x : e.items) out.push_back(read_expr(x, where));
  return out;
}

int64_t read_int(const SExpr& e, const std::string& where) {
  const std::string& a = atom_of(e, where);
  char* end = nullptr;
  long long v = std::strtoll(a.c_str(), &end, 10);
  if (a.empty() || end != a.c_str() + a.size()) bad(e, where, "expected an integer, got " + a);
  return v;
}

Node attributes_of(const Node& n) {
  Node out{n.op, {}};
  out.schedule = n.schedule;
  switch (n.op) {
    case OpKind::Input:
      out.name = n.name;
      out.shape = n.shape;
      out.dtype = n.dtype;
      out.parameter = n.parameter;
      break;
    case OpKind::Constant:
      out.dtype = n.dtype;
      out.value = n.expr ? 0 : n.value;
      out.expr = n.expr;
      break;
    case OpKind::Iota:
      out.dtype = DType::Int;
      out.expr = n.expr;
      out.shape = n.shape;
      break;
    case OpKind::SumReduce:
    case OpKind::MaxReduce:
      out.axis = n.axis;
      break;
    case OpKind::Cast:
      out.dtype = n.dtype;
      break;
    default:
      break;  // elementwise ops, Gather, Output: no attributes but the schedule
  }
  return out;
}

bool has_attributes(OpKind op) {
  return op == OpKind::Input || op == OpKind::Constant || op == OpKind::Iota || is_reduce(op) ||
         op == OpKind::Cast;
}

std::string attrs_text(const Node& n, ExprSpelling s) {
  switch (n.op) {
    case OpKind::Input:
      return " " + exprs_text(n.shape, s) + " " + dtype_name(n.dtype) +
             (n.parameter ? " parameter" : "");
    case OpKind::Constant:
      return std::string(" ") + dtype_name(n.dtype) + " " +
             (n.expr ? expr_text(*n.expr, s) : format_double(n.value));
    case OpKind::Iota:
      return " " + expr_text(*n.expr, s) + " " + expr_text(n.shape.at(0), s);
    case OpKind::SumReduce:
    case OpKind::MaxReduce:
      return " " + std::to_string(n.axis);
    case OpKind::Cast:
      return std::string(" ") + dtype_name(n.dtype);
    default:
      return "";
  }
}

std::string schedule_text(const ScheduleParams& schedule) {
  return schedule.empty() ? "" : " (schedule " + schedule_to_string(schedule) + ")";
}

std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Node parse_attrs(OpKind op, const std::vector<SExpr>& items, size_t* pos,
                 const std::string& where) {
  Node n{op, {}};
  auto next = [&]() -> const SExpr& {
    if (*pos >= items.size()) {
      bad(items.empty() ? SExpr{} : items.back(), where,
          std::string("too few attributes for ") + op_name(op));
    }
    return items[(*pos)++];
  };
  switch (op) {
    case OpKind::Input: {
      n.shape = read_exprs(next(), where);
      n.dtype = dtype_of(next(), where);
      if (*pos < items.size() && !items[*pos].is_list && items[*pos].atom == "parameter") {
        n.parameter = true;
        ++*pos;
      }
      break;
    }
    case OpKind::Constant: {
      n.dtype = dtype_of(next(), where);
      const SExpr& v = next();
      const std::string& a = atom_of(v, where);
      if (!a.empty() && a[0] == '{') {
        n.expr = read_expr(v, where);
      } else {
        char* end = nullptr;
        n.value = std::strtod(a.c_str(), &end);
        if (a.empty() || end != a.c_str() + a.size()) bad(v, where, "bad number " + a);
      }
      break;
    }
    case OpKind::Iota:
      n.dtype = DType::Int;
      n.expr = read_expr(next(), where);
      n.shape = {read_expr(next(), where)};
      break;
    case OpKind::SumReduce:
    case OpKind::MaxReduce:
      n.axis = static_cast<int>(read_int(next(), where));
      break;
    case OpKind::Cast:
      n.dtype = dtype_of(next(), where);
      break;
    default:
      break;
  }
  return n;
}

ScheduleParams parse_schedule(std::vector<SExpr>& items, const std::string& where) {
  ScheduleParams schedule;
  if (items.empty()) return schedule;
  const SExpr& last = items.back();
  if (!last.is_list || last.items.empty() || last.items[0].is_list ||
      last.items[0].atom != "schedule") {
    return schedule;
  }
  for (size_t i = 1; i < last.items.size(); ++i) {
    const SExpr& item = last.items[i];
    if (!item.is_list || item.items.size() != 2) bad(item, where, "expected (name integer)");
    schedule.push_back({atom_of(item.items[0], where), read_int(item.items[1], where)});
  }
  items.pop_back();
  return schedule;
}

}  // namespace luminal
