// SearchSpace: seed, run, extract.
#include "egraph/search_space.h"

#include <map>
#include <set>
#include <utility>

#include "core/errors.h"

namespace luminal::egraph {

SearchSpace::SearchSpace(const Graph& graph, const std::string& runtime_rules,
                         const RunnerLimits& limits, std::shared_ptr<const KernelCost> kernel_cost)
    : graph_(graph),
      kernel_cost_(std::move(kernel_cost)),
      rules_(load_rules(runtime_rules, "runtime rules")) {
  roots_ = add_graph(egraph_, graph_, &original_classes_);
  report_ = run_rules(egraph_, rules_, limits);
}

CostModel SearchSpace::cost_model(const DynMap& dims) const {
  CostModel model;
  model.dims = dims;
  model.kernel_cost = kernel_cost_;
  return model;
}

std::vector<Candidate> SearchSpace::extract(size_t k, const DynMap& dims) const {
  CostModel model = cost_model(dims);
  std::vector<Extracted> best = extract_best(egraph_, model, roots_, k);
  std::vector<Extracted> picked;
  auto take = [&](Extracted ex) {
    for (const Extracted& p : picked) {
      if (p.order == ex.order) return;
    }
    if (picked.size() < k) picked.push_back(std::move(ex));
  };
  if (!best.empty()) take(best[0]);
  for (const ScheduleParams& schedule : schedules()) {
    CostModel preferring = model;
    preferring.prefer = schedule;
    std::vector<Extracted> one = extract_best(egraph_, preferring, roots_, 1);
    if (one.empty()) continue;
    one[0].cost = program_cost(egraph_, model, one[0]);
    take(std::move(one[0]));
  }
  for (size_t i = 1; i < best.size(); ++i) take(best[i]);
  std::vector<Candidate> out;
  for (const Extracted& ex : picked) out.push_back(to_candidate(egraph_, ex, roots_, graph_));
  return out;
}

std::vector<NodeId> SearchSpace::original_nodes(const Candidate& candidate) const {
  std::map<Id, NodeId> by_class;
  for (NodeId id : graph_.topo_order()) {
    const Id c = original_classes_.at(id);
    if (c != 0xFFFFFFFFu && graph_.node(id).op != OpKind::Input) by_class.emplace(egraph_.find(c), id);
  }
  std::vector<NodeId> out(candidate.graph.size(), -1);
  for (size_t i = 0; i < candidate.inputs.size(); ++i) out.at(candidate.inputs[i]) = graph_.inputs().at(i);
  for (size_t i = 0; i < candidate.outputs.size(); ++i) {
    out.at(candidate.outputs[i]) = graph_.outputs().at(i);
  }
  for (size_t id = 0; id < candidate.node_class.size() && id < out.size(); ++id) {
    if (candidate.node_class[id] < 0) continue;
    auto it = by_class.find(egraph_.find(static_cast<Id>(candidate.node_class[id])));
    if (it != by_class.end()) out[id] = it->second;
  }
  return out;
}

std::vector<ScheduleParams> SearchSpace::schedules() const {
  std::map<std::string, ScheduleParams> found;  // sorted by text: a stable order
  for (Id c : egraph_.classes()) {
    for (const ENode& n : egraph_.nodes(c)) {
      if (n.attr < 0) continue;
      const ScheduleParams& s = egraph_.attr(n.attr).node.schedule;
      if (!s.empty()) found.emplace(schedule_to_string(s), s);
    }
  }
  std::vector<ScheduleParams> out;
  for (const auto& [text, s] : found) out.push_back(s);
  return out;
}

std::map<Id, std::vector<std::string>> SearchSpace::alternatives() const {
  std::map<Id, std::vector<std::string>> out;
  for (Id c : egraph_.classes()) {
    std::set<std::string> texts;
    for (const ENode& n : egraph_.nodes(c)) {
      texts.insert(n.attr < 0 ? "" : schedule_to_string(egraph_.attr(n.attr).node.schedule));
    }
    if (texts.size() > 1) out[c] = std::vector<std::string>(texts.begin(), texts.end());
  }
  return out;
}

Candidate SearchSpace::extract_choosing(const std::map<Id, std::string>& choice,
                                        const DynMap& dims) const {
  CostModel model = cost_model(dims);
  CostModel choosing = model;
  for (const auto& [cls, text] : choice) choosing.prefer_in_class[egraph_.find(cls)] = text;
  std::vector<Extracted> one = extract_best(egraph_, choosing, roots_, 1);
  if (one.empty()) throw InternalError("extract_choosing: no program");
  one[0].cost = program_cost(egraph_, model, one[0]);
  return to_candidate(egraph_, one[0], roots_, graph_);
}

std::string all_rules_text(const std::string& runtime_rules) {
  std::string out;
  for (const auto& [name, text] : builtin_rule_files()) out += ";; " + name + "\n" + text;
  return out + ";; runtime\n" + runtime_rules;
}

}  // namespace luminal::egraph
