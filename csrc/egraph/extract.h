// Extraction: picks one e-node per reachable e-class. The best program comes from a
// fixed-point of tree costs (cycles never win: every non-source node costs > 0); the k best
// distinct programs come best-first from single-class deviations of programs already found,
// ranked by DAG cost (shared subterms counted once), cyclic choices rejected. Programs that
// differ only in the operand order of a commutative op are one program, and a deviation that
// only flips the inline flag of a node read once (which lowers to the same kernels) is none.
#pragma once

#include <vector>

#include "egraph/cost.h"

namespace luminal::egraph {

// One program: its e-nodes, producers before consumers, each with its class.
struct Extracted {
  std::vector<std::pair<Id, ENode>> order;
  double cost = 0;
};

// Up to k distinct programs for `roots`, cheapest first. `g` must be clean (rebuilt).
std::vector<Extracted> extract_best(const EGraph& g, const CostModel& model,
                                    const std::vector<EEdge>& roots, size_t k);

// The cost of a program under `model`: every e-node once (shared subterms counted once).
double program_cost(const EGraph& g, const CostModel& model, const Extracted& program);

}  // namespace luminal::egraph
