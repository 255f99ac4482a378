// The cost model that ranks programs before any timing: a fixed launch cost per materialized
// e-node plus work proportional to the elements it reads and writes, with strided, padded and
// broadcast reads priced differently. Sizes are evaluated with representative symbol values.
#pragma once

#include "egraph/egraph.h"

namespace luminal::egraph {

struct CostModel {
  DynMap dims;           // a value for every symbol (missing ones count as kDefaultDim)
  double launch = 64.0;  // per materialized node: a kernel launch / a pass over memory

  static constexpr int64_t kDefaultDim = 16;
  double node_cost(const EGraph& g, const ENode& node) const;
  double elements(const std::vector<Expr>& dims) const;
};

// Elements a graph touches: per node, the largest of its output and its input views, summed.
// A size estimate of one execution (the search uses it to pick its reference runtime).
double graph_work(const Graph& graph, const DynMap& dims);

}  // namespace luminal::egraph
