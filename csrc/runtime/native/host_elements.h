// The reference interpreter's elements: views with their expressions evaluated, reads and
// stores of one element of a HostBuffer in any dtype (floats as double, Int and Bool as int64),
// and the walk over an index space that every op's evaluation (native/eval_node.cc) runs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/sizes.h"
#include "runtime/runtime.h"

namespace luminal::native {

// A view with every expression evaluated.
struct ConcreteView {
  std::vector<int64_t> dims, strides, lo, hi;
  int64_t offset = 0;
};

ConcreteView evaluate(const ShapeTracker& st, const DynMap& env);
// Dims evaluated; a negative one is a ShapeError.
std::vector<int64_t> evaluate(const std::vector<Expr>& dims, const DynMap& env);

// Element i of `bytes` in `dtype`'s storage: as a float (quantized blocks dequantized), or as
// an integer (a float converted by float_to_int).
double load_f(DType dtype, const uint8_t* bytes, int64_t i);
int64_t load_i(DType dtype, const uint8_t* bytes, int64_t i);
// `v` as a store of it into `dtype` keeps it (store_f, store_i; store_any's rounding): floats
// rounded through f32 to the dtype, Int wrapped to 32 bits, Bool 0 or 1. Its integers must
// already be whole (binary_int's, round_to_dtype's).
double stored_value(DType dtype, double v);

// Stores of element i: a float (rounded to the buffer's dtype), an integer, or either by the
// buffer's dtype.
void store_f(HostBuffer& b, int64_t i, double v);
void store_i(HostBuffer& b, int64_t i, int64_t v);
void store_any(HostBuffer& b, int64_t i, double v);

// A zeroed buffer of `shape`, its size checked (core/sizes.h) in the name `what` gives.
HostBuffer make_buffer(DType dtype, std::vector<int64_t> shape, const DescribeTensor& what);

// Whether any index of `v` falls in padding (a mask narrower than the dims).
bool has_mask(const ConcreteView& v);
// Physical element of a logical index, or -1 when the index falls in padding.
int64_t locate(const ConcreteView& v, const std::vector<int64_t>& idx);
// Whether a reduction over `axis` of `v` reads memory in order with the axis outermost: its
// stride is larger than that of the innermost kept dim (of more than one element).
bool reduce_axis_outer(const ConcreteView& v, size_t axis);
// `v` without dim `axis` (the view of one slice along it, before its offset is moved).
ConcreteView without_axis(const ConcreteView& v, size_t axis);

// The element at physical position p (-1: padding, which reads as zero), or at logical index
// idx of view v.
double read_f(const HostBuffer& src, int64_t p);
int64_t read_i(const HostBuffer& src, int64_t p);
double read_f(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx);
int64_t read_i(const HostBuffer& src, const ConcreteView& v, const std::vector<int64_t>& idx);

// One loop of a walk over an index space: `size` steps of `step` along dim `dim`.
struct Loop {
  size_t dim;
  int64_t size, step;
};

// The loops of a walk over `dims` (for_each_index's order).
std::vector<Loop> walk(const std::vector<int64_t>& dims,
                       const std::vector<const ConcreteView*>& views);

// Walks every logical index of `dims` once (walk's order), calling f(flat, index, at): flat
// is the index's row-major position, at[k] the physical element of views[k] (each of rank
// dims.size()) there, or -1 in its padding. Unmasked views' elements advance by their
// strides as the index does; masked ones are located afresh.
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, const std::vector<const ConcreteView*>& views,
                    F f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  size_t rank = dims.size();
  std::vector<int64_t> row_major(rank, 1);
  for (size_t k = rank; k-- > 1;) row_major[k - 1] = row_major[k] * dims[k];
  std::vector<int64_t> idx(rank, 0), at(views.size()), base(views.size());
  std::vector<char> masked(views.size());
  for (size_t v = 0; v < views.size(); ++v) {
    if (views[v]->dims.size() != rank) throw InternalError("a view's rank is not its node's");
    masked[v] = has_mask(*views[v]);
    base[v] = views[v]->offset;
  }
  std::vector<Loop> loops = walk(dims, views);
  bool tiled = loops.size() > rank;
  std::vector<int64_t> count(loops.size(), 0);
  int64_t flat = 0;
  while (true) {
    bool inside = !tiled || (idx[loops.back().dim] < dims[loops.back().dim] &&
                             idx[loops[loops.size() - 2].dim] < dims[loops[loops.size() - 2].dim]);
    if (inside) {
      for (size_t v = 0; v < views.size(); ++v) at[v] = masked[v] ? locate(*views[v], idx) : base[v];
      f(flat, idx, at);
    }
    size_t j = loops.size();
    while (j-- > 0) {
      const Loop& l = loops[j];
      if (++count[j] < l.size) {
        idx[l.dim] += l.step;
        flat += row_major[l.dim] * l.step;
        for (size_t v = 0; v < views.size(); ++v) base[v] += views[v]->strides[l.dim] * l.step;
        break;
      }
      int64_t back = (l.size - 1) * l.step;
      count[j] = 0;
      idx[l.dim] -= back;
      flat -= row_major[l.dim] * back;
      for (size_t v = 0; v < views.size(); ++v) base[v] -= views[v]->strides[l.dim] * back;
    }
    if (j == static_cast<size_t>(-1)) return;
  }
}

}  // namespace luminal::native
