// One spelling of a node's attributes for every text form of a node: the graph's print and
// hash-consing key (Graph::node_to_string), the e-graph's print and attribute key
// (egraph/egraph.cc), and program text, the search cache's form (egraph/program_text.cc), which
// reads them back. Which attributes an op carries is said here once (attributes_of). Not here:
// how a form names a node's inputs (its edges) or an Input (by name, position or node id).
#pragma once

#include <string>
#include <vector>

#include "core/sexpr.h"
#include "ir/graph.h"

namespace luminal {

// Braced ("{s}", lists "({2} {s})"): program text, read back by parse_attrs. Plain ("s", lists
// "(2, s)"): the prints.
enum class ExprSpelling { Braced, Plain };

// `n` with only the fields its op's attributes hold, inputs dropped: Input its name, shape,
// dtype and parameter flag; Constant its dtype and value (or expression); Iota its expression
// and shape; a reduction its axis; Cast its dtype. Every op keeps its schedule. An op whose
// dtype follows its operands gets F32, so equal attributes compare equal.
Node attributes_of(const Node& n);
// Whether op's nodes carry attributes beyond a schedule (the ops attributes_of names).
bool has_attributes(OpKind op);

// The attributes of `n` after its op's name, each after a space ("" for an op without any):
// Input " shape dtype[ parameter]", Constant " dtype value", Iota " expr length", reductions
// " axis", Cast " dtype". The schedule is not included (schedule_text).
std::string attrs_text(const Node& n, ExprSpelling spelling);

// " (schedule (tile_m 4) (tile_n 16))", or "" for an empty schedule.
std::string schedule_text(const ScheduleParams& schedule);

// A double as every text form writes it: %.17g, so it reads back exactly.
std::string format_double(double v);
// An expression, and a list of them, in `spelling`.
std::string expr_text(const Expr& e, ExprSpelling spelling);
std::string exprs_text(const std::vector<Expr>& exprs, ExprSpelling spelling);

// Readers of the Braced spelling's items: "{expr}", a list of them, an integer. Each throws
// CompileError naming `where` and the item's line.
Expr read_expr(const SExpr& e, const std::string& where);
std::vector<Expr> read_exprs(const SExpr& e, const std::string& where);
int64_t read_int(const SExpr& e, const std::string& where);

// Reads attrs_text's Braced spelling of op `op` from items[*pos ...] of a list, advancing *pos
// past them: a Node with op and its attributes set. Throws CompileError naming `where` and
// the line for anything malformed.
Node parse_attrs(OpKind op, const std::vector<SExpr>& items, size_t* pos,
                 const std::string& where);

// Reads a trailing "(schedule (name integer) ...)" item of `items`, removing it; empty if none.
ScheduleParams parse_schedule(std::vector<SExpr>& items, const std::string& where);

}  // namespace luminal
