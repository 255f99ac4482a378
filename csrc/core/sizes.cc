// The checked size arithmetic of core/sizes.h and the wording of its errors.
#include "core/sizes.h"

#include <new>
#include <stdexcept>

#include "core/errors.h"

namespace luminal {

namespace {
std::string values_to_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t k = 0; k < dims.size(); ++k) out += (k ? ", " : "") + std::to_string(dims[k]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string limit_text() { return std::to_string(kMaxBufferBytes >> 40) + " TiB"; }
}  // namespace

int64_t checked_numel(const std::vector<int64_t>& dims, const DescribeTensor& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      throw ShapeError(what() + ": a dimension is negative " + values_to_string(dims));
    }
    if (__builtin_mul_overflow(n, d, &n)) {
      throw ShapeError(what() + ": dims " + values_to_string(dims) +
                       " have more than 2**63 elements");
    }
  }
  return n;
}

int64_t checked_bytes(int64_t numel, DType dtype, const DescribeTensor& what) {
  int64_t bytes = 0;
  bool overflow = false;
  if (is_quantized(dtype)) {  // counted in whole blocks (core/dtype storage_bytes)
    bytes = storage_bytes(dtype, numel);
  } else {
    overflow = __builtin_mul_overflow(numel, static_cast<int64_t>(dtype_size(dtype)), &bytes);
  }
  if (overflow || bytes > kMaxBufferBytes) {
    throw ShapeError(what() + ": " + std::to_string(numel) + " elements of " + dtype_name(dtype) +
                     " need more than " + limit_text() + ", the most a buffer may hold");
  }
  return bytes;
}

int64_t checked_add_bytes(int64_t a, int64_t b, const DescribeTensor& what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum) || sum > kMaxBufferBytes) {
    throw ShapeError(what() + ": needs more than " + limit_text() +
                     ", the most a buffer may hold");
  }
  return sum;
}

void allocate_bytes(std::vector<uint8_t>& out, int64_t bytes, const DescribeTensor& what) {
  try {
    out.resize(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc&) {
    throw ShapeError(what() + ": " + std::to_string(bytes) +
                     " bytes could not be allocated on this machine");
  } catch (const std::length_error&) {
    throw ShapeError(what() + ": " + std::to_string(bytes) + " bytes is more than a buffer holds");
  }
}

}  // namespace luminal
