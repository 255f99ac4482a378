// Quantized row groups (kernel/quant_row_groups.h): their sizes and the packing.
#include "kernel/quant_row_groups.h"

#include <cstring>

#include "core/errors.h"
#include "core/parallel_for.h"
#include "core/quant.h"
#include "kernel/weight_layout.h"

namespace luminal {

bool has_row_groups(DType dtype) {
  return dtype == DType::Q4_0 || dtype == DType::Q8_0 || dtype == DType::Q4_K;
}

namespace {

void check(DType dtype) {
  if (!has_row_groups(dtype)) {
    throw InternalError(std::string("row groups: ") + dtype_name(dtype) + " has none");
  }
}

// Bytes of a block's integers in GGUF's layout, and where they start.
int64_t integer_bytes(DType dtype) { return dtype == DType::Q4_K ? 128 : block_bytes(dtype) - 2; }
int64_t integers_at(DType dtype) { return dtype == DType::Q4_K ? 16 : 2; }

// Row r's scales of block `block` into the block's scales `meta` (group_meta_bytes).
void pack_scales(DType dtype, const uint8_t* block, int64_t r, uint8_t* meta) {
  if (dtype != DType::Q4_K) {
    std::memcpy(meta + r * 2, block, 2);
    return;
  }
  for (int64_t s = 0; s < 8; ++s) {
    int sc, m;
    k_quant_scale_min(block, s, &sc, &m);
    meta[s * kGroupRows + r] = static_cast<uint8_t>(sc);
    meta[32 + s * kGroupRows + r] = static_cast<uint8_t>(m);
  }
  std::memcpy(meta + 64 + r * 2, block, 2);
  std::memcpy(meta + 72 + r * 2, block + 2, 2);
}

}  // namespace

int64_t group_chunk_blocks(DType dtype) {
  check(dtype);
  return dtype == DType::Q4_K ? 4 : 8;
}

int64_t group_slot_bytes(DType dtype) {
  check(dtype);
  return integer_bytes(dtype) * kGroupRows;
}

int64_t group_meta_bytes(DType dtype) {
  check(dtype);
  return dtype == DType::Q4_K ? 80 : 2 * kGroupRows;
}

int64_t group_chunk_bytes(DType dtype) {
  return group_chunk_blocks(dtype) * (group_slot_bytes(dtype) + group_meta_bytes(dtype));
}

int64_t group_bytes(DType dtype, int64_t k) {
  const int64_t blocks = k / block_values(dtype);
  const int64_t per = group_chunk_blocks(dtype);
  return (blocks + per - 1) / per * group_chunk_bytes(dtype);
}

void pack_row_groups(const PackedPanels& panels, const uint8_t* data, uint8_t* out,
                     int threads) {
  const DType w = panels.stored;
  const int64_t bv = block_values(w);
  const int64_t bb = block_bytes(w);
  const int64_t blocks = panels.k / bv;
  const int64_t per = group_chunk_blocks(w);
  const int64_t slot = group_slot_bytes(w);
  const int64_t chunk = group_chunk_bytes(w);
  const int64_t pieces = integer_bytes(w) / 16;  // 16-byte pieces of a row's integers
  const uint8_t flip = w == DType::Q8_0 ? 0x80 : 0;
  const int64_t bytes = group_bytes(w, panels.k);
  parallel_for(panels.padded_n() / kGroupRows, threads, [&](int64_t begin, int64_t end) {
    std::memset(out + begin * bytes, 0, static_cast<size_t>((end - begin) * bytes));
    for (int64_t g = begin; g < end; ++g) {
      uint8_t* group = out + g * bytes;
      for (int64_t r = 0; r < kGroupRows && g * kGroupRows + r < panels.n; ++r) {
        const int64_t n = g * kGroupRows + r;
        const uint8_t* row = data + (panels.offset + n * panels.b_n) / bv * bb;
        for (int64_t kb = 0; kb < blocks; ++kb) {
          const uint8_t* block = row + kb * bb;
          uint8_t* at = group + kb / per * chunk;
          const int64_t i = kb % per;
          const uint8_t* integers = block + integers_at(w);
          for (int64_t h = 0; h < pieces; ++h) {
            uint8_t* dst = at + i * slot + (h * kGroupRows + r) * 16;
            for (int64_t j = 0; j < 16; ++j) dst[j] = integers[h * 16 + j] ^ flip;
          }
          pack_scales(w, block, r, at + per * slot + i * group_meta_bytes(w));
        }
      }
    }
  });
}

}  // namespace luminal
