// host_elements.h: evaluated views, element loads and stores by dtype, the walk's loops.
#include "runtime/native/host_elements.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/quant.h"
#include "ir/scalar_ops.h"

namespace luminal::native {

ConcreteView evaluate(const ShapeTracker& st, const DynMap& env) {
  ConcreteView v;
  for (size_t k = 0; k < st.rank(); ++k) {
    v.dims.push_back(st.dims[k].eval(env));
    v.strides.push_back(st.strides[k].eval(env));
    v.lo.push_back(st.mask_lo[k].eval(env));
    v.hi.push_back(st.mask_hi[k].eval(env));
  }
  v.offset = st.offset.eval(env);
  return v;
}

std::vector<int64_t> evaluate(const std::vector<Expr>& dims, const DynMap& env) {
  std::vector<int64_t> out;
  for (const Expr& d : dims) {
    int64_t v = d.eval(env);
    if (v < 0) throw ShapeError("dimension " + d.to_string() + " is negative (" +
                                std::to_string(v) + ")");
    out.push_back(v);
  }
  return out;
}

double load_f(DType dtype, const uint8_t* bytes, int64_t i) {
  switch (dtype) {
    case DType::F32: {
      float v;
      std::memcpy(&v, bytes + 4 * i, 4);
      return v;
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * i, 2);
      return f16_to_f32(v);
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * i, 2);
      return bf16_to_f32(v);
    }
    case DType::Int: {
      int32_t v;
      std::memcpy(&v, bytes + 4 * i, 4);
      return v;
    }
    case DType::Bool:
      return bytes[i] ? 1.0 : 0.0;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return dequantize_element(dtype, bytes, i);
  }
  return 0;
}

int64_t load_i(DType dtype, const uint8_t* bytes, int64_t i) {
  if (dtype == DType::Int) {
    int32_t v;
    std::memcpy(&v, bytes + 4 * i, 4);
    return v;
  }
  if (dtype == DType::Bool) return bytes[i] ? 1 : 0;
  return float_to_int(load_f(dtype, bytes, i));
}

double stored_value(DType dtype, double v) {
  if (is_float(dtype)) return round_to_dtype(v, dtype);
  if (dtype == DType::Int) return static_cast<double>(wrap_to_i32(static_cast<int64_t>(v)));
  if (dtype == DType::Bool) return v != 0 ? 1.0 : 0.0;
  throw InternalError("stored_value of a quantized dtype (parameter storage only)");
}

void store_f(HostBuffer& b, int64_t i, double v) {
  switch (b.dtype) {
    case DType::F32: {
      float f = static_cast<float>(v);
      std::memcpy(b.bytes.data() + 4 * i, &f, 4);
      return;
    }
    case DType::F16: {
      uint16_t h = f32_to_f16(static_cast<float>(v));
      std::memcpy(b.bytes.data() + 2 * i, &h, 2);
      return;
    }
    case DType::BF16: {
      uint16_t h = f32_to_bf16(static_cast<float>(v));
      std::memcpy(b.bytes.data() + 2 * i, &h, 2);
      return;
    }
    case DType::Int:
    case DType::Bool:
      throw InternalError("store_f on an integer buffer");
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      throw InternalError("store_f on a quantized buffer (parameter storage only)");
  }
}

void store_i(HostBuffer& b, int64_t i, int64_t v) {
  if (b.dtype == DType::Bool) {
    b.bytes[i] = v != 0;
    return;
  }
  if (b.dtype != DType::Int) throw InternalError("store_i on a float buffer");
  int32_t w = wrap_to_i32(v);
  std::memcpy(b.bytes.data() + 4 * i, &w, 4);
}

// Stores a value computed in double into any dtype (casts included), as round_to_dtype rounds.
void store_any(HostBuffer& b, int64_t i, double v) {
  if (is_float(b.dtype)) {
    store_f(b, i, v);
  } else {
    store_i(b, i, static_cast<int64_t>(round_to_dtype(v, b.dtype)));
  }
}

