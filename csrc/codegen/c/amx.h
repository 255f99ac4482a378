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

// The function `name` that configures the calling thread's tiles (after lm_amx_grant): tiles
// 0-3 C (top left, top right, bottom left, bottom right), 16 rows of 64 bytes; 4-5 A (top,
// bottom), 16 rows of `a_bytes`; 6-7 B (left, right), `b_rows` rows of 64 bytes.
std::string amx_switch(const std::string& name, int64_t a_bytes, int64_t b_rows);

// Once per program unit: the tile configuration's struct (lm_tile_config), lm_amx_grant()
// (asks Linux once a process for the tile data, through arch_prctl) and lm_amx_off()
// (tilerelease, at the end of each thread's GEMM).
std::string amx_tile_prelude(std::set<std::string>& seen);

}  // namespace luminal
