// View edits on ShapeTracker. The reshape follows numpy's no-copy rule: groups of old axes
// that map onto groups of new axes must be laid out as one contiguous run.
#include "ir/shape_tracker.h"

#include <algorithm>

#include "core/errors.h"

namespace luminal {

std::string dims_to_string(const std::vector<Expr>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += dims[i].to_string();
  }
  if (dims.size() == 1) out += ",";
  return out + ")";
}

ShapeTracker ShapeTracker::contiguous(const std::vector<Expr>& dims) {
  ShapeTracker st;
  st.dims = dims;
  st.strides.resize(dims.size());
  Expr stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    st.strides[i] = stride;
    stride = stride * dims[i];
  }
  st.offset = 0;
  st.mask_lo.assign(dims.size(), Expr(0));
  st.mask_hi = dims;
  return st;
}

bool ShapeTracker::axis_masked(size_t axis) const {
  return !is_zero(mask_lo[axis]) || mask_hi[axis] != dims[axis];
}

bool ShapeTracker::has_mask() const {
  for (size_t k = 0; k < rank(); ++k) {
    if (axis_masked(k)) return true;
  }
  return false;
}

bool ShapeTracker::is_contiguous() const {
  return same_as(contiguous(dims));
}

bool ShapeTracker::same_as(const ShapeTracker& o) const {
  return dims == o.dims && strides == o.strides && offset == o.offset && mask_lo == o.mask_lo &&
         mask_hi == o.mask_hi;
}

int ShapeTracker::checked_axis(int axis, const char* what) const {
  int r = static_cast<int>(rank());
  if (axis < 0 || axis >= r) {
    throw ShapeError(std::string(what) + ": axis " + std::to_string(axis) +
                     " is out of range for shape " + dims_string());
  }
  return axis;
}

ShapeTracker ShapeTracker::permute(const std::vector<int>& axes) const {
  if (axes.size() != rank()) {
    throw ShapeError("permute: got " + std::to_string(axes.size()) + " axes for shape " +
                     dims_string());
  }
  std::vector<bool> seen(rank(), false);
  ShapeTracker out;
  for (int a : axes) {
    checked_axis(a, "permute");
    if (seen[a]) throw ShapeError("permute: axis " + std::to_string(a) + " repeated");
    seen[a] = true;
    out.dims.push_back(dims[a]);
    out.strides.push_back(strides[a]);
    out.mask_lo.push_back(mask_lo[a]);
    out.mask_hi.push_back(mask_hi[a]);
  }
  out.offset = offset;
  return out;
}

ShapeTracker ShapeTracker::insert_axis(int axis, const Expr& size) const {
  if (axis < 0 || axis > static_cast<int>(rank())) {
    throw ShapeError("insert_axis: position " + std::to_string(axis) + " out of range for " +
                     dims_string());
  }
  ShapeTracker out = *this;
  out.dims.insert(out.dims.begin() + axis, size);
  out.strides.insert(out.strides.begin() + axis, Expr(0));
  out.mask_lo.insert(out.mask_lo.begin() + axis, Expr(0));
  out.mask_hi.insert(out.mask_hi.begin() + axis, size);
  return out;
}

ShapeTracker ShapeTracker::expand_axis(int axis, const Expr& size) const {
  checked_axis(axis, "expand");
  if (dims[axis] != Expr(1)) {
    throw ShapeError("expand: axis " + std::to_string(axis) + " of shape " + dims_string() +
                     " has size " + dims[axis].to_string() + ", only size-1 axes broadcast");
  }
  ShapeTracker out = *this;
  out.dims[axis] = size;
  out.strides[axis] = 0;
  // A size-1 axis is all valid or all padding; scaling its range keeps that true.
  out.mask_lo[axis] = mask_lo[axis] * size;
  out.mask_hi[axis] = mask_hi[axis] * size;
  return out;
}

ShapeTracker ShapeTracker::remove_axis(int axis) const {
  checked_axis(axis, "squeeze");
  if (dims[axis] != Expr(1)) {
    throw ShapeError("squeeze: axis " + std::to_string(axis) + " of shape " + dims_string() +
                     " has size " + dims[axis].to_string() + ", not 1");
  }
  if (axis_masked(axis)) {
    throw ShapeError("squeeze: axis " + std::to_string(axis) + " is padding");
  }
  ShapeTracker out = *this;
  out.dims.erase(out.dims.begin() + axis);
  out.strides.erase(out.strides.begin() + axis);
  out.mask_lo.erase(out.mask_lo.begin() + axis);
  out.mask_hi.erase(out.mask_hi.begin() + axis);
  return out;
}

// ceil(a / b) for b > 0 with floor-division expressions.
static Expr ceil_div(const Expr& a, int64_t b) { return -((-a) / Expr(b)); }

ShapeTracker ShapeTracker::slice(int axis, const Expr& start, const Expr& stop,
                                 int64_t step) const {
  checked_axis(axis, "slice");
  if (step <= 0) throw ShapeError("slice: step must be positive, got " + std::to_string(step));
  ShapeTracker out = *this;
  Expr length = max(ceil_div(stop - start, step), Expr(0));
  out.dims[axis] = length;
  out.offset = offset + strides[axis] * start;
  out.strides[axis] = strides[axis] * Expr(step);
  if (!axis_masked(axis)) {
    out.mask_lo[axis] = 0;
    out.mask_hi[axis] = length;
    return out;
  }
  // Old index i = start + step * j is valid where lo <= i < hi.
  out.mask_lo[axis] = max(ceil_div(mask_lo[axis] - start, step), Expr(0));
  out.mask_hi[axis] = min(ceil_div(mask_hi[axis] - start, step), length);
  return out;
}

