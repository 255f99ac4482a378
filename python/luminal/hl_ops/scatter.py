"""Writes by index: scatter, scatter_add, scatter_reduce (torch.gather's inverse along one dim),
index_reduce, index_put and its forms (index_add, index_copy, index_fill, put, masked_scatter,
slice_scatter, select_scatter, diagonal_scatter). Each compares the written positions with
an Iota (a one-hot of indices x positions) and reduces the values sent to each position, so
the work is (indices) x (positions of the indexed dims) comparisons. Where several indices
write one position without accumulating, the last one wins (torch leaves it undefined).
Not here: reads by index (indexing.py)."""

from __future__ import annotations

import math

from .._core import Expr
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from .indexing import check_index, contiguous_strides, gather_axes, wrap_negative
from .shape_utils import broadcast_shapes, const, product
from .tensor_utils import is_tensor, where

# scatter_reduce's reductions: (GraphTensor method over the sent values, identity filler)
_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, dtype):
    """The value a position not written contributes to ``reduce``."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.is_float(dtype):
        return -math.inf if reduce == "amax" else math.inf
    if dtype == dt.bool_:
        return reduce == "amin"
    return -(2 ** 31) if reduce == "amax" else 2 ** 31 - 1


def _inverse(perm: list) -> list:
    back = [0] * len(perm)
    for i, p in enumerate(perm):
        back[p] = i
    return back


class ScatterOps:
    # ---- scatter along one dim --------------------------------------------------------------
    def _write_source(self, src, op: str, what: str = "src"):
        """``src`` as a tensor of self's dtype (a number becomes a constant)."""
        if is_tensor(src):
            self.graph._check_owns(src)
            if src.dtype != self.dtype:
                raise DTypeError(f"{op}: {what} dtype {dt.name(src.dtype)} differs from self "
                                 f"dtype {dt.name(self.dtype)} (self shape {self.shape})")
            return src
        if isinstance(src, (bool, int, float)):
            return self.graph.constant(src, self.dtype)
        raise DTypeError(f"{op}: {what} must be a tensor or a number, got {src!r}")

    def _scatter_reduced(self, dim: int, index, src, op: str, reduce: str = "sum"):
        """(the values sent to each position of ``self`` reduced by ``reduce``, how many were
        sent); positions nothing was sent to hold an arbitrary value."""
        index = check_index(self, index, op)
        axis = self._axis(dim, op)
        if index.ndim != self.ndim:
            raise ShapeError(f"{op}: index of shape {index.shape} must have as many dims as "
                             f"self of shape {self.shape}")
        g = self.graph
        src = self._write_source(src, op)
        if src.ndim and src.ndim != self.ndim:
            raise ShapeError(f"{op}: src of shape {src.shape} must have as many dims as "
                             f"self of shape {self.shape}")
        idims = list(index.st.dims)
        for e in range(self.ndim):
            i, s = const(idims[e]), const(self.st.dims[e])
            if i is not None and s is not None and e != axis and i > s:
                raise ShapeError(f"{op}: index shape {index.shape} is larger than self shape "
                                 f"{self.shape} in dim {e}")
            if src.ndim and i is not None and const(src.st.dims[e]) is not None and \
                    i > const(src.st.dims[e]):
                raise ShapeError(f"{op}: index shape {index.shape} is larger than src shape "
                                 f"{src.shape} in dim {e}")
        if src.ndim:
            view = src.st
            for e in range(self.ndim):
                view = view.slice(e, Expr(0), idims[e], 1)
            src = src._with_view(view)
        n = self.st.dims[axis]
        targets = g.iota(Expr("z"), n).reshape([Expr(1)] * self.ndim + [n])
        onehot = index.unsqueeze(-1) == targets  # index dims + (n,)
        filler = g.constant(_identity(reduce, src.dtype), src.dtype)
        values = where(onehot, src.expand(idims).unsqueeze(-1), filler)
        pad = []
        for e in reversed(range(self.ndim)):
            pad += [0, 0] if e == axis else [0, self.st.dims[e] - idims[e]]
        method = "sum" if reduce == "mean" else reduce
        sent = getattr(values, method)(axis).movedim(-1, axis).pad_zeros(pad)
        count = onehot.sum(axis).movedim(-1, axis).pad_zeros(pad)
        return sent, count

    def scatter(self, dim: int, index, src=None, value=None):
        if (src is None) == (value is None):
            raise ShapeError(f"scatter: pass exactly one of src and value (self shape "
                             f"{self.shape})")
        sent, count = self._scatter_reduced(dim, index, src if value is None else value,
                                            "scatter")
        return where(count > 0, sent, self)

    def scatter_add(self, dim: int, index, src):
        sent, _ = self._scatter_reduced(dim, index, src, "scatter_add")
        return self + sent

    def scatter_reduce(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        """torch.scatter_reduce: the values ``src`` sends to each position reduced by
        ``reduce`` (sum, prod, mean, amax, amin), with self's value too if include_self;
        positions nothing is sent to keep self's value. An int mean rounds down, as torch."""
        if reduce not in _REDUCTIONS:
            raise ShapeError(f"scatter_reduce: reduce must be one of {list(_REDUCTIONS)}, got "
                             f"{reduce!r} (self shape {self.shape})")
        sent, count = self._scatter_reduced(dim, index, src, "scatter_reduce", reduce)
        hit = count > 0
        if reduce == "mean":
            total = sent + self if include_self else sent
            n = (count + 1 if include_self else count).to(self.dtype)
            mean = total / n if dt.is_float(self.dtype) else total.floor_divide(n)
            return where(hit, mean, self)
        if include_self:
            if reduce == "sum":
                return self + sent
            if reduce == "prod":
                return self * sent
            sent = sent.maximum(self) if reduce == "amax" else sent.minimum(self)
        return where(hit, sent, self)

    # ---- index_put and its forms ------------------------------------------------------------
    def index_put(self, indices, values, accumulate: bool = False):
        """torch.index_put: ``self[indices] = values`` (``+=`` with accumulate) out of place.
        ``indices``: a tuple of int tensors (or None for a whole dim), with torch's
        advanced-indexing rules; or one bool mask, whose values must broadcast."""
        op = "index_put"
        indices = list(indices) if isinstance(indices, (tuple, list)) else [indices]
        if len(indices) > self.ndim:
            raise ShapeError(f"{op}: {len(indices)} indices for self of shape {self.shape}")
        values = self._write_source(values, op, "values")
        masks = [i for i in indices if is_tensor(i) and i.dtype == dt.bool_]
        if masks:
            return self._masked_put(indices, values, accumulate)
        axes = [a for a, i in enumerate(indices) if i is not None]
        if not axes:
            raise ShapeError(f"{op}: at least one index tensor is needed (self shape "
                             f"{self.shape})")
        g = self.graph
        dims = list(self.st.dims)
        index = [wrap_negative(check_index(self, indices[a], op), dims[a]) for a in axes]
        rest = [a for a in range(self.ndim) if a not in axes]
        block, rest_dims = [dims[a] for a in axes], [dims[a] for a in rest]
        shape = broadcast_shapes([i.st.dims for i in index], op, [i.shape for i in index])
        flat = None  # (shape): each index's flat position in the indexed block
        for i, stride in zip(index, contiguous_strides(block)):
            term = (i * g.constant(stride, dt.int32)).expand(shape)
            flat = term if flat is None else flat + term
        nb, k, r = product(shape), product(block), product(rest_dims)
        # torch's self[indices]: the index dims replace adjacent indexed axes in place, else
        # they come first; values broadcast to it, then go to (indices, rest) order
        adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
        p = axes[0] if adjacent else 0
        target = rest_dims[:p] + shape + rest_dims[p:]
        if values.ndim > len(target):
            raise ShapeError(f"{op}: values of shape {values.shape} do not broadcast to the "
                             f"indexed shape {[str(d) for d in target]} (self {self.shape})")
        broadcast_shapes([values.st.dims, target], op, [values.shape, target])
        v = values.expand(target)
        nd = len(shape)
        v = v.permute(list(range(p, p + nd)) + list(range(p)) +
                      list(range(p + nd, len(target)))).reshape(nb, r)
        x = self.permute(axes + rest).reshape(k, r)
        onehot = flat.reshape(nb, 1) == g.iota(Expr("z"), k).reshape(1, k)  # (nb, k)
        if accumulate:
            zero = g.constant(_identity("sum", v.dtype), v.dtype)
            sent = where(onehot.unsqueeze(-1), v.unsqueeze(1), zero)  # (nb, k, r)
            out = x | sent.any(0) if x.dtype == dt.bool_ else x + sent.sum(0)
        else:
            order = g.iota(Expr("z") + 1, nb).reshape(nb, 1)
            writer = where(onehot, order, 0).amax(0)  # (k,): 1 + the last index writing k
            chosen = gather_axes(v, [0], [(writer - 1).clamp(min=0)])  # (k, r)
            out = where((writer > 0).unsqueeze(-1), chosen, x)
        return out.reshape(block + rest_dims).permute(_inverse(axes + rest))

    def _masked_put(self, indices, values, accumulate: bool):
        """``self[..., mask] = values`` for one bool mask whose values broadcast (a count of
        values would depend on the mask)."""
        op = "index_put"
        where_mask = [a for a, i in enumerate(indices) if i is not None]
        mask = indices[where_mask[0]]
        if len(where_mask) != 1 or any(i is not None for i in indices[:where_mask[0]]):
            raise ShapeError(f"{op}: a bool mask must be the only index (self shape "
                             f"{self.shape})")
        p, m = where_mask[0], mask.ndim
        self.graph._check_owns(mask)
        post = list(self.st.dims[p + m:])
        counted = len(post) + 1  # values' dims from the right: (count, post...)
        if values.ndim >= counted and const(values.st.dims[-counted]) != 1:
            raise ShapeError(f"{op}: values of shape {values.shape} for a bool mask of shape "
                             f"{mask.shape} must broadcast (their count would depend on the "
                             f"mask)")
        if values.ndim >= counted:
            values = values.squeeze(values.ndim - counted)
        full = mask.reshape([Expr(1)] * p + list(mask.st.dims) + [Expr(1)] * len(post))
        v = values.reshape([Expr(1)] * (p + m + len(post) - values.ndim) + list(values.st.dims))
        if accumulate:
            zero = self.graph.constant(0, self.dtype)
            return self | (full & v) if self.dtype == dt.bool_ else self + where(full, v, zero)
        return where(full.expand(list(self.st.dims)), v.expand(list(self.st.dims)), self)

    def _index_at(self, dim: int, index, op: str) -> list:
        axis = self._axis(dim, op)
        index = check_index(self, index, op)
        if index.ndim > 1:
            raise ShapeError(f"{op}: index must be 1-D, got shape {index.shape}")
        return [None] * axis + [index.reshape(-1)]

    def index_add(self, dim: int, index, source, *, alpha=1):
        source = self._write_source(source, "index_add", "source")
        return self.index_put(self._index_at(dim, index, "index_add"),
                              source if alpha == 1 else source * alpha, accumulate=True)

    def index_copy(self, dim: int, index, source):
        return self.index_put(self._index_at(dim, index, "index_copy"), source)

    def index_fill(self, dim: int, index, value):
        return self.index_put(self._index_at(dim, index, "index_fill"), value)

    def index_reduce(self, dim: int, index, source, reduce: str, *, include_self: bool = True):
        """torch.index_reduce: slice i of ``source`` along ``dim`` reduced into slice
        index[i] of self (prod, mean, amax, amin), as scatter_reduce with the index spread
        over the slices."""
        source = self._write_source(source, "index_reduce", "source")
        if self.ndim == 0:  # torch: a scalar as a 1-element vector
            return self.reshape(1).index_reduce(dim, index, source.reshape(1), reduce,
                                                include_self=include_self).reshape([])
        axis = self._axis(dim, "index_reduce")
        index = self._index_at(dim, index, "index_reduce")[-1]
        if source.ndim != self.ndim:
            raise ShapeError(f"index_reduce: source of shape {source.shape} must have as many "
                             f"dims as self of shape {self.shape}")
        shape = [1] * self.ndim
        shape[axis] = index.st.dims[0]
        spread = index.reshape(shape).expand(list(source.st.dims))
        return self.scatter_reduce(axis, spread, source, reduce, include_self=include_self)

    def put(self, index, source, accumulate: bool = False):
        """torch.put: ``self`` as if flat, written at ``index`` by ``source``."""
        index = check_index(self, index, "put")
        source = self._write_source(source, "put", "source")
        flat = self.reshape(-1).index_put([index.reshape(-1)], source.reshape(-1), accumulate)
        return flat.reshape(list(self.st.dims))

    def masked_scatter(self, mask, source):
        """torch.masked_scatter: the positions where ``mask`` (broadcast to self) is True take
        ``source``'s elements in order."""
        if not is_tensor(mask) or mask.dtype != dt.bool_:
            raise DTypeError(f"masked_scatter: mask must be a bool tensor (self shape "
                             f"{self.shape})")
        source = self._write_source(source, "masked_scatter", "source")
        dims = list(self.st.dims)
        full = mask.expand(dims)
        rank = full.reshape(-1).to(dt.int32).cumsum(0) - 1
        n = product(source.st.dims)
        rank = rank.clamp(0).minimum(self.graph.constant(n - 1, dt.int32))
        picked = source.reshape(-1).gather(0, rank).reshape(dims)
        return where(full, picked, self)

    def slice_scatter(self, src, dim: int = 0, start=None, end=None, step: int = 1):
        """torch.slice_scatter: ``self`` with ``self[dim][start:end:step] = src``."""
        axis = self._axis(dim, "slice_scatter")
        n = self.st.dims[axis]
        length = self.slice_axis(axis, start, end, step).st.dims[axis]
        first = 0 if start is None else start
        first = n + first if isinstance(first, int) and first < 0 else first
        index = self.graph.iota(Expr("z") * step + first, length)
        return self.index_put([None] * axis + [index], src)

    def select_scatter(self, src, dim: int, index: int):
        """torch.select_scatter: ``self`` with ``self.select(dim, index) = src``."""
        axis = self._axis(dim, "select_scatter")
        n = self.st.dims[axis]
        at = n + index if isinstance(index, int) and index < 0 else index
        src = self._write_source(src, "select_scatter")
        return self.index_put([None] * axis + [self.graph.iota(Expr(at), 1)],
                              src.unsqueeze(axis))

    def diagonal_scatter(self, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
        """torch.diagonal_scatter: ``self`` with ``self.diagonal(offset, dim1, dim2) = src``."""
        a, b = self._axis(dim1, "diagonal_scatter"), self._axis(dim2, "diagonal_scatter")
        if a == b:
            raise ShapeError(f"diagonal_scatter: dim1 and dim2 are both {a} (shape "
                             f"{self.shape})")
        rest = [d for d in range(self.ndim) if d not in (a, b)]
        x = self.permute(rest + [a, b])
        length = self.diagonal(offset, a, b).st.dims[-1]
        g = self.graph
        r = g.iota(Expr("z") + max(-offset, 0), length)
        c = g.iota(Expr("z") + max(offset, 0), length)
        out = x.index_put([None] * len(rest) + [r, c], src)
        return out.permute(_inverse(rest + [a, b]))
