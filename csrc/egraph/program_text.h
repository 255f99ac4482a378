// Candidates as program text, for the search cache and for hashing. Nodes are numbered by a
// DFS from the outputs (inputs first, by input position), so the text of a graph does not
// depend on its node numbering or its input names: it is the graph's canonical form. Symbolic
// expressions are written in braces in Expr::to_string's Python syntax and parsed back by
// parse_expr (core/symbolic.h).
#pragma once

#include <string>

#include "egraph/convert.h"

namespace luminal::egraph {

// The text of a candidate's graph; program_text(identity_program(g)) is g's canonical form.
std::string program_text(const Candidate& candidate);

// Rebuilds a candidate from program_text output, checking it against `original`: the same
// inputs (shape, dtype) and outputs (shape, dtype), in order. Throws CompileError when the
// text is malformed or does not fit; the builders' ShapeError/DTypeError pass through.
Candidate parse_program(const std::string& text, const Graph& original);

// `candidate` rebuilt from its own text, its cost and node_class carried over: numbered as
// parse_program numbers it, so the program a search compiles and times is, node for node, the
// one its cache entry rebuilds (the node order decides the kernels' order and the memory plan).
Candidate canonical_candidate(const Candidate& candidate, const Graph& original);

}  // namespace luminal::egraph
