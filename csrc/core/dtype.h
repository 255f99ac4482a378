// Element types and their storage: f32, f16, bf16 (16-bit storage, computed in f32), i32
// ("Int") and bool (one byte), and GGUF's quantized blocks (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: parameter
// storage only, read through a Cast to a float; layouts in core/quant.h). Promotion between
// dtypes is the frontend's job (PyTorch rules, python/luminal/dtype.py); the IR requires
// operands of one dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace luminal {

enum class DType : uint8_t {
#define LUMINAL_DTYPE(name, ...) name,
#include "core/dtypes.def"
#undef LUMINAL_DTYPE
};

const char* dtype_name(DType dtype);  // "f32", "f16", "bf16", "int", "bool", "q8_0", "q4_k", ...
DType dtype_from_name(const std::string& name);  // throws DTypeError for unknown names
size_t dtype_size(DType dtype);          // bytes per element; DTypeError for a block dtype
bool is_float(DType dtype);              // f32, f16, bf16
bool is_half(DType dtype);               // f16, bf16: 16-bit storage widened to f32
bool is_quantized(DType dtype);          // q8_0, q4_0, q4_k, q5_k, q6_k: blocks of values
bool is_narrow_storage(DType dtype);     // f16, bf16 or quantized: a Cast to f32 widens it

// Storage is counted in blocks: a block of block_values(d) elements takes block_bytes(d)
// bytes (1 and dtype_size(d) for the plain dtypes). The one place byte sizes are computed.
int64_t block_values(DType dtype);
int64_t block_bytes(DType dtype);
// Bytes of `count` elements; ShapeError when count is negative or splits a block, or the size
// overflows int64.
int64_t storage_bytes(DType dtype, int64_t count);
// Elements held by `items` items of `itemsize` bytes, as set_data receives data: one element
// an item of dtype_size bytes, or for a block dtype raw bytes (itemsize 1) in whole blocks.
// DTypeError otherwise.
int64_t elements_in(DType dtype, size_t itemsize, int64_t items);

// Conversions between f32 and the 16-bit float formats (round to nearest even).
uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);

}  // namespace luminal
