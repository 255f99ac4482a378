// The half-precision pass: a copy of a graph that runs in f16 or bf16. Every f32 tensor
// (inputs, weights, activations) becomes `half`; the elementwise work feeding a sum (norms,
// means, softmax denominators) runs in f32, the sum accumulates in f32, and its result stays
// f32 through unary ops and ops with constants (mean, + eps, rsqrt) until it meets a full
// tensor, where it is cast back to `half`. Sums of products of two broadcast operands
// (matmuls) stay in `half`: the kernels accumulate those in f32 anyway. Tensors already f16/bf16 keep their dtype.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace luminal {

struct HalfGraph {
  Graph graph;
  std::vector<NodeId> map;  // old node id -> its (half) node in `graph`
};

// Throws DTypeError unless `half` is F16 or BF16.
HalfGraph to_half(const Graph& graph, DType half);

}  // namespace luminal
