// FNV-1a over text and its hex rendering: stable across runs, builds and machines, so it can
// name things that are written down (generated kernel names, on-disk cache keys). Not for
// hash tables (std::hash is faster) and not cryptographic.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace luminal {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;

inline uint64_t fnv1a(const std::string& text, uint64_t seed = kFnvOffset) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// 16 lower-case hex digits.
inline std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace luminal
