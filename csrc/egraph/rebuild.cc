// Rebuild: congruence closure by re-hashing every e-node under the current union-find until no
// two classes hold the same canonical e-node, then the analysis to its fixed point, then the
// class index. A full pass per round (not egg's parent lists): simpler, and linear per round.
#include <algorithm>

#include "egraph/egraph.h"

namespace luminal::egraph {

bool EGraph::rehash_once() {
  memo_.clear();
  bool merged = false;
  std::vector<ENode> kept;
  std::vector<Id> kept_class;
  kept.reserve(nodes_.size());
  kept_class.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    ENode n = canonical(nodes_[i]);
    Id c = find(node_class_[i]);
    auto [it, inserted] = memo_.emplace(n, c);
    if (!inserted) {
      // Congruent e-nodes have equal facts, so this merge is never refused.
      if (find(it->second) != c) merged |= merge(it->second, c);
      continue;
    }
    kept.push_back(std::move(n));
    kept_class.push_back(c);
  }
  nodes_ = std::move(kept);
  node_class_ = std::move(kept_class);
  return merged;
}

void EGraph::analyse() {
  // Uniform values and non-negativity only grow, so this terminates; the cap is a guard.
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      ClassData facts = node_facts(*this, nodes_[i]);
      join_facts(data_[find(node_class_[i])], facts, &changed);
    }
    if (!changed) return;
  }
}

void EGraph::index_classes() {
  // Emptied, not freed: the lists keep their room for the next rebuild.
  for (auto& list : class_nodes_) list.clear();
  for (auto& list : class_readers_) list.clear();
  class_nodes_.resize(data_.size());
  class_readers_.resize(data_.size());
  class_ids_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Id c = find(node_class_[i]);
    auto& list = class_nodes_[c];
    if (list.empty()) class_ids_.push_back(c);
    list.push_back(nodes_[i]);
  }
  std::sort(class_ids_.begin(), class_ids_.end());
  for (Id c : class_ids_) {
    for (const ENode& n : class_nodes_[c]) {
      for (const EEdge& e : n.children) {
        std::vector<Id>& readers = class_readers_[find(e.cls)];
        if (readers.empty() || readers.back() != c) readers.push_back(c);
      }
    }
  }
}

void EGraph::rebuild() {
  if (clean_) return;
  answers_.clear();
  while (rehash_once()) {
  }
  analyse();
  index_classes();
  clean_ = true;
}

}  // namespace luminal::egraph
