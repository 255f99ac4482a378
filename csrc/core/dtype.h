// Element types and their storage: f32, f16, bf16 (16-bit storage, computed in f32), i32
// ("Int") and bool (one byte). Promotion between dtypes is the frontend's job (PyTorch rules,
// python/luminal/dtype.py); the IR requires operands of one dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace luminal {

enum class DType : uint8_t { F32, F16, BF16, Int, Bool };

const char* dtype_name(DType dtype);     // "f32", "f16", "bf16", "int", "bool"
DType dtype_from_name(const std::string& name);  // throws DTypeError for unknown names
size_t dtype_size(DType dtype);          // bytes per element
bool is_float(DType dtype);              // f32, f16, bf16
bool is_half(DType dtype);               // f16, bf16: 16-bit storage widened to f32

// Conversions between f32 and the 16-bit float formats (round to nearest even).
uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);

}  // namespace luminal
