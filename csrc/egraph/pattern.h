// Patterns: the s-expression language of rule sides. "?x" binds a child edge (an e-class and
// the view it is read through); "(Op:l p q)" matches an e-node of Op whose attribute binds to
// label l; "(Unary:f p)" (an op class: a category of ops.def, Unary or Binary) matches an
// e-node of any op of the class, label f binding the op too, so "(Unary:f ?x)" on the right
// builds the op matched (unscheduled, unless a schedule is stated); a number matches a class
// whose every element is that value, read through an unmasked view. A nested op pattern only matches through the identity view (its tensor read
// as produced). On the right, "(uniform-const ?x)" is ?x's uniform value as a constant, and
// "(schedule ((tile_m 4) (tile_n 16)) (Op ...))" builds the node with that schedule attached
// (ScheduleParams, ir/graph.h): how a runtime's rules offer kernel-level alternatives;
// "(through ?x P)" builds P with ?x read as its class is produced (the identity view) and reads
// the result through ?x's view: an elementwise op moved above a view (a broadcast);
// "(uniform-scalar ?c)", an operand of a binary op on the right, is ?c's uniform value as a
// scalar constant broadcast to its sibling's shape (a number whose value the match decides).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "egraph/egraph.h"
#include "core/sexpr.h"

namespace luminal::egraph {

struct Pattern {
  enum class Kind { Var, Literal, Node, UniformConst, Through, UniformScalar };
  Kind kind = Kind::Var;
  int var = -1;          // Var, UniformConst, Through, UniformScalar: the variable's slot
  double literal = 0;    // Literal
  OpKind op = OpKind::Add;
  std::optional<OpCategory> op_class;  // Node: matches any op of this category (op unused)
  int label = -1;        // Node: slot of the attribute label, -1 when unlabelled
  ScheduleParams schedule;  // Node, right-hand side: attached to the built node
  std::vector<Pattern> children;

  std::string to_string(const std::vector<std::string>& vars,
                        const std::vector<std::string>& labels) const;
};

// At most N elements, stored inline: a Subst is copied for every e-node a pattern matches,
// and three heap vectors per copy were half of a 1B model's saturation time.
template <typename T, size_t N>
class InlineVec {
 public:
  void assign(size_t n, const T& value) {
    size_ = static_cast<uint8_t>(n);
    std::fill_n(items_.begin(), n, value);
  }
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  size_t size() const { return size_; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + size_; }
  bool operator==(const InlineVec& o) const {
    return std::equal(begin(), end(), o.begin(), o.end());
  }

 private:
  std::array<T, N> items_{};
  uint8_t size_ = 0;
};

// The most variables (?root included) and labels one rule binds (Scope::var, Scope::label
// refuse more).
constexpr size_t kMaxRuleVars = 16;
constexpr size_t kMaxRuleLabels = 8;

// A match: an edge per variable, an attribute and an op per label (unbound: cls == kUnbound /
// -2).
struct Subst {
  static constexpr Id kUnbound = 0xFFFFFFFFu;
  InlineVec<EEdge, kMaxRuleVars> vars;
  InlineVec<AttrId, kMaxRuleLabels> labels;
  InlineVec<OpKind, kMaxRuleLabels> label_ops;  // the op of the e-node each label bound
};

// Names of variables and labels, filled while parsing a rule; slot 0 is always ?root.
struct Scope {
  std::vector<std::string> vars = {"?root"};
  std::vector<std::string> labels;
  std::vector<std::optional<OpCategory>> label_classes;  // the op class a label names, if any
  int var(const std::string& name, bool create);
  int label(const std::string& name, bool create);
};

// Parses a pattern; on the right-hand side (create = false) names must already be bound.
Pattern parse_pattern(const SExpr& e, Scope& scope, bool create, const std::string& where);

// Every match of `p` rooted at class c (?root bound to c's identity view).
std::vector<Subst> match_root(EGraph& g, const Pattern& p, Id c, const Scope& scope);

// Builds the right-hand side; returns the class it computes. A bare variable read through a
// non-identity view becomes a same-dtype Cast that materializes the view.
Id instantiate(EGraph& g, const Pattern& p, const Subst& s, Id root);

// A scalar constant of `value` broadcast to `shape` (a Cast of it when shape is not ()).
Id constant_tensor(EGraph& g, double value, DType dtype, const std::vector<Expr>& shape);

}  // namespace luminal::egraph
