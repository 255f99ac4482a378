// Small pieces shared by the on-disk caches of compiled code (cpu_compiler, cubin_cache):
// FNV-1a hashing of key text, hex rendering of a hash, and mkdir -p. Not a cache itself.
#pragma once

#include <cstdint>
#include <string>

namespace luminal {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;

uint64_t fnv1a(const std::string& text, uint64_t seed = kFnvOffset);
std::string hex64(uint64_t value);  // 16 lower-case hex digits
// Creates `dir` and its parents; false (errno set) if one cannot be made.
bool make_dirs(const std::string& dir);

}  // namespace luminal