HostBuffer make_buffer(DType dtype, std::vector<int64_t> shape, const DescribeTensor& what) {
  HostBuffer b;
  b.dtype = dtype;
  b.shape = std::move(shape);
  int64_t bytes = checked_bytes(checked_numel(b.shape, what), dtype, what);
  allocate_bytes(b.bytes, bytes, what);
  return b;
}

bool has_mask(const ConcreteView& v) {
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (v.lo[k] > 0 || v.hi[k] < v.dims[k]) return true;
  }
  return false;
}

constexpr int64_t kTile = 32;

// The loops of a walk over `dims`: row-major; or, where a view reads some dim b with unit
// stride and the last dim with a larger one (a transposed read, such as a matmul's weight
// under its broadcast product), dims b and last in kTile x kTile tiles, so that both the
// view and the row-major output stay in cache.
std::vector<Loop> walk(const std::vector<int64_t>& dims,
                       const std::vector<const ConcreteView*>& views) {
  size_t rank = dims.size();
  size_t b = rank;
  if (rank >= 2 && dims[rank - 1] > 1) {
    for (const ConcreteView* v : views) {
      if (std::llabs(v->strides[rank - 1]) <= 1) continue;
      for (size_t k = 0; k + 1 < rank; ++k) {
        if (dims[k] > 1 && std::llabs(v->strides[k]) == 1) b = k;
      }
    }
  }
  std::vector<Loop> loops;
  for (size_t k = 0; k < rank; ++k) {
    if (k != b && !(b < rank && k == rank - 1)) loops.push_back({k, dims[k], 1});
  }
  if (b < rank) {
    loops.push_back({b, (dims[b] + kTile - 1) / kTile, kTile});
    loops.push_back({rank - 1, (dims[rank - 1] + kTile - 1) / kTile, kTile});
    loops.push_back({b, kTile, 1});
    loops.push_back({rank - 1, kTile, 1});
  }
  return loops;
}

int64_t locate(const ConcreteView& v, const std::vector<int64_t>& idx) {
  int64_t p = v.offset;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < v.lo[k] || idx[k] >= v.hi[k]) return -1;
    p += v.strides[k] * idx[k];
  }
  return p;
}

bool reduce_axis_outer(const ConcreteView& v, size_t axis) {
  for (size_t k = v.dims.size(); k-- > 0;) {
    if (k == axis || v.dims[k] == 1) continue;
    return std::llabs(v.strides[axis]) > std::llabs(v.strides[k]);
  }
  return false;
}

ConcreteView without_axis(const ConcreteView& v, size_t axis) {
  ConcreteView row;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (k == axis) continue;
    row.dims.push_back(v.dims[k]);
    row.strides.push_back(v.strides[k]);
    row.lo.push_back(v.lo[k]);
    row.hi.push_back(v.hi[k]);
  }
  row.offset = v.offset;
  return row;
}

namespace {
void check_in_bounds(int64_t p, const HostBuffer& src, const char* op) {
  if (p < 0 || p >= src.numel()) {
    throw InternalError(std::string(op) + ": view reads element " + std::to_string(p) +
                        " of a buffer of " + std::to_string(src.numel()));
  }
}
}  // namespace

// The element at physical position p (-1: padding, which reads as zero).
double read_f(const HostBuffer& src, int64_t p) {
  if (p < 0) return 0.0;
  check_in_bounds(p, src, "read");
  return load_f(src.dtype, src.bytes.data(), p);
}

int64_t read_i(const HostBuffer& src, int64_t p) {
  if (p < 0) return 0;
  check_in_bounds(p, src, "read");
  return load_i(src.dtype, src.bytes.data(), p);
}

double read_f(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx) {
  return read_f(src, locate(v, idx));
}

int64_t read_i(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx) {
  return read_i(src, locate(v, idx));
}

}  // namespace luminal::native
