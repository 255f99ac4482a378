// Rewrite rules as data: "(rule NAME LHS RHS (if COND...))" in rule files. The built-in files
// (csrc/egraph/rules/*.rules) are embedded into the binary at build time; runtimes add their
// own text through Runtime::rewrite_rules(). Every rule has a unique name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "egraph/pattern.h"

namespace luminal::egraph {

// Conditions on bound variables (x, y: variable slots).
//   (identity ?x)     x is read through the identity view of its class
//   (unmasked ?x)     x's view has no padding
//   (nonneg ?x)       every element of x is >= 0 or NaN
//   (int ?x)          x is Int or Bool;  (float ?x): x is f32, f16 or bf16
//   (half ?x)         x is f16 or bf16
//   (bf16 ?x)         x is bf16, or its class holds a Cast of a bf16 class (bf16 values widened)
//   (rounds-to-bf16 c)  the node labelled c on the left is a Cast to bf16
//   (parameter ?x)    x's class holds a parameter input (ir/graph.h), or a Cast of one
//   (uniform ?x)      every element of x is one known value
//   (not-const ?x)    x's class holds no Constant (nor a broadcast Cast of one)
//   (same-dtype ?x ?y)
//   (pow2 ?x)         every element of x is one known power of two (+-2^k): scaling by it is
//                     exact, barring overflow and underflow
//   (broadcast ?x)    x is read through a view that repeats elements (a stride 0 over more
//                     than one element), unmasked
//   (matmul ?a ?b l)  a SumReduce labelled l of Mul(?a, ?b) is a matmul (egraph/matmul_shape.h)
//   (attention ?a ?b l)  that matmul's ?a or ?b holds softmax weights: an Exp2, or a Mul of
//                     one (kernel/attention.h: the lowering checks the rest)
//   (quant-dot ?a ?b l)  that matmul multiplies quantized activations (the Q8_0 round trip of a
//                     tensor, ir/quant_activations.h) with a Cast of a quantized weight, in
//                     either order (kernel/quant_dot.h: the lowering checks the rest)
//   (prologue ?a ?b l)  that matmul's A (?a or ?b) is elementwise work reading a reduction's
//                     result through a broadcast: a row statistic, as a norm's x * r
//                     (kernel/prologue.h: the lowering checks the rest)
//   (window ?a ?b l)  that matmul's B (?a or ?b) is a Gather whose index is Int (a
//                     convolution's windows; kernel/window.h: the lowering checks the rest)
enum class CondKind {
  Identity, Unmasked, Nonneg, Int, Float, Uniform, NotConst, SameDtype, Matmul, Half, Quantized,
  Parameter, Broadcast, Pow2, Attention, QuantDot, Prologue, Window, ReadOnce, Bf16,
  RoundsToBf16
};

struct Condition {
  CondKind kind = CondKind::Identity;
  int x = -1;
  int y = -1;
  int label = -1;  // Matmul, Attention, QuantDot, Prologue, Window, ReadOnce: the SumReduce's
};

struct Rewrite {
  std::string name;
  std::string source;  // the rule file it came from
  std::string text;    // the rule as written
  Scope scope;
  Pattern lhs;
  Pattern rhs;
  std::vector<Condition> conditions;

  bool holds(const EGraph& g, const Subst& s) const;
};

// Parses every rule of `text`; `source` names it in messages. Throws CompileError.
std::vector<Rewrite> parse_rules(const std::string& text, const std::string& source);

// The embedded rule files: (file name, contents), in a stable order (generated at build time).
const std::vector<std::pair<std::string, std::string>>& builtin_rule_files();
// The opt-in rule sets (rules/opt_in/*.rules, e.g. float_reassoc.rules): (file name,
// contents), used only when an option asks for one (python/luminal/search.py).
const std::vector<std::pair<std::string, std::string>>& opt_in_rule_files();

// All built-in rules, then `extra` (a runtime's rules); throws CompileError on duplicate names.
std::vector<Rewrite> load_rules(const std::string& extra, const std::string& extra_source);

}  // namespace luminal::egraph
