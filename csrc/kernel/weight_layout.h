// Weight layout: which parameters a runtime lays out once, when their data is set, as the
// panels its GEMMs read (PackedPanels), in place of their data or beside it. Decided once per
// program after lowering, from the panels each kernel's renderer would read, and recorded on
// the kernels (Kernel::panels) for the renderer and set_data to read alike. Not which kernels would read
// panels (a renderer's: codegen/c/matmul.h gemm_panels) nor the packing itself (the runtime).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.h"

namespace luminal {

class Graph;
struct Program;

// The panels a GEMM reads its B from when B is a parameter its schedule packs (pack_b 1): the
// runtime lays them out once, when the parameter's data is set, as the kernel would pack them
// on every call otherwise. B's element (k, n), at offset + k * b_k + n * b_n of the
// parameter's data, lies in k block k / depth (of rows = min(depth, K - its first k)), panel
// n / width of it (columns past N zero), at row k % depth and column n % width: element
// (k / depth) * depth * N' + (n / width) * rows * width + (k % depth) * width + n % width, with
// N' = N rounded up to the width. So a task's panels of one k block are one contiguous run.
// In B's storage dtype (a bf16 weight stays bf16, widened in the micro-kernel's registers).
// With `pairs` (the bf16 dot products' panels, codegen/c/bf16_dot.cc) a panel row holds two k:
// width 32-bit words (B[k, n], B[k + 1, n]), the k block's rows rounded up to even (the last
// pair of an odd block 0 in its high half), so every offset above counts in those words, with
// rows / 2 in place of rows and k / 2 in place of k.
// With `row_groups` (a quantized weight read by the 512-bit int8 GEMV, schedule quant_rows)
// B's blocks lie in kernel/quant_row_groups.h's layout instead, width its rows a group and
// depth 0.
struct PackedPanels {
  DType stored = DType::F32;
  int64_t width = 0;  // columns a panel: the kernel's tile_n
  int64_t depth = 0;  // rows of a k block: the kernel's tile_k
  int64_t k = 0;      // K and N of the matmul
  int64_t n = 0;
  int64_t offset = 0;  // where B's (k, n) lies in the parameter's data
  int64_t b_k = 0;
  int64_t b_n = 0;
  bool pairs = false;
  bool row_groups = false;

  int64_t padded_n() const { return (n + width - 1) / width * width; }
  // In B's elements (a pair's word holds two).
  int64_t elements() const { return padded_n() * (pairs ? k + k % 2 : k); }
  // The bytes they take.
  int64_t bytes() const;
  // The largest element of the parameter's data the panels read, -1 when they read none.
  int64_t last_read() const;
  bool operator==(const PackedPanels& o) const;
};

// Sets Kernel::panels in the kernels of `program` (lowered from `graph`) whose `wanted` panels
// (per kernel, in order: those its renderer would read B from, were B laid out ahead) are kept:
// those whose B is a parameter of `graph` that all such kernels want in the same panels. They
// then read a buffer of their own (Buffer::panels, the node's). Where a kernel reads the
// parameter otherwise too, only row groups are kept, beside the data as stored (a tied
// quantized embedding: its gather reads the blocks); float panels are not (one layout, the
// GEMM packs per call). An input that changes per call is never packed ahead; every other
// kernel reads B as stored (Kernel::panels empty).
void settle_weight_layout(const Graph& graph, Program& program,
                          const std::vector<std::optional<PackedPanels>>& wanted);

}  // namespace luminal
