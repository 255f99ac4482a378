// The runner loop: per iteration, search every unbanned rule (read-only), then apply all
// matches, then rebuild. Limits are checked between matches so the wall-time limit holds.
// Searches are incremental: a rule searches only the classes that may match differently than
// when it last searched (ChangedClasses), so a stable part of the e-graph costs nothing.
#include "egraph/runner.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

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

// `matches` without repeats, each with how many times it came: e-nodes that differ only in
// what a pattern does not read (their schedules, under a pattern without labels) bind alike,
// and each binding is checked and applied once. The counts keep the backoff's measure.
std::vector<std::pair<Subst, size_t>> distinct(std::vector<Subst> matches) {
  auto key = [](const Subst& m) {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001B3ull; };
    for (const EEdge& e : m.vars) mix((static_cast<uint64_t>(e.cls) << 32) ^ e.view);
    for (AttrId a : m.labels) mix(static_cast<uint64_t>(a));
    for (OpKind op : m.label_ops) mix(static_cast<uint64_t>(op));
    return h;
  };
  auto same = [](const Subst& a, const Subst& b) {
    return a.vars == b.vars && a.labels == b.labels && a.label_ops == b.label_ops;
  };
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::unordered_map<uint64_t, size_t> last;  // key -> the last index into out with it
  std::vector<size_t> earlier;                // per index into out: the one before of its key
  std::vector<std::pair<Subst, size_t>> out;
  last.reserve(matches.size());
  for (Subst& m : matches) {
    auto [at, fresh] = last.try_emplace(key(m), out.size());
    size_t i = fresh ? kNone : at->second;
    while (i != kNone && !same(out[i].first, m)) i = earlier[i];
    if (i != kNone) {
      ++out[i].second;
      continue;
    }
    earlier.push_back(fresh ? kNone : at->second);
    at->second = out.size();
    out.push_back({std::move(m), 1});
  }
  return out;
}

// Whether class `c` holds an e-node of the op `p` is rooted at (any class, where `p` is not
// an op): a cheap test before match_root, which allocates its bindings.
bool may_root(const EGraph& g, const Pattern& p, Id c) {
  if (p.kind != Pattern::Kind::Node) return true;
  for (const ENode& n : g.nodes(c)) {
    if (p.op_class ? op_category(n.op) == *p.op_class : n.op == p.op) return true;
  }
  return false;
}

// How far above a class a rule rooted there can look: its left side's depth, and its
// conditions' own walks down the e-graph (rewrite.cc: row_scaled 3 levels, then
// holds_reduction 6, through views and casts), with room to spare.
constexpr int kConditionReach = 12;

int pattern_depth(const Pattern& p) {
  int d = 0;
  for (const Pattern& c : p.children) d = std::max(d, pattern_depth(c));
  return d + 1;
}

// The iteration at which each class last changed, as matching sees it: its e-nodes, its
// analysis facts, or those of a class within `reach` levels below it. A class that has not
// changed since a rule searched it holds the same matches (already applied) and the same
// conditions, so the rule skips it.
class ChangedClasses {
 public:
  explicit ChangedClasses(int reach) : reach_(reach) {}

  // After a rebuild: marks with `iteration` every class whose e-nodes or facts differ from the
  // last call's, and the classes up to reach_ levels above them.
  void update(const EGraph& g, int iteration) {
    std::unordered_map<Id, Seen> now;
    std::vector<Id> frontier;
    for (Id c : g.classes()) {
      const ClassData& d = g.data(c);
      Seen seen{g.nodes(c).size(), d.uniform, d.nonneg, d.has_constant};
      auto it = seen_.find(c);
      if (it == seen_.end() || !(it->second == seen)) frontier.push_back(c);
      now.emplace(c, seen);
    }
    seen_ = std::move(now);
    for (int level = 0; level <= reach_ && !frontier.empty(); ++level) {
      std::vector<Id> next;
      for (Id c : frontier) {
        if (changed_at(c) == iteration) continue;  // marked already, its parents with it
        changed_[c] = iteration;
        const std::vector<Id>& parents = g.readers(c);
        next.insert(next.end(), parents.begin(), parents.end());
      }
      frontier = std::move(next);
    }
  }

  int changed_at(Id c) const {
    auto it = changed_.find(c);
    return it == changed_.end() ? -1 : it->second;
  }

 private:
  struct Seen {
    size_t nodes;
    std::optional<double> uniform;
    bool nonneg;
    bool has_constant;
    bool operator==(const Seen& o) const {
      return nodes == o.nodes && uniform == o.uniform && nonneg == o.nonneg &&
             has_constant == o.has_constant;
    }
  };
  int reach_;
  std::unordered_map<Id, Seen> seen_;
  std::unordered_map<Id, int> changed_;
};
}  // namespace

RunnerReport run_rules(EGraph& g, const std::vector<Rewrite>& rules, const RunnerLimits& limits) {
  auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  RunnerReport report;
  for (const Rewrite& r : rules) report.rules.push_back({r.name});
  std::vector<Scheduled> sched(rules.size());
  int reach = kConditionReach;
  for (const Rewrite& r : rules) reach = std::max(reach, pattern_depth(r.lhs) + kConditionReach);
  ChangedClasses changed(reach);
  std::vector<int> searched_at(rules.size(), -1);  // the iteration each rule last searched
  // Per rule, its matches at each class when last searched there (repeats counted, as a
  // search of every class would count them): the backoff weighs a rule by its matches in the
  // whole e-graph, not only in the classes searched again.
  std::vector<std::unordered_map<Id, size_t>> counts(rules.size());
  g.rebuild();
  changed.update(g, 0);
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
      size_t total = 0;  // the rule's matches in the whole e-graph
      for (size_t ci = 0; ci < classes.size(); ++ci) {
        const Id c = classes[ci];
        if (changed.changed_at(c) > searched_at[ri]) {
          size_t here = 0;
          if (may_root(g, rules[ri].lhs, c)) {
            for (auto& [s, times] : distinct(match_root(g, rules[ri].lhs, c, rules[ri].scope))) {
              if (!rules[ri].holds(g, s)) continue;
              found.push_back({ri, c, std::move(s)});
              here += times;
            }
          }
          counts[ri][c] = here;
        }
        auto it = counts[ri].find(c);
        if (it != counts[ri].end()) total += it->second;
        if ((ci & 63) == 63 && out_of_time()) break;
      }
      if (total > threshold) {
        sched[ri].banned_until = iter + (limits.ban_length << sched[ri].bans);
        ++sched[ri].bans;
        ++report.rules[ri].bans;
        any_banned = true;
        continue;
      }
      if (!stopped) searched_at[ri] = iter;
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
    changed.update(g, iter + 1);
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
