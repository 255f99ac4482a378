// ShapeTracker: how a consumer reads a producer's buffer. Logical dims, element strides into
// the buffer (0 = broadcast), an element offset, and per-dim validity ranges (padding: an
// index outside [mask_lo, mask_hi) reads as zero). Movement ops are edits of this view; a
// reshape the view cannot express returns nullopt and the graph materializes a copy instead.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/symbolic.h"

namespace luminal {

struct ShapeTracker {
  std::vector<Expr> dims;     // logical size of each axis
  std::vector<Expr> strides;  // element stride of each axis in the source buffer
  Expr offset;                // buffer element of logical index (0, ..., 0); may be < 0 if padded
  std::vector<Expr> mask_lo;  // axis k is valid where mask_lo[k] <= i_k < mask_hi[k]
  std::vector<Expr> mask_hi;

  // A row-major view of a buffer holding exactly `dims`.
  static ShapeTracker contiguous(const std::vector<Expr>& dims);

  size_t rank() const { return dims.size(); }
  Expr numel() const { return product(dims); }
  bool has_mask() const;                // some axis has a non-trivial valid range
  bool axis_masked(size_t axis) const;  // axis has a non-trivial valid range
  bool is_contiguous() const;           // reads its buffer row-major from 0, no mask
  bool same_as(const ShapeTracker& other) const;

  // Each returns a new view; arguments are checked and raise ShapeError.
  ShapeTracker permute(const std::vector<int>& axes) const;
  ShapeTracker insert_axis(int axis, const Expr& size) const;  // new broadcast axis
  ShapeTracker expand_axis(int axis, const Expr& size) const;  // broadcast a size-1 axis
  ShapeTracker remove_axis(int axis) const;                    // drop a size-1 axis
  // Elements start, start+step, ... below stop (start/stop already clamped, step > 0).
  ShapeTracker slice(int axis, const Expr& start, const Expr& stop, int64_t step) const;
  ShapeTracker flip(int axis) const;
  ShapeTracker pad(int axis, const Expr& before, const Expr& after) const;  // zeros, >= 0
  std::optional<ShapeTracker> reshape(const std::vector<Expr>& new_dims) const;

  std::string to_string() const;  // "(view dims=(s, 4) strides=(4, 1) offset=0 mask=...)"
  std::string dims_string() const;  // "(s, 4)"

 private:
  int checked_axis(int axis, const char* what) const;
};

std::string dims_to_string(const std::vector<Expr>& dims);

}  // namespace luminal
