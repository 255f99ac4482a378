// Whether every view of a graph reads inside its operand at a binding of the symbols. A graph
// built for a range of sizes (a RoPE table of max_context rows read at offset p) may read past
// a fixed-size operand at a binding beyond that range; its programs would read other memory
// there, so a runtime refuses such a binding before it runs (a ShapeError naming the node), and
// the search's check picks its second binding inside the range.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace luminal {

// An edge: input `second` of node `first`.
using ViewRead = std::pair<NodeId, size_t>;

// The edges whose view has symbols while its operand's size has none (a table read at a
// symbolic offset): where a binding can read past an operand whose size did not follow it.
std::vector<ViewRead> fixed_operand_reads(const Graph& graph);

// "" where every view of `graph` (or only the `reads` given) reads inside its operand at
// `dims`, else what reads where: "Mul %89 ... reads element 2623 of its operand input 'cos'
// ... (2048 elements) at p = 1, s = 40".
std::string view_overrun(const Graph& graph, const DynMap& dims);
std::string view_overrun(const Graph& graph, const std::vector<ViewRead>& reads,
                         const DynMap& dims);

// view_overrun's finding on `reads` as a ShapeError from `fn`, if any.
void check_views_in_bounds(const Graph& graph, const std::vector<ViewRead>& reads,
                           const DynMap& dims, const char* fn);

}  // namespace luminal
