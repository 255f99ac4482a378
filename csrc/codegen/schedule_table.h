// What the renderers' schedule tables (c/schedule.cc, cuda/schedule.cc) share: each is a
// constant array of rows with a `name`; this lists the names for error messages.
#pragma once

#include <cstddef>
#include <string>

namespace luminal {

// "tile_m, tile_n, ..." from a table's rows, in order.
template <typename Row, size_t N>
std::string schedule_names(const Row (&table)[N]) {
  std::string out;
  for (const Row& row : table) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

}  // namespace luminal
