// CubinCache: FNV-1a keys, atomic file writes and seals, all from runtime/disk_cache.h.
#include "runtime/cuda/cubin_cache.h"

#include "runtime/disk_cache.h"

namespace luminal::cuda {

std::string CubinCache::key(const std::string& source, int nvrtc_major, int nvrtc_minor,
                            const std::string& arch) {
  std::string all = "nvrtc " + std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor) +
                    "\narch " + arch + "\n" + source;
  return hex64(fnv1a(all, 14695981039346656037ULL)) + hex64(fnv1a(all, 0x9e3779b97f4a7c15ULL));
}

std::optional<std::string> CubinCache::load(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  std::optional<std::string> bytes = read_sealed(path(key), key);
  if (!bytes || bytes->empty()) return std::nullopt;
  return bytes;
}

void CubinCache::store(const std::string& key, const std::string& cubin) const {
  if (dir_.empty() || !make_dirs(dir_)) return;
  // Best effort: a failed write leaves no entry, a failed seal one that is not trusted.
  if (write_file_atomic(path(key), cubin)) write_seal(path(key), key);
}

}  // namespace luminal::cuda
