// The default lowering of an HLIR graph to LLIR, so a compiled runtime works without search:
// elementwise chains fuse into their single consumer, a reduction fuses with its producers,
// and a node materializes into a buffer when it is read twice, broadcast, or gathered from.
// Views become index arithmetic. Not a cost model: the e-graph search does better.
#pragma once

#include "ir/graph.h"
#include "kernel/kernel.h"

namespace luminal {

// Options of the lowering that a TuningChoice sets (see Schedule for their meaning).
struct LowerOptions {
  int64_t tile_m = 0;
  int64_t tile_n = 0;
  int64_t tile_k = 0;
  int vector_width = 0;
};

Program lower_graph(const Graph& graph, const LowerOptions& options = {});

// The symbol a dim of the graph is renamed to inside a program: "d<k>" for the k-th of
// Program::dims.
Expr program_dim(size_t k);

}  // namespace luminal
