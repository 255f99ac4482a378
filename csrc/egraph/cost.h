// The cost model that ranks programs before any timing: a fixed launch cost per materialized
// e-node plus work proportional to the elements it reads and writes, with strided, padded and
// broadcast reads priced differently. Sizes are evaluated with representative symbol values.
// A matmul (egraph/matmul_shape.h) is priced by the runtime's KernelCost when it has one (an
// estimate of its kernel under the node's schedule, which ranks tilings the search then
// times), and so are a Cast widening a 16-bit float (stored as an f32 copy or widened in its
// readers) and one rounding to it (stored in 16 bits or recomputed in its readers). A
// reduction computed in its readers, once per row (schedule row 1 or 2), costs no launch of
// its own. The model knows no runtime: a runtime hands its KernelCost in
// (Runtime::kernel_cost).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "egraph/egraph.h"

namespace luminal::egraph {

// A matmul's extents with the model's symbol values in place: out[batch, m, n] = sum over k.
struct MatmulSize {
  double batch = 1;
  double m = 1;
  double n = 1;
  double k = 1;
  bool b_parameter = true;  // B a parameter, which a runtime may lay out once (pack_b)
};

// A runtime's prices for the kernels whose cost depends on its schedule parameters, in the
// model's units (about an element's worth of work each), without the launch.
struct KernelCost {
  virtual ~KernelCost() = default;
  // An f32 matmul of `size` built with the node's own `schedule` (ir/graph.h); < 0 (the
  // default): priced as the reduction it is written as.
  virtual double matmul(const MatmulSize& size, const ScheduleParams& schedule) const {
    (void)size;
    (void)schedule;
    return -1;
  }
  // A Cast of `elements` from f16/bf16 to f32 built with the node's own `schedule`, launch
  // included; < 0 (the default): priced as any other node.
  virtual double widen(double elements, const ScheduleParams& schedule) const {
    (void)elements;
    (void)schedule;
    return -1;
  }
  // A Cast of `elements` from f32 to f16/bf16 (a rounding) built with the node's own
  // `schedule`, launch excluded; < 0 (the default): priced as any other node.
  virtual double narrow(double elements, const ScheduleParams& schedule) const {
    (void)elements;
    (void)schedule;
    return -1;
  }
};

struct CostModel {
  DynMap dims;           // a value for every symbol (missing ones count as kDefaultDim)
  double launch = 64.0;  // per materialized node: a kernel launch / a pass over memory
  // The runtime's prices of its scheduled kernels; null: a matmul is priced as the reduction
  // it is written as, like any other node.
  std::shared_ptr<const KernelCost> kernel_cost;

  // Nodes carrying exactly this schedule cost a hundredth: extraction then uses it wherever
  // the e-graph offers it (how the search builds one program per runtime alternative).
  ScheduleParams prefer;
  // The same per class: in class c, the node whose schedule prints as prefer_in_class[c]
  // ("" = no schedule) costs a hundredth (how the search combines the fastest kernels).
  std::map<Id, std::string> prefer_in_class;

  static constexpr int64_t kDefaultDim = 16;
  // The cost of e-node `node` of class `cls` (canonical).
  double node_cost(const EGraph& g, const ENode& node, Id cls) const;
  double elements(const std::vector<Expr>& dims) const;
  double size(const Expr& e) const { return elements({e}); }

 private:
  // plain_cost by canonical e-node, filled as nodes are priced and shared by the copies of
  // one model: the search extracts several programs (one per preferred schedule) with the
  // same dims and kernel_cost, so each node is priced once (symbolic sizes are not cheap).
  // A copy that changes dims or kernel_cost must reset it.
  std::shared_ptr<std::unordered_map<ENode, double, ENodeHash>> plain_costs_ =
      std::make_shared<std::unordered_map<ENode, double, ENodeHash>>();

  double plain_cost(const EGraph& g, const ENode& node) const;
  double priced_plain_cost(const EGraph& g, const ENode& node) const;  // plain_cost, memoized
  double matmul_cost(const EGraph& g, const ENode& node) const;
};

// Elements a graph touches: per node, the largest of its output and its input views, summed.
// A size estimate of one execution (the search uses it to pick its reference runtime).
double graph_work(const Graph& graph, const DynMap& dims);

}  // namespace luminal::egraph
