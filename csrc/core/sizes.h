// Element counts and byte sizes of buffers, checked. Every size a runtime computes from dims
// goes through these, so a size that does not fit is a ShapeError naming the tensor and its
// dims, never a wrapped product, a std::bad_alloc or a write past a short buffer. Not for
// symbolic expressions: core/symbolic checks its own arithmetic.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace luminal {

// The largest buffer any runtime allocates, in bytes (256 TiB: past every address space and
// device memory luminal runs on, so a larger size is a mistake, not a machine too small).
constexpr int64_t kMaxBufferBytes = int64_t{1} << 48;

// Names the tensor a size belongs to ("execute: output %5 of shape (s, s)"); called only when
// the size is refused, so building the text costs nothing on the ordinary path.
using DescribeTensor = std::function<std::string()>;

// The product of `dims`, each >= 0. ShapeError when a dim is negative or the product passes
// int64.
int64_t checked_numel(const std::vector<int64_t>& dims, const DescribeTensor& what);
// numel elements of `dtype` in bytes, at most kMaxBufferBytes; ShapeError beyond.
int64_t checked_bytes(int64_t numel, DType dtype, const DescribeTensor& what);
// a + b for byte sizes already checked (an arena's running total), at most kMaxBufferBytes.
int64_t checked_add_bytes(int64_t a, int64_t b, const DescribeTensor& what);
// Resizes `out` to `bytes` bytes (new ones zeroed); an allocation the machine refuses is a
// ShapeError naming the tensor, not std::bad_alloc.
void allocate_bytes(std::vector<uint8_t>& out, int64_t bytes, const DescribeTensor& what);

}  // namespace luminal
