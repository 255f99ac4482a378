// Matmul prologues: a matmul's A computed in its own kernel from A's rows as it is read, so
// that a norm before a Linear (RMSNorm, LayerNorm: row statistics, then x * r * gamma + beta)
// never stores its output. The schedule kPrologueParam (ir/graph.h; a runtime's rules attach it
// to a matmul's SumReduce, so the search times it against the default) makes the buffer plan
// compute A's cone inline (prologue_region); lowering then checks the kernel (match_matmul,
// MatmulInfo::a_computed) and lowers the SumReduce as by default where it is not that shape.
// Not the renderings (codegen/c/prologue.cc).
#pragma once

#include <set>
#include <vector>

#include "ir/graph.h"

namespace luminal {

// The nodes a SumReduce `reduce` scheduled prologue may compute inline: A's cone through
// elementwise nodes and reductions that are not matmuls, up to inputs, nodes in `taken` (other
// regions') and nodes scheduled as kernels of their own, at most kMaxPrologueNodes. Empty when
// no operand of its product is read through a broadcast from a reduction of that cone (a
// row statistic). Which of them no other kernel reads the buffer plan decides.
std::set<NodeId> prologue_region(const Graph& graph, NodeId reduce, const std::set<NodeId>& taken);

inline constexpr size_t kMaxPrologueNodes = 64;

}  // namespace luminal
