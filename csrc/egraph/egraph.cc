// EGraph: adding hash-consed e-nodes, merging classes with the shape/dtype guard, interning
// views and attributes, and printing. Congruence closure is in rebuild.cc.
#include "egraph/egraph.h"

#include "core/errors.h"
#include "ir/node_text.h"

namespace luminal::egraph {

std::string attr_key(const Attr& a) {
  const Node& n = a.node;
  std::string key = std::string(op_name(n.op)) + attrs_text(n, ExprSpelling::Braced);
  if (n.op == OpKind::Input) key += " #" + std::to_string(a.input_index) + " \"" + n.name + "\"";
  return key + schedule_text(n.schedule);
}

ENode EGraph::canonical(ENode node) const {
  for (EEdge& e : node.children) e.cls = find(e.cls);
  return node;
}

Id EGraph::add(ENode node) {
  node = canonical(std::move(node));
  auto it = memo_.find(node);
  if (it != memo_.end()) return find(it->second);
  ClassData facts = node_facts(*this, node);
  Id c = uf_.make_set();
  data_.push_back(std::move(facts));
  nodes_.push_back(node);
  node_class_.push_back(c);
  memo_.emplace(std::move(node), c);
  clean_ = false;
  return c;
}

bool EGraph::merge(Id a, Id b) {
  Id ra = find(a);
  Id rb = find(b);
  if (ra == rb) return false;
  ClassData joined = data_[ra];
  bool changed = false;
  if (!join_facts(joined, data_[rb], &changed)) {
    ++rejected_merges_;
    return false;
  }
  Id root = uf_.unite(ra, rb);
  data_[root] = std::move(joined);
  ++merges_;
  clean_ = false;
  return true;
}

ViewId EGraph::intern_view(const ShapeTracker& view) {
  std::string key = view.to_string();
  auto it = view_ids_.find(key);
  if (it != view_ids_.end()) return it->second;
  ViewId id = static_cast<ViewId>(views_.size());
  views_.push_back(view);
  view_contiguous_.push_back(view.is_contiguous());
  view_masked_.push_back(view.has_mask());
  view_ids_.emplace(std::move(key), id);
  return id;
}

ViewId EGraph::identity_view(Id c) {
  if (c >= identity_views_.size()) identity_views_.resize(c + 1, -1);
  if (identity_views_[c] < 0) {
    identity_views_[c] = intern_view(ShapeTracker::contiguous(data(c).shape));
  }
  return identity_views_[c];
}

bool EGraph::is_identity(const EEdge& e) const {
  return view_contiguous_[e.view] && views_[e.view].dims == data(e.cls).shape;
}

AttrId EGraph::intern_attr(const Attr& raw) {
  // Only the fields that mean something for the op, so equal attributes intern alike.
  Attr attr;
  attr.node = attributes_of(raw.node);
  if (raw.node.op == OpKind::Input) attr.input_index = raw.input_index;
  std::string key = attr_key(attr);
  auto it = attr_ids_.find(key);
  if (it != attr_ids_.end()) return it->second;
  AttrId id = static_cast<AttrId>(attrs_.size());
  attrs_.push_back(attr);
  attr_ids_.emplace(std::move(key), id);
  return id;
}

std::string EGraph::node_to_string(const ENode& node) const {
  std::string out = std::string("(") + op_name(node.op);
  if (node.attr >= 0) {
    const Attr& a = attrs_[node.attr];
    if (node.op == OpKind::Input) out += " #" + std::to_string(a.input_index);
    out += attrs_text(a.node, ExprSpelling::Plain);
  }
  for (const EEdge& e : node.children) {
    out += " e" + std::to_string(find(e.cls)) + " " + views_[e.view].to_string();
  }
  if (node.attr >= 0) out += schedule_text(attrs_[node.attr].node.schedule);
  return out + ")";
}

std::string EGraph::to_string() const {
  std::string out;
  for (Id c : class_ids_) {
    out += "e" + std::to_string(c) + " " + dims_to_string(data_[c].shape) + " " +
           dtype_name(data_[c].dtype) + ":";
    for (const ENode& n : class_nodes_.at(c)) out += " " + node_to_string(n);
    out += "\n";
  }
  return out;
}

}  // namespace luminal::egraph
