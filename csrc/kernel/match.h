// Kernel patterns: shapes of a kernel's value graph that renderers emit with kernels of their
// own. Each pattern is a struct in kernel/kernel.h, held by Kernel, and one match_* function
// here that reads the value graph (which value feeds which), never value positions. Lowering
// runs the matchers once per kernel; every renderer reads the result from the Kernel and only
// adds its own conditions (dtypes it handles). Not a rewrite: a match changes no value.
// A matmul's epilogue (elementwise work after the sum, kernel/epilogue.h) is part of its match,
// and so is its prologue (an A computed from its rows, kernel/prologue.h).
// Attention is its own struct and matcher (kernel/attention.h match_attention, run by lowering
// on the kernels of a SumReduce scheduled attention); a GEMV is not a pattern: it is how the C
// renderer runs a matmul of few rows (codegen/c/gemv.cc).
#pragma once

#include "kernel/kernel.h"

namespace luminal {

// The matmul of `kernel`: its reduction (the last reduction loop) is a SumReduce of a float
// dtype of the Mul of two operands (optionally through a Cast of the product to f32). Each is a
// plain load read as stored or through a Cast widening narrow storage (16-bit float, quantized
// blocks) to f32, and then the reduction loop's body holds nothing else; or one, a, is computed
// in the kernel from its row (MatmulInfo::a_computed: loads, constants and reductions of the row,
// each over a loop of its own) and the other is such a load. The values after the sum (if any:
// an epilogue, kernel/epilogue.h) are elementwise work reading no value of the loop but the sum,
// and the loads' indices are affine in the last two output loops (m, n) and the reduction loop
// (k) with a not moving along n and b not along m (the Mul's operands are taken in either
// order, the written one first). `present` is false otherwise.
MatmulInfo match_matmul(const Kernel& kernel);

}  // namespace luminal
