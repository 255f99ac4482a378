// SearchSpace: seed, run, extract.
#include "egraph/search_space.h"

namespace luminal::egraph {

SearchSpace::SearchSpace(const Graph& graph, const std::string& runtime_rules,
                         const RunnerLimits& limits)
    : graph_(graph), rules_(load_rules(runtime_rules, "runtime rules")) {
  roots_ = add_graph(egraph_, graph_);
  report_ = run_rules(egraph_, rules_, limits);
}

std::vector<Program> SearchSpace::extract(size_t k, const DynMap& dims) const {
  CostModel model;
  model.dims = dims;
  std::vector<Program> out;
  for (const Extracted& ex : extract_best(egraph_, model, roots_, k)) {
    out.push_back(to_program(egraph_, ex, roots_, graph_));
  }
  return out;
}

std::string all_rules_text(const std::string& runtime_rules) {
  std::string out;
  for (const auto& [name, text] : builtin_rule_files()) out += ";; " + name + "\n" + text;
  return out + ";; runtime\n" + runtime_rules;
}

}  // namespace luminal::egraph
