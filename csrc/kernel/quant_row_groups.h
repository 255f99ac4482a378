// Quantized row groups: the layout a quantized weight (Q4_0, Q8_0) is laid out in once, when
// its data is set, for the 512-bit int8 GEMV (schedule quant_rows 4, codegen/c/quant_int8.cc),
// in place of GGUF's row after row of blocks. W's rows (the matmul's columns n) go in groups of
// kGroupRows; a group's k blocks in chunks of kChunkBlocks. A chunk holds, per block, the
// integers of its kGroupRows rows 16 bytes a row at a time (row r's bytes 16h .. 16h + 15 at
// slot offset (h * kGroupRows + r) * 16: one 64-byte vector holds the same bytes of 4 rows),
// then the chunk's f16 scales (block i, row r at scale offset (i * kGroupRows + r) * 2). Q4_0
// keeps its 16 bytes of nibbles; Q8_0's signed bytes are stored as unsigned (q + 128, so that
// vpdpbusd multiplies them with x as they are). Rows past N and blocks past K are zero. Not
// the kernels that read it (codegen/c) nor the choice to (kernel/weight_layout.h).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace luminal {

struct PackedPanels;

constexpr int64_t kGroupRows = 4;    // rows of W a group
constexpr int64_t kChunkBlocks = 8;  // k blocks a chunk

// Whether weights of `dtype` have a row-group layout.
bool has_row_groups(DType dtype);
// Bytes of one block's kGroupRows rows of integers in a chunk (64 for Q4_0, 128 for Q8_0).
int64_t group_slot_bytes(DType dtype);
// Bytes of a chunk: kChunkBlocks slots, then their scales (a multiple of 64).
int64_t group_chunk_bytes(DType dtype);
// Bytes of a group of a weight of K values a row (K / 32 blocks, rounded up to whole chunks).
int64_t group_bytes(DType dtype, int64_t k);

// Lays `data` (the parameter's blocks, in GGUF order) out as `panels` (quant_rows: stored a
// type with row groups, k and n the matmul's K and N, offset and b_n in elements) into `out`,
// of panels.bytes() bytes.
void pack_row_groups(const PackedPanels& panels, const uint8_t* data, uint8_t* out);

}  // namespace luminal
