// CubinCache: FNV-1a keys and atomic file writes (write to a unique temporary, then rename).
#include "runtime/cubin_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

namespace luminal::cuda {

namespace {
uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// mkdir -p; false if the directory cannot be made.
bool make_dirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}
}  // namespace

std::string CubinCache::key(const std::string& source, int nvrtc_major, int nvrtc_minor,
                            const std::string& arch) {
  std::string all = "nvrtc " + std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor) +
                    "\narch " + arch + "\n" + source;
  return hex(fnv1a(all, 14695981039346656037ULL)) + hex(fnv1a(all, 0x9e3779b97f4a7c15ULL));
}

std::optional<std::string> CubinCache::load(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  std::ifstream in(path(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream data;
  data << in.rdbuf();
  std::string bytes = data.str();
  if (bytes.empty()) return std::nullopt;
  return bytes;
}

void CubinCache::store(const std::string& key, const std::string& cubin) const {
  if (dir_.empty() || !make_dirs(dir_)) return;
  std::random_device random;  // distinguishes temporaries of one process's threads
  std::string tmp = path(key) + ".tmp." + std::to_string(getpid()) + "." +
                    hex((static_cast<uint64_t>(random()) << 32) ^ random());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path(key).c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace luminal::cuda
