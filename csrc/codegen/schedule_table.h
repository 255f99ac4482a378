// What the renderers' schedule tables (c/schedule.cc, cuda/schedule.cc, metal/schedule.cc)
// share: each is a constant array of rows with a `name`; the GPU ones' rows also name the
// field of their schedule struct they set (null: the lowering's own parameter), how values are
// checked and the largest. These list the names for error messages, read a ScheduleParams into
// a schedule, layer two schedules and check params against a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "ir/graph.h"

namespace luminal {

// "tile_m, tile_n, ..." from a table's rows, in order.
template <typename Row, size_t N>
std::string schedule_names(const Row (&table)[N]) {
  std::string out;
  for (const Row& row : table) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

// How a GPU schedule parameter's values are checked.
enum class ScheduleRange {
  kUpTo,       // 0 (automatic) to max
  kBlock,      // 0, or a multiple of 32 in [32, max]
  kPowerOfTwo  // 0, or a power of two up to max
};

// A row of a GPU schedule table over schedule struct S.
template <typename S>
struct ScheduleParam {
  const char* name;
  int S::*field;
  ScheduleRange range;
  int max;
};

inline bool schedule_value_ok(ScheduleRange range, int max, int64_t value) {
  if (value == 0) return true;
  if (value < 0 || value > max) return false;
  switch (range) {
    case ScheduleRange::kUpTo: return true;
    case ScheduleRange::kBlock: return value >= 32 && value % 32 == 0;
    case ScheduleRange::kPowerOfTwo: return (value & (value - 1)) == 0;
  }
  return false;
}

inline std::string schedule_range_text(ScheduleRange range, int max) {
  const std::string m = std::to_string(max);
  switch (range) {
    case ScheduleRange::kUpTo: return "0 (automatic) to " + m;
    case ScheduleRange::kBlock: return "a multiple of 32 in [32, " + m + "] (0: automatic)";
    case ScheduleRange::kPowerOfTwo: return "a power of two up to " + m + " (0: automatic)";
  }
  return "";
}

template <typename S, size_t N>
const ScheduleParam<S>* find_schedule_param(const ScheduleParam<S> (&table)[N],
                                            const std::string& name) {
  for (const ScheduleParam<S>& p : table) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

// `base` with the entries of `params` the table knows in place of its fields.
template <typename S, size_t N>
S schedule_with(S base, const ScheduleParam<S> (&table)[N], const ScheduleParams& params) {
  for (const auto& [name, value] : params) {
    const ScheduleParam<S>* p = find_schedule_param(table, name);
    if (p && p->field) base.*p->field = static_cast<int>(value);
  }
  return base;
}

// `base` with the fields `top` sets (non-zero) in place of its own.
template <typename S, size_t N>
S schedule_under(S base, const ScheduleParam<S> (&table)[N], const S& top) {
  for (const ScheduleParam<S>& p : table) {
    if (p.field && top.*p.field != 0) base.*p.field = top.*p.field;
  }
  return base;
}

// Throws CompileError ("<backend>: ...", naming `where`) for a name the table lacks or a value
// out of its range.
template <typename S, size_t N>
void check_schedule_params(const ScheduleParam<S> (&table)[N], const ScheduleParams& params,
                           const std::string& where, const std::string& backend) {
  for (const auto& [name, value] : params) {
    const ScheduleParam<S>* known = find_schedule_param(table, name);
    if (!known) {
      throw CompileError(backend + ": unknown schedule parameter '" + name + "' in " + where +
                         " (known: " + schedule_names(table) + ")");
    }
    if (!schedule_value_ok(known->range, known->max, value)) {
      throw CompileError(backend + ": schedule parameter " + name + " = " +
                         std::to_string(value) + " in " + where + " is out of range: " +
                         schedule_range_text(known->range, known->max));
    }
  }
}

}  // namespace luminal
