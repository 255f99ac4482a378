// Memory whose bytes repeat one pattern of whole pages: the pattern's pages mapped again and
// again side by side in one range of addresses (Linux: a memfd mapped copy-on-write at each
// place). An array of gigabytes then costs the pattern's memory and its page tables instead of
// a first touch of every page (about 1 s per 525 MB on the 2-core VMs: most of the search's
// check inputs for a 1B model, whose weights repeat a pool of random values anyway). A write
// lands in a private copy of the page written, so the memory behaves as an ordinary array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace luminal {

class RepeatedPages {
 public:
  // `bytes` bytes repeating the `pattern_bytes` at `pattern` from its first byte; nullptr
  // where this system cannot (not Linux, a pattern not whole pages, a mapping refused): the
  // caller copies instead.
  static std::unique_ptr<RepeatedPages> map(const void* pattern, size_t pattern_bytes,
                                            size_t bytes);
  ~RepeatedPages();
  RepeatedPages(const RepeatedPages&) = delete;
  RepeatedPages& operator=(const RepeatedPages&) = delete;

  uint8_t* data() const { return base_; }
  size_t bytes() const { return bytes_; }

 private:
  RepeatedPages(uint8_t* base, size_t reserved, size_t bytes)
      : base_(base), reserved_(reserved), bytes_(bytes) {}
  uint8_t* base_;
  size_t reserved_;  // whole patterns mapped, >= bytes_
  size_t bytes_;
};

}  // namespace luminal
