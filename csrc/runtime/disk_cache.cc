// 128-bit keys, mkdir -p, whole-file reads, atomic writes and seals for the compiled-code
// caches.
#include "runtime/disk_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#ifndef LUMINAL_VERSION
#define LUMINAL_VERSION "unknown"
#endif

namespace luminal {

namespace {
// What a seal says of `bytes` built under `key`; a change of format or version unseals all.
std::string seal_text(const std::string& key, const std::string& bytes) {
  return std::string("luminal cache seal 1\nversion ") + LUMINAL_VERSION + "\nkey " + key +
         "\nbytes " + std::to_string(bytes.size()) + "\ncontent " + hex128(bytes) + "\n";
}
}  // namespace

std::string hex128(const std::string& text) {
  return hex64(fnv1a(text)) + hex64(fnv1a(text, 0x84222325cbf29ce4ULL));
}

bool make_dirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

std::string temp_path(const std::string& path) {
  std::random_device random;
  uint64_t bits = (static_cast<uint64_t>(random()) << 32) ^ random();
  return path + ".tmp." + std::to_string(getpid()) + "." + hex64(bits);
}

bool rename_into_place(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  int saved = errno;
  std::remove(tmp.c_str());
  errno = saved;
  return false;
}

bool write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = temp_path(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      int saved = errno;
      std::remove(tmp.c_str());
      errno = saved;
      return false;
    }
  }
  return rename_into_place(tmp, path);
}

}  // namespace luminal

namespace luminal {

bool write_seal(const std::string& path, const std::string& key) {
  std::optional<std::string> bytes = read_file(path);
  return bytes && write_file_atomic(path + ".seal", seal_text(key, *bytes));
}

std::optional<std::string> read_sealed(const std::string& path, const std::string& key) {
  std::optional<std::string> seal = read_file(path + ".seal");
  if (!seal) return std::nullopt;
  std::optional<std::string> bytes = read_file(path);
  if (!bytes || *seal != seal_text(key, *bytes)) return std::nullopt;
  return bytes;
}

}  // namespace luminal
