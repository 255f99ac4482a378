// Outlining the big helpers of a kernel unit (codegen/c/renderer.h's split): the GEMM
// micro-kernels (lm_mm_*, lm_mmbf_*) and the GEMV row kernels (lm_gemv_*) leave their kernel
// units for units of their own, which the kernels call. Such a helper is a loop over K called
// once per block of rows, so the call costs nothing, while compiling it inside every GEMM and
// GEMV unit was half of each unit's compile (a 1B Llama's program has a dozen such units per
// candidate, each differing only in its sizes). A helper unit is compiled once per cache.
#pragma once

#include <map>
#include <string>

namespace luminal {

// `unit` (a kernel unit's text) with each big helper's definition replaced by its declaration;
// each helper not yet in `helpers` is added there (name -> its unit's text: the lines of
// `unit` before it, the other big helpers declared only, then its definition). One name is
// one definition in a program (the renderer names a helper by all it depends on), so the
// first unit's copy serves every kernel that calls it.
std::string outline_helpers(const std::string& unit, std::map<std::string, std::string>& helpers);

}  // namespace luminal
