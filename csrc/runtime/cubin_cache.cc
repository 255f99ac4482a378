// CubinCache: FNV-1a keys (runtime/disk_cache.h) and atomic file writes (write to a unique
// temporary, then rename).
#include "runtime/cubin_cache.h"
#include "runtime/disk_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

namespace luminal::cuda {


std::string CubinCache::key(const std::string& source, int nvrtc_major, int nvrtc_minor,
                            const std::string& arch) {
  std::string all = "nvrtc " + std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor) +
                    "\narch " + arch + "\n" + source;
  return hex64(fnv1a(all, 14695981039346656037ULL)) + hex64(fnv1a(all, 0x9e3779b97f4a7c15ULL));
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
                    hex64((static_cast<uint64_t>(random()) << 32) ^ random());
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
