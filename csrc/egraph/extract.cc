// k-best extraction. Classes are renumbered densely; a program is a pick (node index) per
// class. Programs are evaluated by a DFS from the roots that also detects cycles. Deviations
// that cannot change what runs (an inline flag on a node read once) are not generated.
#include "egraph/extract.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/errors.h"

namespace luminal::egraph {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Table {
  std::vector<Id> ids;                            // dense index -> class
  std::unordered_map<Id, int> index;              // class -> dense index
  std::vector<std::vector<const ENode*>> nodes;   // per class
  std::vector<std::vector<double>> local;         // per class, per node
  std::vector<std::vector<int>> canon;            // per node: first commutation-equal node
  std::vector<std::vector<std::vector<int>>> kids;  // per node: its children's dense indices
  std::vector<double> best;                       // tree cost of the class
  std::vector<int> pick;                          // node index reaching best
};

bool commutation_equal(const ENode& a, const ENode& b) {
  if (a.op != b.op || a.attr != b.attr) return false;
  if (a.children == b.children) return true;
  if ((a.op != OpKind::Add && a.op != OpKind::Mul) || a.children.size() != 2) return false;
  return a.children[0] == b.children[1] && a.children[1] == b.children[0];
}

// The schedule of `node` without the lowering's kInlineParam (ir/graph.h).
ScheduleParams schedule_without_inline(const EGraph& g, const ENode& node) {
  ScheduleParams out;
  if (node.attr < 0) return out;
  for (const auto& param : g.attr(node.attr).node.schedule) {
    if (param.first != kInlineParam) out.push_back(param);
  }
  return out;
}

// True when e-nodes `a` and `b` of one class differ at most in kInlineParam, which only
// chooses between recomputing a node in each of several reading kernels and storing it once
// (kernel/buffer_plan.cc): for a node read once, both lower to the same kernels. Not for a
// Cast, whose `inline 1` also widens a 16-bit input in its one reader (buffer_plan.h).
bool differs_only_in_inline(const EGraph& g, const ENode& a, const ENode& b) {
  if (a.op != b.op || a.children != b.children || a.op == OpKind::Cast) return false;
  if (a.attr >= 0 && b.attr >= 0) {
    const Node& x = g.attr(a.attr).node;
    const Node& y = g.attr(b.attr).node;
    if (x.axis != y.axis || x.dtype != y.dtype) return false;
  } else if (a.attr != b.attr && !is_unary(a.op) && !is_binary(a.op)) {
    return false;
  }
  return schedule_without_inline(g, a) == schedule_without_inline(g, b);
}

// The own cost of node `node` of class `cls` and of its children's current picks.
double near(const Table& t, size_t cls, size_t node) {
  double c = t.local[cls][node];
  for (int k : t.kids[cls][node]) c += t.pick[k] >= 0 ? t.local[k][t.pick[k]] : kInf;
  return c;
}

Table make_table(const EGraph& g, const CostModel& model) {
  Table t;
  t.ids = g.classes();
  for (size_t i = 0; i < t.ids.size(); ++i) t.index[t.ids[i]] = static_cast<int>(i);
  size_t n = t.ids.size();
  t.nodes.resize(n);
  t.local.resize(n);
  t.canon.resize(n);
  t.kids.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (const ENode& node : g.nodes(t.ids[i])) {
      t.nodes[i].push_back(&node);
      std::vector<int> kids;
      for (const EEdge& e : node.children) kids.push_back(t.index.at(g.find(e.cls)));
      t.kids[i].push_back(std::move(kids));
      t.local[i].push_back(model.node_cost(g, node, t.ids[i]));
      int c = static_cast<int>(t.canon[i].size());
      for (int j = 0; j < c; ++j) {
        if (commutation_equal(*t.nodes[i][j], node)) {
          c = j;
          break;
        }
      }
      t.canon[i].push_back(c);
    }
  }
  t.best.assign(n, kInf);
  t.pick.assign(n, -1);
  // A fixpoint; the pass cap only guards against float ties flipping forever.
  bool changed = true;
  for (int pass = 0; changed && pass < 10000; ++pass) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < t.nodes[i].size(); ++j) {
        double c = t.local[i][j];
        for (int k : t.kids[i][j]) c += t.best[k];
        // Tree costs count a shared subgraph once per path to it, so deep in a many-layer
        // model they dwarf any one node's cost: within the rounding margin of the total, the
        // node of lower own cost plus its children's picks' own costs wins (a kernel
        // alternative over the same children, or one over a differently scheduled child:
        // a rounding stored in 16 bits rather than recomputed in its reader).
        bool tie = t.pick[i] >= 0 && c <= t.best[i] * (1 + 1e-12) &&
                   near(t, i, j) < near(t, i, t.pick[i]) * (1 - 1e-9);
        if (c < t.best[i] * (1 - 1e-12) || tie || (t.pick[i] < 0 && c < kInf)) {
          t.best[i] = c;
          t.pick[i] = static_cast<int>(j);
          changed = true;
        }
      }
    }
  }
  return t;
}

double via(const Table& t, int cls, int node) {
  double c = t.local[cls][node];
  for (int k : t.kids[cls][node]) c += t.best[k];
  return c;
}

