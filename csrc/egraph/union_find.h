// Union-find over e-class ids: make_set, find (with path halving), unite. Ids are dense
// integers handed out in order; a root is the canonical id of its set. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace luminal::egraph {

using Id = uint32_t;

class UnionFind {
 public:
  Id make_set() {
    parent_.push_back(static_cast<Id>(parent_.size()));
    return parent_.back();
  }
  size_t size() const { return parent_.size(); }
  Id find(Id x) const {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];  // path halving: the set is unchanged
      x = parent_[x];
    }
    return x;
  }
  // Joins the sets of a and b; the root of a's set stays the root. Returns it.
  Id unite(Id a, Id b) {
    Id ra = find(a);
    Id rb = find(b);
    if (ra != rb) parent_[rb] = ra;
    return ra;
  }

 private:
  mutable std::vector<Id> parent_;  // parent_[x] == x iff x is a root
};

}  // namespace luminal::egraph
