// Between the HLIR and the e-graph: seeding an e-graph with a Graph (each node an e-node,
// each Output a root edge), and turning an extracted program back into a Candidate: a new
// luminal::Graph with the same Input nodes (created first, in the original's input order) and
// the same Output order, so that runtimes compile it unchanged.
#pragma once

#include <vector>

#include "egraph/extract.h"

namespace luminal::egraph {

// One program the search may run, as an HLIR graph, and how it lines up with the graph the
// user built. Not luminal::Program (kernel/kernel.h), the LLIR that a runtime lowers it to.
struct Candidate {
  Graph graph;
  std::vector<NodeId> inputs;   // graph's Input ids, by the original's input position
  std::vector<NodeId> outputs;  // graph's Output ids, in the original's output order
  double cost = 0;              // the cost model's estimate (0 when not extracted)
  // Per node of graph: the e-class it was extracted from, or -1 (inputs, outputs, nodes not
  // from an extraction). How kernel timings find their way back to the search space.
  std::vector<int64_t> node_class;
};

// Adds `graph` to `g`; returns one root edge per output of graph, in order. `classes`, if
// given, receives each node's class (Outputs: 0xFFFFFFFF).
std::vector<EEdge> add_graph(EGraph& g, const Graph& graph, std::vector<Id>* classes = nullptr);

// The extracted program `ex` for `roots` as a Candidate; `original` gives the inputs. Its
// nodes come in the order of its program text (canonical_candidate, egraph/program_text.h).
Candidate to_candidate(const EGraph& g, const Extracted& ex, const std::vector<EEdge>& roots,
                       const Graph& original);

// The original graph itself as a Candidate (no rewrites).
Candidate identity_program(const Graph& original);

}  // namespace luminal::egraph
