// The search space of one graph for one runtime: an e-graph seeded with the graph, saturated
// with the built-in rules plus the runtime's, and the extraction of its best programs. This is
// what Graph.build_search_space makes and Graph.search reads (python/luminal/search.py).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "egraph/convert.h"
#include "egraph/runner.h"

namespace luminal::egraph {

class SearchSpace {
 public:
  // Seeds and saturates. `runtime_rules` is Runtime::rewrite_rules() text ("" for none);
  // `kernel_cost` is Runtime::kernel_cost() (null: the cost model's generic estimate).
  SearchSpace(const Graph& graph, const std::string& runtime_rules, const RunnerLimits& limits,
              std::shared_ptr<const KernelCost> kernel_cost = nullptr);

  // Up to k distinct candidates: the cost model's pick (symbols bound to `dims`); then, for
  // each schedule the runtime's rules attached anywhere, the candidate that uses it wherever it
  // can (the alternatives the model cannot be trusted to rank, left to timing); then the
  // model's next best candidates.
  std::vector<Candidate> extract(size_t k, const DynMap& dims) const;
  // The distinct schedules the runtime's rules attached anywhere, sorted by their text.
  std::vector<ScheduleParams> schedules() const;
  // Per class holding nodes of more than one schedule, their schedules' texts ("" = the
  // unscheduled node), sorted: the per-kernel choices the search's descent tries one by one.
  std::map<Id, std::vector<std::string>> alternatives() const;
  // The best candidate once each class in `choice` prefers the node whose schedule prints as
  // the given text ("" = the unscheduled node): the search's combination of the fastest
  // kernel alternatives it timed.
  Candidate extract_choosing(const std::map<Id, std::string>& choice, const DynMap& dims) const;

  // Per node of `candidate`'s graph, the node of the graph as written in the same e-class
  // (the first in topological order), or -1: inputs and outputs by position, other nodes by
  // their node_class (a candidate read from text has none: only its inputs and outputs).
  std::vector<NodeId> original_nodes(const Candidate& candidate) const;

  const RunnerReport& report() const { return report_; }
  const EGraph& egraph() const { return egraph_; }
  const std::vector<Rewrite>& rules() const { return rules_; }
  const Graph& graph() const { return graph_; }

 private:
  CostModel cost_model(const DynMap& dims) const;

  Graph graph_;
  std::shared_ptr<const KernelCost> kernel_cost_;
  std::vector<Rewrite> rules_;
  EGraph egraph_;
  std::vector<EEdge> roots_;
  std::vector<Id> original_classes_;  // per node of graph_, its class when added
  RunnerReport report_;
};

// The rule files' text plus `runtime_rules`: what a cache key must cover.
std::string all_rules_text(const std::string& runtime_rules);

}  // namespace luminal::egraph
