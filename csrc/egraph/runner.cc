// The runner loop: per iteration, search every unbanned rule (read-only), then apply all
// matches, then rebuild. Limits are checked between matches so the wall-time limit holds.
#include "egraph/runner.h"

#include <chrono>

namespace luminal::egraph {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Saturated:
      return "saturated";
    case StopReason::IterationLimit:
      return "iteration limit";
    case StopReason::NodeLimit:
      return "node limit";
    case StopReason::TimeLimit:
      return "time limit";
  }
  return "?";
}

std::string RunnerReport::to_string() const {
  std::string out = std::string("stopped: ") + stop_reason_name(stop) + " after " +
                    std::to_string(iterations) + " iterations, " + std::to_string(nodes) +
                    " e-nodes, " + std::to_string(classes) + " e-classes, " +
                    std::to_string(seconds) + " s";
  if (rejected_merges) out += ", " + std::to_string(rejected_merges) + " rejected merges";
  for (const RuleStats& r : rules) {
    out += "\n  " + r.name + ": " + std::to_string(r.matches) + " matches, " +
           std::to_string(r.applied) + " applied";
    if (r.bans) out += ", banned " + std::to_string(r.bans) + "x";
  }
  return out;
}

namespace {
using Clock = std::chrono::steady_clock;

struct Scheduled {
  int banned_until = 0;  // iteration index before which the rule is skipped
  int bans = 0;
};

struct Match {
  size_t rule;
  Id root;
  Subst subst;
};
}  // namespace

RunnerReport run_rules(EGraph& g, const std::vector<Rewrite>& rules, const RunnerLimits& limits) {
  auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  RunnerReport report;
  for (const Rewrite& r : rules) report.rules.push_back({r.name});
  std::vector<Scheduled> sched(rules.size());
  g.rebuild();
  bool stopped = false;
  auto out_of_time = [&] {
    if (elapsed() < limits.seconds) return false;
    report.stop = StopReason::TimeLimit;
    return stopped = true;
  };
  for (int iter = 0; !stopped; ++iter) {
    if (iter >= limits.iterations) {
      report.stop = StopReason::IterationLimit;
      break;
    }
    if (g.num_nodes() > limits.nodes) {
      report.stop = StopReason::NodeLimit;
      break;
    }
    report.iterations = iter + 1;
    std::vector<Match> matches;
    bool any_banned = false;
    std::vector<Id> classes = g.classes();
    for (size_t ri = 0; ri < rules.size() && !stopped; ++ri) {
      if (sched[ri].banned_until > iter) {
        any_banned = true;
        continue;
      }
      size_t threshold = limits.match_limit << sched[ri].bans;
      std::vector<Match> found;
      for (size_t ci = 0; ci < classes.size(); ++ci) {
        for (Subst& s : match_root(g, rules[ri].lhs, classes[ci], rules[ri].scope)) {
          if (rules[ri].holds(g, s)) found.push_back({ri, classes[ci], std::move(s)});
        }
        if ((ci & 63) == 63 && out_of_time()) break;
      }
      if (found.size() > threshold) {
        sched[ri].banned_until = iter + (limits.ban_length << sched[ri].bans);
        ++sched[ri].bans;
        ++report.rules[ri].bans;
        any_banned = true;
        continue;
      }
      report.rules[ri].matches += found.size();
      for (Match& m : found) matches.push_back(std::move(m));
    }
    size_t nodes_before = g.num_nodes();
    size_t merges_before = g.merges();
    for (size_t mi = 0; mi < matches.size() && !stopped; ++mi) {
      const Match& m = matches[mi];
      Id result = instantiate(g, rules[m.rule].rhs, m.subst, m.root);
      if (g.merge(m.root, result)) ++report.rules[m.rule].applied;
      if (g.num_nodes() > limits.nodes) {
        report.stop = StopReason::NodeLimit;
        stopped = true;
      }
      if ((mi & 63) == 63) out_of_time();
    }
    g.rebuild();
    if (stopped || out_of_time()) break;
    if (g.num_nodes() == nodes_before && g.merges() == merges_before && !any_banned) {
      report.stop = StopReason::Saturated;
      break;
    }
  }
  g.rebuild();
  report.nodes = g.num_nodes();
  report.classes = g.num_classes();
  report.seconds = elapsed();
  report.rejected_merges = g.rejected_merges();
  return report;
}

}  // namespace luminal::egraph
