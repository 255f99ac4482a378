// The cost model that ranks programs before any timing: a fixed launch cost per materialized
// e-node plus work proportional to the elements it reads and writes, with strided, padded and
// broadcast reads priced differently. Sizes are evaluated with representative symbol values.
// A matmul (egraph/matmul_shape.h) is priced by a register-blocking model of its tile schedule
// instead: an estimate that ranks tilings, which the search then times.
#pragma once

#include <map>
#include <string>

#include "egraph/egraph.h"

namespace luminal::egraph {

struct CostModel {
  DynMap dims;           // a value for every symbol (missing ones count as kDefaultDim)
  double launch = 64.0;  // per materialized node: a kernel launch / a pass over memory

  // Nodes carrying exactly this schedule cost a hundredth: extraction then uses it wherever
  // the e-graph offers it (how the search builds one program per runtime alternative).
  ScheduleParams prefer;
  // The same per class: in class c, the node whose schedule prints as prefer_in_class[c]
  // ("" = no schedule) costs a hundredth (how the search combines the fastest kernels).
  std::map<Id, std::string> prefer_in_class;

  static constexpr int64_t kDefaultDim = 16;
  // The cost of e-node `node` of class `cls` (canonical).
  double node_cost(const EGraph& g, const ENode& node, Id cls) const;
  double elements(const std::vector<Expr>& dims) const;
  double size(const Expr& e) const { return elements({e}); }

 private:
  double plain_cost(const EGraph& g, const ENode& node) const;
  double matmul_cost(const EGraph& g, const ENode& node) const;
};

// Elements a graph touches: per node, the largest of its output and its input views, summed.
// A size estimate of one execution (the search uses it to pick its reference runtime).
double graph_work(const Graph& graph, const DynMap& dims);

}  // namespace luminal::egraph
