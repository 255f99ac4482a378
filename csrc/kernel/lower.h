// The default lowering of an HLIR graph to LLIR, so a compiled runtime works without search:
// elementwise chains fuse into their single consumer, a reduction fuses with its producers,
// and a node materializes into a buffer when it is read twice, broadcast, or gathered from.
// Views become index arithmetic. Not a cost model: the e-graph search does better.
#pragma once

#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

// `program_schedule` is a program-wide tuning choice (TuningChoice::params): every kernel's
// schedule is it, then its root node's own, then (a matmul with an epilogue, kernel/epilogue.h)
// its reduction's (Kernel::schedule). The lowering itself reads only the nodes' kInlineParam
// (ir/graph.h), kEpilogueParam and kPrologueParam; the rest is the renderer's.
Program lower_graph(const Graph& graph, const ScheduleParams& program_schedule = {});

// The symbol a dim of the graph is renamed to inside a program: "d<k>" for the k-th of
// Program::dims.
Expr program_dim(size_t k);

}  // namespace luminal