ShapeTracker ShapeTracker::flip(int axis) const {
  checked_axis(axis, "flip");
  ShapeTracker out = *this;
  Expr n = dims[axis];
  out.offset = offset + strides[axis] * (n - Expr(1));
  out.strides[axis] = -strides[axis];
  // Old index i = n - 1 - j.
  out.mask_lo[axis] = n - mask_hi[axis];
  out.mask_hi[axis] = n - mask_lo[axis];
  return out;
}

ShapeTracker ShapeTracker::pad(int axis, const Expr& before, const Expr& after) const {
  checked_axis(axis, "pad");
  ShapeTracker out = *this;
  out.dims[axis] = dims[axis] + before + after;
  out.offset = offset - strides[axis] * before;
  out.mask_lo[axis] = mask_lo[axis] + before;
  out.mask_hi[axis] = mask_hi[axis] + before;
  return out;
}

namespace {
// True when old axes [begin, end) (size-1 axes already dropped) form one strided run.
bool mergeable(const ShapeTracker& st, const std::vector<size_t>& axes) {
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    size_t a = axes[i];
    size_t b = axes[i + 1];
    if (st.strides[a] != st.strides[b] * st.dims[b]) return false;
  }
  return true;
}

// Decides which of two group products to grow: -1 grow old, 1 grow new, 0 equal, 2 unknown.
int compare_products(const Expr& old_product, const Expr& new_product) {
  if (old_product == new_product) return 0;
  auto o = old_product.try_const();
  auto n = new_product.try_const();
  if (o && n) return *o < *n ? -1 : 1;
  if ((new_product % old_product) == Expr(0)) return -1;
  if ((old_product % new_product) == Expr(0)) return 1;
  return 2;
}
}  // namespace

std::optional<ShapeTracker> ShapeTracker::reshape(const std::vector<Expr>& new_dims) const {
  if (product(new_dims) != numel()) {
    auto a = product(new_dims).try_const();
    auto b = numel().try_const();
    if (a && b) {
      throw ShapeError("reshape: cannot view shape " + dims_string() + " (" +
                       std::to_string(*b) + " elements) as " + dims_to_string(new_dims) +
                       " (" + std::to_string(*a) + " elements)");
    }
    throw ShapeError("reshape: cannot prove " + dims_string() + " and " +
                     dims_to_string(new_dims) + " hold the same number of elements");
  }
  if (!has_mask() && is_contiguous()) return contiguous(new_dims);
  if (!has_mask() && offset == Expr(0) && dims == new_dims) return *this;
  // Old axes of size 1 carry no layout; drop them unless they are padding.
  std::vector<size_t> old_axes;
  for (size_t k = 0; k < rank(); ++k) {
    if (dims[k] == Expr(1)) {
      if (axis_masked(k)) return std::nullopt;
      continue;
    }
    old_axes.push_back(k);
  }
  ShapeTracker out;
  out.offset = offset;
  out.dims = new_dims;
  out.strides.assign(new_dims.size(), Expr(0));
  out.mask_lo.assign(new_dims.size(), Expr(0));
  out.mask_hi = new_dims;
  size_t i = 0;  // into old_axes
  size_t j = 0;  // into new_dims
  while (j < new_dims.size() && new_dims[j] == Expr(1)) ++j;
  while (i < old_axes.size() && j < new_dims.size()) {
    std::vector<size_t> old_group = {old_axes[i++]};
    std::vector<size_t> new_group = {j++};
    Expr old_product = dims[old_group[0]];
    Expr new_product = new_dims[new_group[0]];
    for (;;) {
      int cmp = compare_products(old_product, new_product);
      if (cmp == 0) break;
      if (cmp == 2) return std::nullopt;
      if (cmp < 0) {
        if (i == old_axes.size()) return std::nullopt;
        old_group.push_back(old_axes[i]);
        old_product = old_product * dims[old_axes[i++]];
      } else {
        if (j == new_dims.size()) return std::nullopt;
        new_group.push_back(j);
        new_product = new_product * new_dims[j++];
      }
    }
    bool passthrough = old_group.size() == 1 && new_group.size() == 1;
    if (!passthrough) {
      for (size_t a : old_group) {
        if (axis_masked(a)) return std::nullopt;
      }
      if (!mergeable(*this, old_group)) return std::nullopt;
    }
    Expr stride = strides[old_group.back()];
    for (size_t g = new_group.size(); g-- > 0;) {
      size_t axis = new_group[g];
      out.strides[axis] = stride;
      stride = stride * new_dims[axis];
    }
    if (passthrough) {
      out.mask_lo[new_group[0]] = mask_lo[old_group[0]];
      out.mask_hi[new_group[0]] = mask_hi[old_group[0]];
    }
    while (j < new_dims.size() && new_dims[j] == Expr(1)) ++j;
  }
  if (i != old_axes.size() || j != new_dims.size()) return std::nullopt;
  return out;
}

std::string ShapeTracker::dims_string() const { return dims_to_string(dims); }

std::string ShapeTracker::to_string() const {
  std::string out = "(view " + dims_string() + " strides=" + dims_to_string(strides);
  if (offset != Expr(0)) out += " offset=" + offset.to_string();
  if (has_mask()) {
    out += " mask=(";
    for (size_t k = 0; k < rank(); ++k) {
      if (k) out += ", ";
      out += mask_lo[k].to_string() + ".." + mask_hi[k].to_string();
    }
    out += ")";
  }
  return out + ")";
}

}  // namespace luminal
