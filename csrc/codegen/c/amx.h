// What the C renderer's AMX kernels share (the bf16 GEMM, c/amx.cc; the int8 GEMM,
// c/quant_int8_amx.cc): the tile instructions as inline assembly (no intrinsics header, no
// target flags: tile registers are named, so each use is its own statement, and each touches
// memory the C code around it writes or reads) and the tile state's switches.
#pragma once

#include <set>
#include <string>

namespace luminal {

// tileloadd / tilestored of tile `tile` at `at` (a C pointer), rows `stride` bytes apart;
// tilezero.
std::string tile_load(int tile, const std::string& at, const std::string& stride);
std::string tile_store(int tile, const std::string& at, const std::string& stride);
std::string tile_zero(int tile);
// Tile c += a * b by `op` ("tdpbf16ps", "tdpbusd"): Intel's operand order reversed (AT&T).
std::string tile_dot(const std::string& op, int c, int a, int b);

// Once per program unit: the tile configuration's struct (lm_tile_config), lm_amx_grant()
// (asks Linux once a process for the tile data, through arch_prctl) and lm_amx_off()
// (tilerelease, at the end of each thread's GEMM).
std::string amx_tile_prelude(std::set<std::string>& seen);

}  // namespace luminal
