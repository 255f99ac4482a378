// The e-class analysis: facts every e-node of a class agrees on (shape, dtype) and facts that
// grow monotonically as classes merge (a uniform value, non-negativity). Shape and dtype are
// fixed when a class is made; a merge of classes that disagree on them is refused.
#pragma once

#include <optional>
#include <vector>

#include "egraph/enode.h"
#include "ir/scalar_ops.h"  // round_to_dtype: how a uniform value is rounded to its dtype

namespace luminal::egraph {

class EGraph;

struct ClassData {
  DType dtype = DType::F32;
  std::vector<Expr> shape;        // of the (contiguous) tensor the class computes
  std::optional<double> uniform;  // every element equals this value (rounded to dtype)
  bool nonneg = false;            // every element is >= 0 or NaN (never a negative number)
  bool has_constant = false;      // the class holds a Constant, or a Cast of one
};

// The facts of `node` from its children's current facts. Shape and dtype follow the HLIR
// builders (csrc/ir/graph.cc); uniform values fold with the scalar semantics the interpreter
// runs (ir/scalar_ops.h).
ClassData node_facts(const EGraph& g, const ENode& node);

// Joins b into a; false when they disagree on shape or dtype. `changed` reports growth.
bool join_facts(ClassData& a, const ClassData& b, bool* changed);

}  // namespace luminal::egraph
