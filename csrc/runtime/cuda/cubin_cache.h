// The on-disk CUBIN cache of the CUDA runtime: one file per compiled translation unit, named
// by a hash of its source, the NVRTC version and the target architecture. Writes are atomic
// (a unique temporary file renamed into place), so concurrent processes never see half a file.
#pragma once

#include <optional>
#include <string>

namespace luminal::cuda {

class CubinCache {
 public:
  // `dir` = "" disables the cache; the directory is created on first store.
  explicit CubinCache(std::string dir) : dir_(std::move(dir)) {}

  // A stable 128-bit hex key of everything that determines the CUBIN.
  static std::string key(const std::string& source, int nvrtc_major, int nvrtc_minor,
                         const std::string& arch);
  std::optional<std::string> load(const std::string& key) const;
  // Best effort: a failure to write leaves the cache without the entry, never throws.
  void store(const std::string& key, const std::string& cubin) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string path(const std::string& key) const { return dir_ + "/" + key + ".cubin"; }
  std::string dir_;
};

}  // namespace luminal::cuda