struct Evaluated {
  bool ok = false;
  double cost = 0;
  std::vector<int> order;  // reached classes, post-order
};

Evaluated evaluate(const Table& t, const std::vector<int>& pick,
                   const std::vector<int>& roots) {
  Evaluated out;
  std::vector<uint8_t> color(t.ids.size(), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<int, size_t>> stack;
  for (int r : roots) {
    if (color[r] == 2) continue;
    stack.push_back({r, 0});
    color[r] = 1;
    while (!stack.empty()) {
      auto& [cls, next] = stack.back();
      const ENode* node = t.nodes[cls][pick[cls]];
      if (next < node->children.size()) {
        int child = t.kids[cls][pick[cls]][next++];
        if (color[child] == 1) return out;  // a cycle
        if (color[child] == 0) {
          color[child] = 1;
          stack.push_back({child, 0});
        }
        continue;
      }
      color[cls] = 2;
      out.cost += t.local[cls][pick[cls]];
      out.order.push_back(cls);
      stack.pop_back();
    }
  }
  out.ok = true;
  return out;
}

std::vector<int> signature(const Table& t, const std::vector<int>& pick,
                           const std::vector<int>& order) {
  std::vector<int> sig;
  for (int c : order) {
    sig.push_back(c);
    sig.push_back(t.canon[c][pick[c]]);
  }
  // Order-independent: sort the (class, node) pairs.
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < sig.size(); i += 2) pairs.push_back({sig[i], sig[i + 1]});
  std::sort(pairs.begin(), pairs.end());
  sig.clear();
  for (auto& [c, n] : pairs) {
    sig.push_back(c);
    sig.push_back(n);
  }
  return sig;
}

struct Candidate {
  double cost;
  size_t seq;
  std::vector<int> pick;
  std::vector<int> order;
  bool operator>(const Candidate& o) const {
    return cost != o.cost ? cost > o.cost : seq > o.seq;
  }
};
}  // namespace

std::vector<Extracted> extract_best(const EGraph& g, const CostModel& model,
                                    const std::vector<EEdge>& roots, size_t k) {
  if (!g.clean()) throw InternalError("extract: the e-graph needs a rebuild first");
  Table t = make_table(g, model);
  std::vector<int> root_idx;
  for (const EEdge& r : roots) {
    int i = t.index.at(g.find(r.cls));
    if (t.pick[i] < 0) throw InternalError("extract: an output has no finite-cost program");
    root_idx.push_back(i);
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  std::set<std::vector<int>> seen;
  size_t seq = 0;
  Evaluated first = evaluate(t, t.pick, root_idx);
  if (!first.ok) throw InternalError("extract: the cheapest choice is cyclic");
  seen.insert(signature(t, t.pick, first.order));
  heap.push({first.cost, seq++, t.pick, first.order});
  std::vector<Extracted> out;
  const size_t kWidth = 48 + 4 * k;  // deviations evaluated exactly per program found
  while (!heap.empty() && out.size() < k) {
    Candidate cur = heap.top();
    heap.pop();
    Extracted ex;
    ex.cost = cur.cost;
    for (int c : cur.order) ex.order.push_back({t.ids[c], *t.nodes[c][cur.pick[c]]});
    out.push_back(std::move(ex));
    if (out.size() == k) break;
    // Single-class deviations, most promising (by tree-cost estimate) first; none that only
    // flips the inline flag of a class read once (differs_only_in_inline).
    std::vector<int> readers(t.ids.size(), 0);
    for (int c : cur.order) {
      for (int kid : t.kids[c][cur.pick[c]]) readers[kid]++;
    }
    for (int r : root_idx) readers[r]++;
    std::vector<std::tuple<double, int, int>> devs;
    for (int c : cur.order) {
      int mine = t.canon[c][cur.pick[c]];
      double base = via(t, c, cur.pick[c]);
      const ENode& picked = *t.nodes[c][cur.pick[c]];
      for (size_t j = 0; j < t.nodes[c].size(); ++j) {
        if (t.canon[c][j] != static_cast<int>(j) || static_cast<int>(j) == mine) continue;
        if (readers[c] == 1 && differs_only_in_inline(g, picked, *t.nodes[c][j])) continue;
        double alt = via(t, c, static_cast<int>(j));
        if (alt < kInf) devs.push_back({alt - base, c, static_cast<int>(j)});
      }
    }
    std::sort(devs.begin(), devs.end());
    if (devs.size() > kWidth) devs.resize(kWidth);
    for (auto& [delta, c, j] : devs) {
      std::vector<int> pick = cur.pick;
      pick[c] = j;
      Evaluated ev = evaluate(t, pick, root_idx);
      if (!ev.ok) continue;
      if (!seen.insert(signature(t, pick, ev.order)).second) continue;
      heap.push({ev.cost, seq++, std::move(pick), std::move(ev.order)});
    }
  }
  return out;
}

double program_cost(const EGraph& g, const CostModel& model, const Extracted& program) {
  double cost = 0;
  for (const auto& [cls, node] : program.order) cost += model.node_cost(g, node, g.find(cls));
  return cost;
}

}  // namespace luminal::egraph
