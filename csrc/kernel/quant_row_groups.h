// Quantized row groups: the layout a quantized weight (Q4_0, Q8_0, Q4_K) is laid out in once,
// when its data is set, for the 512-bit int8 GEMV (schedule quant_rows 4,
// codegen/c/quant_int8_groups.cc), in place of GGUF's row after row of blocks. W's rows (the
// matmul's columns n) go in groups of kGroupRows; a group's k blocks in chunks of
// group_chunk_blocks. A chunk holds, per block, the integers of its kGroupRows rows 16 bytes a
// row at a time (row r's bytes 16h .. 16h + 15 at slot offset (h * kGroupRows + r) * 16: one
// 64-byte vector holds the same bytes of 4 rows), then per block its rows' scales
// (group_meta_bytes a block):
//   Q4_0, Q8_0: the f16 scale of row r at (i * kGroupRows + r) * 2 (block i of the chunk);
//   Q4_K: the 6-bit scales of its 8 sub-blocks s as bytes at s * kGroupRows + r, their
//   minimums 32 bytes on, then d of row r (f16) at 64 + 2r and dmin at 72 + 2r.
// Q4_0 and Q4_K keep their nibbles; Q8_0's signed bytes are stored as unsigned (q + 128, so
// that vpdpbusd multiplies them with x as they are). Rows past N and blocks past K are zero.
// Not the kernels that read it (codegen/c) nor the choice to (kernel/weight_layout.h).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace luminal {

struct PackedPanels;

constexpr int64_t kGroupRows = 4;  // rows of W a group

// Whether weights of `dtype` have a row-group layout.
bool has_row_groups(DType dtype);
// Blocks a chunk (8 for Q4_0 and Q8_0, 4 for Q4_K: a multiple of 64 bytes).
int64_t group_chunk_blocks(DType dtype);
// Bytes of one block's kGroupRows rows of integers in a chunk (64 for Q4_0, 128 for Q8_0,
// 512 for Q4_K).
int64_t group_slot_bytes(DType dtype);
// Bytes of one block's kGroupRows rows of scales in a chunk (8; 80 for Q4_K).
int64_t group_meta_bytes(DType dtype);
// Bytes of a chunk: its slots, then their scales (a multiple of 64).
int64_t group_chunk_bytes(DType dtype);
// Bytes of a group of a weight of K values a row (its blocks, rounded up to whole chunks).
int64_t group_bytes(DType dtype, int64_t k);

// Lays `data` (the parameter's blocks, in GGUF order) out as `panels` (quant_rows: stored a
// type with row groups, k and n the matmul's K and N, offset and b_n in elements) into `out`,
// of panels.bytes() bytes, its groups split over `threads` threads.
void pack_row_groups(const PackedPanels& panels, const uint8_t* data, uint8_t* out,
                     int threads = 1);

}  // namespace luminal
