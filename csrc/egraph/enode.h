// E-nodes: an HLIR op applied to e-classes, each child read through an interned view. The view
// is part of the e-node's data (one ViewId per child), so two e-nodes are equal only when they
// read the same classes through structurally equal views (ShapeTracker::to_string). Attributes
// (input identity, constant value, axis, cast dtype) are interned too, as an AttrId.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "egraph/union_find.h"
#include "ir/graph.h"

namespace luminal::egraph {

using ViewId = int32_t;
using AttrId = int32_t;  // -1: the op has no attribute (elementwise ops, Gather)

// A child of an e-node: an e-class read through a view.
struct EEdge {
  Id cls = 0;
  ViewId view = 0;
  bool operator==(const EEdge& o) const { return cls == o.cls && view == o.view; }
};

// The attribute of a source, reduce or cast node. `node` is the HLIR node without inputs:
// Input (name, shape, dtype), Constant (value or expr, dtype), Iota (expr, shape), reductions
// (axis), Cast (dtype). input_index: the Input's position in Graph::inputs(), else -1.
struct Attr {
  Node node;
  int input_index = -1;
};

struct ENode {
  OpKind op = OpKind::Add;
  AttrId attr = -1;
  std::vector<EEdge> children;  // op_arity(op) of them; classes canonical after rebuild

  bool operator==(const ENode& o) const {
    return op == o.op && attr == o.attr && children == o.children;
  }
};

struct ENodeHash {
  size_t operator()(const ENode& n) const {
    size_t h = static_cast<size_t>(n.op) * 0x9E3779B97F4A7C15ull + static_cast<size_t>(n.attr);
    for (const EEdge& e : n.children) {
      h = (h ^ e.cls) * 0x100000001B3ull;
      h = (h ^ static_cast<uint32_t>(e.view)) * 0x100000001B3ull;
    }
    return h;
  }
};

}  // namespace luminal::egraph
