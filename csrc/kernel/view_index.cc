// Views as index arithmetic (view_index.h).
#include "kernel/view_index.h"

#include <string>

namespace luminal {

namespace {
// An exact multiple c with a == c * b: an integer, or a non-negative expression over the dims
// (a stride d1 * 64 is d1 rows of 64).
std::optional<Expr> stride_ratio(const Expr& a, const Expr& b) {
  auto ca = a.try_const();
  auto cb = b.try_const();
  if (ca && cb) {
    if (*cb == 0 || *ca % *cb != 0) return std::nullopt;
    return Expr(*ca / *cb);
  }
  if (a == b) return Expr(1);
  if (a == -b) return Expr(-1);
  if (is_zero(b)) return std::nullopt;
  Expr q = a / b;
  if (q * b != a || ge(q, 0).try_const() != std::optional<int64_t>(1)) return std::nullopt;
  return q;
}

bool provably(const Expr& condition) {
  return condition.try_const() == std::optional<int64_t>(1);
}

// A view axis whose index runs past producer axis m, as a reshape that merged axes reads
// them ((b*s, n) over a (b, s, n) producer): it carries into the axes outside m when it is
// the only reader of m (no offset there either) and they have none. The outermost axis of
// the span its index provably stays inside, or nullopt.
std::optional<size_t> carry_span(size_t m, const std::vector<int>& readers,
                                 const std::vector<Expr>& term, const Expr& read,
                                 const Expr& hi, const std::vector<Expr>& shape) {
  if (readers[m] != 1 || term[m] != read) return std::nullopt;
  Expr span = shape[m];
  size_t outer = m;
  while (!provably(lt(hi, span))) {
    if (outer == 0) return std::nullopt;
    --outer;
    if (readers[outer] != 0 || !is_zero(term[outer])) return std::nullopt;
    span = span * shape[outer];
  }
  return outer;
}

}  // namespace

std::vector<Expr> row_major_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> out(shape.size());
  Expr s = 1;
  for (size_t m = shape.size(); m-- > 0;) {
    out[m] = s;
    s = s * shape[m];
  }
  return out;
}

Expr mask_of(const ShapeTracker& v, const std::vector<Expr>& idx) {
  Expr valid = 1;
  for (size_t k = 0; k < v.rank(); ++k) {
    if (!v.axis_masked(k)) continue;
    valid = logical_and(valid, logical_and(ge(idx[k], v.mask_lo[k]), lt(idx[k], v.mask_hi[k])));
  }
  return valid;
}

Expr physical_index(const ShapeTracker& v, const std::vector<Expr>& idx) {
  Expr p = v.offset;
  for (size_t k = 0; k < v.rank(); ++k) p = p + idx[k] * v.strides[k];
  return p;
}

std::vector<Expr> unravel(const Expr& flat, const std::vector<Expr>& shape) {
  std::vector<Expr> rs = row_major_strides(shape);
  std::vector<Expr> out(shape.size());
  for (size_t m = 0; m < shape.size(); ++m) {
    out[m] = m == 0 ? flat / rs[m] : (flat / rs[m]) % shape[m];
  }
  return out;
}

std::optional<std::vector<Expr>> unravel_affine(const Expr& flat, const std::vector<Expr>& shape,
                                                const std::map<std::string, Expr>& extents) {
  const size_t rank = shape.size();
  std::vector<int64_t> dims(rank), strides(rank);
  int64_t span = 1;
  for (size_t k = rank; k-- > 0;) {
    std::optional<int64_t> d = shape[k].try_const();
    if (!d || *d <= 0 || span > (int64_t{1} << 40) / *d) return std::nullopt;
    dims[k] = *d;
    strides[k] = span;
    span *= *d;
  }
  std::vector<Expr> parts(rank, Expr(0));
  std::vector<int64_t> lo(rank, 0), hi(rank, 0);
  Expr rest = flat;
  for (const std::string& var : flat.symbols()) {
    auto extent = extents.find(var);
    std::optional<Expr> c = affine_stride(flat, var);
    if (extent == extents.end() || !c) return std::nullopt;
    std::optional<int64_t> n = extent->second.try_const(), coef = c->try_const();
    if (!n || !coef || *n <= 0 || *coef > (int64_t{1} << 40) || *coef < -(int64_t{1} << 40)) {
      return std::nullopt;
    }
    size_t k = 0;
    while (*coef % strides[k] != 0) ++k;  // the innermost stride, 1, divides every term
    const int64_t step = *coef / strides[k];
    parts[k] = parts[k] + Expr(step) * Expr::symbol(var);
    (step < 0 ? lo[k] : hi[k]) += step * (*n - 1);
    rest = rest - *c * Expr::symbol(var);
  }
  std::optional<int64_t> offset = rest.try_const();
  if (!offset) return std::nullopt;
  int64_t r = *offset;
  for (size_t k = 0; k < rank; ++k) {  // floor digits: the inner ones in [0, dim)
    int64_t digit = r / strides[k];
    if (digit * strides[k] > r) --digit;
    r -= digit * strides[k];
    parts[k] = parts[k] + Expr(digit);
    if (lo[k] + digit < 0 || hi[k] + digit >= dims[k]) return std::nullopt;
  }
  return parts;
}

