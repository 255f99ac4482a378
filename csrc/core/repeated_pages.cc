// RepeatedPages (core/repeated_pages.h): one memfd holding the pattern, mapped MAP_PRIVATE at
// each pattern-sized step of an address range reserved first (so no other mapping lands in
// between).
#include "core/repeated_pages.h"

#include <algorithm>
#include <cstdint>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace luminal {

#ifdef __linux__
std::unique_ptr<RepeatedPages> RepeatedPages::map(const void* pattern, size_t pattern_bytes,
                                                  size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || pattern_bytes == 0 || pattern_bytes % static_cast<size_t>(page) != 0) {
    return nullptr;
  }
  const size_t copies = (std::max<size_t>(bytes, 1) + pattern_bytes - 1) / pattern_bytes;
  if (copies > SIZE_MAX / pattern_bytes) return nullptr;
  const size_t reserved = copies * pattern_bytes;
  const int fd = memfd_create("luminal-repeated-pages", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  const auto* from = static_cast<const uint8_t*>(pattern);
  bool written = ftruncate(fd, static_cast<off_t>(pattern_bytes)) == 0;
  for (size_t done = 0; written && done < pattern_bytes;) {
    const ssize_t n = pwrite(fd, from + done, pattern_bytes - done, static_cast<off_t>(done));
    written = n > 0;
    done += written ? static_cast<size_t>(n) : 0;
  }
  void* base = written ? mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                       : MAP_FAILED;
  bool mapped = base != MAP_FAILED;
  for (size_t i = 0; mapped && i < copies; ++i) {
    void* at = static_cast<uint8_t*>(base) + i * pattern_bytes;
    mapped = mmap(at, pattern_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) ==
             at;
  }
  close(fd);  // the mappings keep the memfd's pages
  if (!mapped) {
    if (base != MAP_FAILED) munmap(base, reserved);
    return nullptr;
  }
  return std::unique_ptr<RepeatedPages>(
      new RepeatedPages(static_cast<uint8_t*>(base), reserved, bytes));
}

RepeatedPages::~RepeatedPages() { munmap(base_, reserved_); }
#else
std::unique_ptr<RepeatedPages> RepeatedPages::map(const void*, size_t, size_t) {
  return nullptr;
}

RepeatedPages::~RepeatedPages() = default;
#endif

}  // namespace luminal
