// Quantized row groups (kernel/quant_row_groups.h): their sizes and the packing.
#include "kernel/quant_row_groups.h"

#include <cstring>

#include "core/errors.h"
#include "kernel/weight_layout.h"

namespace luminal {

bool has_row_groups(DType dtype) { return dtype == DType::Q4_0 || dtype == DType::Q8_0; }

int64_t group_slot_bytes(DType dtype) {
  if (!has_row_groups(dtype)) {
    throw InternalError(std::string("row groups: ") + dtype_name(dtype) + " has none");
  }
  return (block_bytes(dtype) - 2) * kGroupRows;  // a block's integers (past its f16 scale)
}

int64_t group_chunk_bytes(DType dtype) {
  return kChunkBlocks * (group_slot_bytes(dtype) + 2 * kGroupRows);
}

int64_t group_bytes(DType dtype, int64_t k) {
  const int64_t blocks = k / block_values(dtype);
  return (blocks + kChunkBlocks - 1) / kChunkBlocks * group_chunk_bytes(dtype);
}

void pack_row_groups(const PackedPanels& panels, const uint8_t* data, uint8_t* out) {
  const DType w = panels.stored;
  const int64_t bv = block_values(w);
  const int64_t bb = block_bytes(w);
  const int64_t blocks = panels.k / bv;
  const int64_t slot = group_slot_bytes(w);
  const int64_t chunk = group_chunk_bytes(w);
  const int64_t halves = slot / (16 * kGroupRows);  // 16-byte pieces of a row's integers
  const uint8_t flip = w == DType::Q8_0 ? 0x80 : 0;
  const int64_t groups = panels.padded_n() / kGroupRows;
  std::memset(out, 0, static_cast<size_t>(groups * group_bytes(w, panels.k)));
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* group = out + g * group_bytes(w, panels.k);
    for (int64_t r = 0; r < kGroupRows && g * kGroupRows + r < panels.n; ++r) {
      const int64_t n = g * kGroupRows + r;
      const uint8_t* row = data + (panels.offset + n * panels.b_n) / bv * bb;
      for (int64_t kb = 0; kb < blocks; ++kb) {
        const uint8_t* block = row + kb * bb;
        uint8_t* at = group + kb / kChunkBlocks * chunk;
        const int64_t i = kb % kChunkBlocks;
        for (int64_t h = 0; h < halves; ++h) {
          uint8_t* dst = at + i * slot + (h * kGroupRows + r) * 16;
          for (int64_t j = 0; j < 16; ++j) dst[j] = block[2 + h * 16 + j] ^ flip;
        }
        std::memcpy(at + kChunkBlocks * slot + (i * kGroupRows + r) * 2, block, 2);
      }
    }
  }
}

}  // namespace luminal
