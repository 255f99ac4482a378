// The runner: applies rules to an e-graph until it saturates or a limit is hit (iterations,
// e-nodes, wall time), and says which. A backoff scheduler bans a rule for a while when it
// matches more than its (growing) match limit in the whole e-graph, so one explosive rule
// cannot starve the rest. Matching is incremental (runner.cc) and gives the e-graph a search
// of every class per iteration gives.
#pragma once

#include <string>
#include <vector>

#include "egraph/rewrite.h"

namespace luminal::egraph {

struct RunnerLimits {
  int iterations = 16;
  size_t nodes = 20000;       // stop once the e-graph holds more e-nodes than this
  double seconds = 5.0;       // wall time, checked between matches
  size_t match_limit = 1000;  // backoff: matches per iteration before a rule is banned
  int ban_length = 2;         // backoff: iterations of the first ban (doubles each time)
};

enum class StopReason { Saturated, IterationLimit, NodeLimit, TimeLimit };
const char* stop_reason_name(StopReason reason);  // "saturated", "iteration limit", ...

struct RuleStats {
  std::string name;
  size_t matches = 0;  // distinct bindings found where the rule searched (classes changed
                       // since its last search), not skipped by a ban
  size_t applied = 0;  // matches whose merge changed the e-graph
  int bans = 0;
};

struct RunnerReport {
  StopReason stop = StopReason::Saturated;
  int iterations = 0;
  size_t nodes = 0;
  size_t classes = 0;
  double seconds = 0;
  size_t rejected_merges = 0;  // a rule tried to equate tensors of different shape or dtype
  std::vector<RuleStats> rules;

  std::string to_string() const;
};

RunnerReport run_rules(EGraph& g, const std::vector<Rewrite>& rules, const RunnerLimits& limits);

}  // namespace luminal::egraph