std::optional<std::vector<Expr>> compose_affine(const ShapeTracker& v,
                                                const std::vector<Expr>& idx,
                                                const std::vector<Expr>& shape) {
  std::vector<Expr> rs = row_major_strides(shape);
  size_t rank = shape.size();
  std::vector<Expr> lo_sum(rank), hi_sum(rank), term(rank);
  // Offset split over producer axes, truncating toward zero from the outermost.
  Expr rest = v.offset;
  for (size_t m = 0; m < rank; ++m) {
    if (is_zero(rest)) break;
    auto r = rest.try_const();
    auto s = rs[m].try_const();
    if (r && s) {
      if (*s == 0) return std::nullopt;
      int64_t q = *r / *s;
      term[m] = q;
      rest = *r - q * *s;
    } else {
      if (is_zero(rs[m])) return std::nullopt;
      Expr q = rest / rs[m];
      term[m] = q;
      rest = rest - q * rs[m];
    }
  }
  if (!is_zero(rest)) return std::nullopt;
  std::vector<int> readers(rank, 0);  // view axes landing on each producer axis
  std::vector<Expr> read(rank);       // the index the last of them adds there
  for (size_t m = 0; m < rank; ++m) {
    lo_sum[m] = term[m];
    hi_sum[m] = term[m];
  }
  for (size_t k = 0; k < v.rank(); ++k) {
    if (is_one(v.dims[k]) || is_zero(v.strides[k])) continue;
    // The outermost producer axis whose stride divides the view's: the smallest multiple,
    // the only one that can stay inside its axis (an inner one would overrun it).
    std::optional<size_t> axis;
    Expr c = 0;
    for (size_t m = 0; m < rank; ++m) {
      if (is_one(shape[m])) continue;
      auto ratio = stride_ratio(v.strides[k], rs[m]);
      if (ratio && !is_zero(*ratio)) {
        axis = m;
        c = *ratio;
        break;
      }
    }
    if (!axis) return std::nullopt;
    bool negative = c.try_const() && *c.try_const() < 0;
    Expr lo = v.axis_masked(k) ? max(v.mask_lo[k], Expr(0)) : Expr(0);
    Expr hi = v.axis_masked(k) ? min(v.mask_hi[k], v.dims[k]) - 1 : v.dims[k] - 1;
    readers[*axis] += 1;
    read[*axis] = idx[k] * c;
    term[*axis] = term[*axis] + idx[k] * c;
    lo_sum[*axis] = lo_sum[*axis] + (negative ? hi : lo) * c;
    hi_sum[*axis] = hi_sum[*axis] + (negative ? lo : hi) * c;
  }
  // Innermost first, so an axis that carries into outer ones finds them still unread.
  for (size_t m = rank; m-- > 0;) {
    if (!provably(ge(lo_sum[m], 0))) return std::nullopt;
    if (provably(lt(hi_sum[m], shape[m]))) continue;
    std::optional<size_t> outer = carry_span(m, readers, term, read[m], hi_sum[m], shape);
    if (!outer) return std::nullopt;
    // The digits of the one index on m in the mixed radix of shape[outer..m].
    Expr inner = 1;
    for (size_t j = m + 1; j-- > *outer;) {
      Expr digit = read[m] / inner;
      term[j] = j == *outer ? digit : digit % shape[j];
      inner = inner * shape[j];
    }
    m = *outer;
  }
  return term;
}

bool is_identity_view(const ShapeTracker& v, const std::vector<Expr>& shape) {
  if (v.rank() != shape.size() || v.has_mask() || !is_zero(v.offset)) return false;
  std::vector<Expr> rs = row_major_strides(shape);
  for (size_t k = 0; k < v.rank(); ++k) {
    if (v.dims[k] != shape[k]) return false;
    if (v.strides[k] != rs[k] && !is_one(shape[k])) return false;
  }
  return true;
}

bool broadcasts(const ShapeTracker& v) {
  for (size_t k = 0; k < v.rank(); ++k) {
    if (!is_zero(v.strides[k]) || is_one(v.dims[k])) continue;
    if (v.axis_masked(k)) {
      Expr width = min(v.mask_hi[k], v.dims[k]) - max(v.mask_lo[k], Expr(0));
      auto w = width.try_const();
      if (w && *w <= 1) continue;
    }
    return true;
  }
  return false;
}

}  // namespace luminal
