"""Cumulative ops along one dim: cumsum, cumprod, cummax, cummin. Each gathers a prefix table
T[..., i, j] = x[..., j] for j <= i (a neutral fill value elsewhere) and reduces its last axis:
O(n^2) work, exact for inf and NaN, and valid for symbolic lengths. Also the product
reduction they share with ``prod``."""

from __future__ import annotations

import collections

from .._core import Expr, OpKind
from .. import dtype as dt
from .joining import cat
from .shape_utils import product
from .tensor_utils import HALF_TYPES, blend, full_like, order_flip, round_to_int

ValuesIndices = collections.namedtuple("ValuesIndices", ["values", "indices"])

INT32_MIN = -(2 ** 31)


def move_last(x, axis: int):
    """x with ``axis`` moved to the end, and the permutation that moves it back."""
    order = [k for k in range(x.ndim) if k != axis] + [axis]
    back = [order.index(k) for k in range(x.ndim)]
    return x.permute(order), back


def append_last(x, value):
    """x with one more element, ``value``, at the end of its last axis (exact)."""
    dims = list(x.st.dims[:-1]) + [Expr(1)]
    return cat([x, x.graph.constant(value, x.dtype).expand(dims)], -1)


def prefix_table(x, fill):
    """For x of shape (..., n): T of shape (..., n, n) with T[..., i, j] = x[..., j] where
    j <= i and ``fill`` elsewhere."""
    dims = list(x.st.dims)
    n = dims[-1]
    outer = product(dims[:-1])
    data = append_last(x, fill)
    g = x.graph
    rows = g.iota(Expr("z"), n).reshape(n, 1)
    cols = g.iota(Expr("z"), n).reshape(1, n)
    cols, rows = cols.expand(n, n), rows.expand(n, n)
    tri = blend(cols <= rows, cols, full_like(cols, n))
    base = g.iota(Expr("z") * (n + 1), outer).reshape(outer, 1, 1)
    index = base + tri.reshape(1, n, n)
    return data._gather(index).reshape(dims[:-1] + [n, n])


def _lowest(dtype):
    if dtype == dt.bool_:
        return False
    return INT32_MIN if dtype == dt.int32 else float("-inf")


def product_last(x):
    """The product over the last axis (removed). A pairwise tree of Muls for a static length;
    for a symbolic one, exp(sum(log|x|)) with the sign from the count of negatives (ints are
    rounded back, exact below 2^24)."""
    n = x.st.dims[-1]
    rank = x.ndim
    if not n.is_const():
        return _product_by_logs(x)
    n = n.as_const()
    if n == 0:
        one = x.graph.constant(1, x.dtype)
        return one.expand(list(x.st.dims[:-1])) if rank > 1 else one
    while n > 1:
        if n % 2:
            x = append_last(x, 1)
            n += 1
        half = n // 2
        first = x._with_view(x.st.slice(rank - 1, Expr(0), Expr(half), 1))
        second = x._with_view(x.st.slice(rank - 1, Expr(half), Expr(n), 1))
        x = first._binary(OpKind.Mul, second)
        n = half
    return x._with_view(x.st.remove_axis(rank - 1))


def _product_by_logs(x):
    work = x.to(dt.float32)
    magnitude = work.abs().log2().sum(-1).exp2()
    negatives = (work < 0).to(dt.int32).sum(-1)
    sign = 1 - 2 * negatives.fmod(2).to(dt.float32)
    result = magnitude * sign
    return result if dt.is_float(x.dtype) else round_to_int(result).to(x.dtype)


class ScanOps:
    def _scan_input(self, dim, op: str, dtype=None):
        axis = self._axis(dim, op)
        x = self.to(dtype) if dtype is not None else self
        if x.dtype == dt.bool_:
            x = x.to(dt.int32)
        work = x.to(dt.float32) if x.dtype in HALF_TYPES else x
        moved, back = move_last(work, axis) if self.ndim else (work.reshape(1), None)
        return moved, back, x.dtype

    def _scan_output(self, out, back, dtype):
        out = out.to(dtype)
        return out.permute(back) if back is not None else out.reshape([])

    def cumsum(self, dim, dtype=None):
        x, back, out_dtype = self._scan_input(dim, "cumsum", dtype)
        return self._scan_output(prefix_table(x, 0).sum(-1), back, out_dtype)

    def cumprod(self, dim, dtype=None):
        x, back, out_dtype = self._scan_input(dim, "cumprod", dtype)
        return self._scan_output(product_last(prefix_table(x, 1)), back, out_dtype)

    def cummax(self, dim):
        """Running max and the index where it was last attained (NaN sticks, as torch)."""
        axis = self._axis(dim, "cummax")
        x, back = move_last(self, axis) if self.ndim else (self.reshape(1), None)
        table = prefix_table(x, _lowest(x.dtype))
        values = table.amax(-1)
        n = x.st.dims[-1]
        g = self.graph
        rows = g.iota(Expr("z"), n).reshape(n, 1)
        cols = g.iota(Expr("z"), n).reshape(1, n)
        hit = (table == values.unsqueeze(-1)) & (cols <= rows)
        if dt.is_float(x.dtype):
            hit = hit | table.isnan()
        positions = cols.expand(table.shape)
        index = blend(hit, positions, full_like(positions, -1)).amax(-1)
        if back is None:
            return ValuesIndices(values.reshape([]), index.reshape([]))
        return ValuesIndices(values.permute(back), index.permute(back))

    def cummin(self, dim):
        if self.dtype == dt.bool_:
            values, index = self.logical_not().cummax(dim)
            return ValuesIndices(values.logical_not(), index)
        values, index = order_flip(self).cummax(dim)
        return ValuesIndices(order_flip(values), index)
