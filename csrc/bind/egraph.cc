// Bindings of the e-graph and search space (csrc/egraph). Candidates own their Graph; a
// Candidate's `graph` is a reference kept alive by the Candidate. A SearchSpace shares its
// runtime's KernelCost, not the runtime. Saturation and extraction release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "egraph/program_text.h"
#include "egraph/search_space.h"
#include "runtime/runtime.h"
#include "runtime/view_bounds.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

void init_egraph(nb::module_& m) {
  using namespace egraph;
  nb::enum_<StopReason>(m, "StopReason")
      .value("Saturated", StopReason::Saturated)
      .value("IterationLimit", StopReason::IterationLimit)
      .value("NodeLimit", StopReason::NodeLimit)
      .value("TimeLimit", StopReason::TimeLimit);

  nb::class_<RunnerLimits>(m, "RunnerLimits")
      .def(nb::init<>())
      .def_rw("iterations", &RunnerLimits::iterations)
      .def_rw("nodes", &RunnerLimits::nodes)
      .def_rw("seconds", &RunnerLimits::seconds)
      .def_rw("match_limit", &RunnerLimits::match_limit)
      .def_rw("ban_length", &RunnerLimits::ban_length);

  nb::class_<RuleStats>(m, "RuleStats")
      .def_ro("name", &RuleStats::name)
      .def_ro("matches", &RuleStats::matches)
      .def_ro("applied", &RuleStats::applied)
      .def_ro("bans", &RuleStats::bans);

  nb::class_<RunnerReport>(m, "RunnerReport")
      .def_ro("stop", &RunnerReport::stop)
      .def_ro("iterations", &RunnerReport::iterations)
      .def_ro("nodes", &RunnerReport::nodes)
      .def_ro("classes", &RunnerReport::classes)
      .def_ro("seconds", &RunnerReport::seconds)
      .def_ro("rejected_merges", &RunnerReport::rejected_merges)
      .def_ro("rules", &RunnerReport::rules)
      .def("__str__", &RunnerReport::to_string);

  nb::class_<Rewrite>(m, "Rewrite")
      .def_ro("name", &Rewrite::name)
      .def_ro("source", &Rewrite::source)
      .def_ro("text", &Rewrite::text)
      .def("__repr__", [](const Rewrite& r) { return r.text; });
  m.def("parse_rules", &parse_rules, "text"_a, "source"_a = "rules");
  m.def("load_rules", &load_rules, "extra"_a = "", "extra_source"_a = "runtime rules");
  m.def("builtin_rule_files", &builtin_rule_files);
  m.def("opt_in_rule_files", &opt_in_rule_files);
  m.def("all_rules_text", &all_rules_text, "runtime_rules"_a = "");

  nb::class_<EGraph>(m, "EGraph")
      .def(nb::init<>())
      .def("add_graph", [](EGraph& g, const Graph& graph) {
        std::vector<Id> roots;
        for (const EEdge& e : add_graph(g, graph)) roots.push_back(e.cls);
        g.rebuild();
        return roots;
      }, "graph"_a)
      .def("run", &run_rules, "rules"_a, "limits"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("rebuild", &EGraph::rebuild)
      .def("find", &EGraph::find, "id"_a)
      .def("equivalent", [](const EGraph& g, Id a, Id b) { return g.find(a) == g.find(b); })
      .def("class_nodes", [](const EGraph& g, Id c) {
        std::vector<std::string> out;
        for (const ENode& n : g.nodes(c)) out.push_back(g.node_to_string(n));
        return out;
      }, "id"_a)
      .def_prop_ro("num_nodes", &EGraph::num_nodes)
      .def_prop_ro("num_classes", &EGraph::num_classes)
      .def("__str__", &EGraph::to_string);

  nb::class_<Candidate>(m, "Candidate")
      .def_ro("graph", &Candidate::graph)
      .def_ro("inputs", &Candidate::inputs)
      .def_ro("outputs", &Candidate::outputs)
      .def_ro("cost", &Candidate::cost)
      .def_ro("node_class", &Candidate::node_class)
      .def("text", [](const Candidate& c) { return program_text(c); });
  m.def("identity_program", &identity_program, "graph"_a);
  m.def("parse_program", &parse_program, "text"_a, "graph"_a);
  m.def("parse_expr", &parse_expr, "text"_a);
  m.def("graph_work", &graph_work, "graph"_a, "dims"_a);
  m.def("view_overrun", nb::overload_cast<const Graph&, const DynMap&>(&view_overrun), "graph"_a,
        "dims"_a);

  nb::class_<SearchSpace>(m, "SearchSpace")
      .def("__init__", [](SearchSpace* space, const Graph& graph, const std::string& rules,
                          const RunnerLimits& limits, const Runtime* runtime) {
        new (space) SearchSpace(graph, rules, limits, runtime ? runtime->kernel_cost() : nullptr);
      }, "graph"_a, "runtime_rules"_a, "limits"_a, "runtime"_a.none() = nb::none(),
           nb::call_guard<nb::gil_scoped_release>())
      .def("extract", &SearchSpace::extract, "k"_a, "dims"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("schedules", &SearchSpace::schedules)
      .def("original_nodes", &SearchSpace::original_nodes, "candidate"_a)
      .def("alternatives", &SearchSpace::alternatives)
      .def("extract_choosing", &SearchSpace::extract_choosing, "choice"_a, "dims"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("report", &SearchSpace::report)
      .def_prop_ro("num_nodes", [](const SearchSpace& s) { return s.egraph().num_nodes(); })
      .def_prop_ro("num_classes", [](const SearchSpace& s) { return s.egraph().num_classes(); });
}

}  // namespace luminal
