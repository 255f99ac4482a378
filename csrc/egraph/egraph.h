// The e-graph: hash-consed e-nodes grouped into e-classes by a union-find, with interned views
// and attributes and an analysis per class. Adding and merging leave the graph "dirty";
// rebuild() (rebuild.cc) restores congruence and the class index that matching reads.
// Not thread-safe. Ids are never reused; a merged class's id stays valid through find().
#pragma once

#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "egraph/analysis.h"
#include "egraph/enode.h"
#include "egraph/union_find.h"

namespace luminal::egraph {

class EGraph {
 public:
  // The class of `node` (children canonicalized first); a new class if the node is new.
  Id add(ENode node);
  // Merges the classes of a and b. False when already one class, or when their shapes or
  // dtypes differ (counted in rejected_merges(): a rule tried to equate different tensors).
  bool merge(Id a, Id b);
  Id find(Id x) const { return uf_.find(x); }
  // Restores the invariants after adds and merges: congruent e-nodes share a class, the
  // analysis is at its fixed point, and the class index below is current.
  void rebuild();
  bool clean() const { return clean_; }

  ViewId intern_view(const ShapeTracker& view);
  const ShapeTracker& view(ViewId id) const { return views_[id]; }
  bool view_masked(ViewId id) const { return view_masked_[id]; }  // view(id).has_mask()
  // The identity view of class c: contiguous over its shape.
  ViewId identity_view(Id c);
  bool is_identity(const EEdge& e) const;
  AttrId intern_attr(const Attr& attr);
  const Attr& attr(AttrId id) const { return attrs_[id]; }

  const ClassData& data(Id c) const { return data_[find(c)]; }

  // The class index, valid when clean(): canonical class ids in increasing order, and the
  // e-nodes of each (canonical children, no duplicates).
  const std::vector<Id>& classes() const { return class_ids_; }
  const std::vector<ENode>& nodes(Id c) const { return class_nodes_.at(find(c)); }
  // The classes with an e-node reading class c (canonical, each once, in increasing order).
  const std::vector<Id>& readers(Id c) const { return class_readers_.at(find(c)); }

  // Answers of rule conditions that walk far (rewrite.cc's quant-dot), keyed by the condition
  // and its operands, for the graph as last rebuilt: rules that share a condition ask it
  // again in one search. Matching reads a clean graph only; rebuild() empties it.
  std::map<std::array<int64_t, 5>, bool>& condition_answers() const { return answers_; }

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_classes() const { return class_ids_.size(); }
  size_t rejected_merges() const { return rejected_merges_; }
  size_t merges() const { return merges_; }

  ENode canonical(ENode node) const;
  std::string node_to_string(const ENode& node) const;  // "(Add e3 (view ...) e4 (view ...))"
  std::string to_string() const;                        // one line per class

 private:
  bool rehash_once();
  void analyse();
  void index_classes();

  UnionFind uf_;
  std::vector<ENode> nodes_;      // every distinct e-node; canonical at the last rebuild
  std::vector<Id> node_class_;    // nodes_[i] belongs to find(node_class_[i])
  std::unordered_map<ENode, Id, ENodeHash> memo_;  // node -> class; keys canonical if clean_
  std::vector<ClassData> data_;   // by class id; meaningful at roots
  std::vector<ShapeTracker> views_;
  std::vector<bool> view_contiguous_;  // views_[i].is_contiguous(), computed once (symbolic)
  std::vector<bool> view_masked_;      // views_[i].has_mask(), likewise (rule conditions ask)
  std::unordered_map<std::string, ViewId> view_ids_;  // to_string() -> id
  // By class id: its identity view once asked for, else -1. A class's shape never changes
  // (merges join equal shapes only), so an entry stays right through merges.
  std::vector<ViewId> identity_views_;
  std::vector<Attr> attrs_;
  std::unordered_map<std::string, AttrId> attr_ids_;
  std::vector<Id> class_ids_;
  std::vector<std::vector<ENode>> class_nodes_;  // by canonical class id
  std::vector<std::vector<Id>> class_readers_;   // likewise (readers())
  mutable std::map<std::array<int64_t, 5>, bool> answers_;
  size_t rejected_merges_ = 0;
  size_t merges_ = 0;
  bool clean_ = true;
};

std::string attr_key(const Attr& attr);

}  // namespace luminal::egraph
