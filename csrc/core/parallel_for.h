// parallel_for: [0, n) split into `threads` contiguous ranges, each run by fn(begin, end) on a
// thread of its own (the calling thread takes the first). For one-off work outside the
// generated kernels (laying a weight out once when its data is set), where OpenMP is not
// linked. fn must not throw; a range no thread could be started for runs on the caller's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace luminal {

template <typename F>
void parallel_for(int64_t n, int threads, const F& fn) {
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::vector<std::thread> others;
  for (int64_t t = 1; t < parts; ++t) {
    try {
      others.emplace_back(fn, n * t / parts, n * (t + 1) / parts);
    } catch (...) {  // no thread to be had: this one runs the range
      fn(n * t / parts, n * (t + 1) / parts);
    }
  }
  fn(int64_t{0}, n / parts);
  for (std::thread& t : others) t.join();
}

}  // namespace luminal
