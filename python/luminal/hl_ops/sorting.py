"""Sorting by O(n^2) comparison ranking: sort (stable; NaN sorts as the largest value, as in
torch), argsort, msort, topk, and the order statistics read from a sort (kthvalue, median,
nanmedian). Each element's rank counts the elements that go before it; the inverse
permutation comes from matching ranks to positions, and values from a Gather. Also
searchsorted and bucketize, which count comparisons with the boundaries."""

from __future__ import annotations

from .._core import Expr
from .. import dtype as dt
from ..errors import ShapeError
from .scan import ValuesIndices, move_last
from .shape_utils import product
from .tensor_utils import where


def _ranks(x, descending: bool):
    """For x of shape (..., n): the stable sorted position of every element."""
    mine = x.unsqueeze(-1)    # (..., n, 1): element i
    other = x.unsqueeze(-2)   # (..., 1, n): element j
    ahead = (mine < other) if descending else (other < mine)
    if dt.is_float(x.dtype):
        mine_nan, other_nan = mine.isnan(), other.isnan()
        first, second = (other_nan, mine_nan) if descending else (mine_nan, other_nan)
        ahead = ahead | (first & second.logical_not())
        tie = (mine == other) | (mine_nan & other_nan)
    else:
        tie = mine == other
    n = x.st.dims[-1]
    g = x.graph
    rows = g.iota(Expr("z"), n).reshape(n, 1)
    cols = g.iota(Expr("z"), n).reshape(1, n)
    earlier = cols < rows
    return (ahead | (tie & earlier)).to(dt.int32).sum(-1)


def _sorted_last(x, descending: bool):
    """(values, indices) of x (..., n) sorted along its last axis."""
    n = x.st.dims[-1]
    g = x.graph
    ranks = _ranks(x, descending)                        # (..., n) position of element i
    targets = g.iota(Expr("z"), n).reshape(n, 1)         # (n, 1) output slot r
    sources = g.iota(Expr("z"), n).reshape(1, n)         # (1, n) input element i
    lands = ranks.unsqueeze(-2) == targets               # (..., n_r, n_i)
    indices = (lands.to(dt.int32) * sources).sum(-1)     # (..., n_r)
    outer = product(x.st.dims[:-1])
    dims = list(x.st.dims)
    base = g.iota(Expr("z") * n, outer).reshape(dims[:-1] + [Expr(1)])
    values = x._gather(indices + base)
    return values, indices


class SortingOps:
    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        """(values, indices), always stable."""
        if self.ndim == 0:
            return ValuesIndices(self, self.graph.constant(0, dt.int32))
        axis = self._axis(dim, "sort")
        x, back = move_last(self, axis)
        values, indices = _sorted_last(x, descending)
        return ValuesIndices(values.permute(back), indices.permute(back))

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        return self.sort(dim, descending, stable).indices

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """The k largest (or smallest) values along ``dim`` and their indices, in order."""
        if isinstance(k, bool) or not isinstance(k, int):
            raise ShapeError(f"topk: k must be an int, got {k!r}")
        axis = self._axis(dim, "topk")
        n = self.st.dims[axis] if self.ndim else Expr(1)
        if k < 0 or (n.is_const() and k > n.as_const()):
            raise ShapeError(f"topk: k={k} is out of range for dim {dim} of shape {self.shape}")
        values, indices = self.sort(axis, descending=largest)
        if self.ndim == 0:
            return ValuesIndices(values, indices)
        return ValuesIndices(values.narrow(axis, 0, k), indices.narrow(axis, 0, k))

    def msort(self):
        return self.sort(0).values

    def _kth_sorted(self, dim, k, keepdim: bool, op: str):
        """(values, indices) of the ``k``-th smallest along ``dim`` (from 0): ``k`` an int or
        Expr, or an int tensor of self's shape with ``dim`` reduced to 1 (one rank per row)."""
        if self.ndim == 0:
            return ValuesIndices(self, self.graph.constant(0, dt.int32))
        axis = self._axis(dim, op)
        values, indices = self.sort(axis)
        if isinstance(k, (int, Expr)):
            dims = list(self.st.dims)
            dims[axis] = Expr(1)
            k = self.graph.constant(k, dt.int32).expand(dims)
        picked = ValuesIndices(values.gather(axis, k), indices.gather(axis, k))
        if keepdim:
            return picked
        return ValuesIndices(picked.values.squeeze(axis), picked.indices.squeeze(axis))

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False):
        """The k-th smallest value along ``dim`` (k from 1) and its index."""
        n = self.st.dims[self._axis(dim, "kthvalue")] if self.ndim else Expr(1)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1 or \
                (n.is_const() and k > n.as_const()):
            raise ShapeError(f"kthvalue: k={k!r} is out of range for dim {dim} of shape "
                             f"{self.shape}")
        return self._kth_sorted(dim, k - 1, keepdim, "kthvalue")

    def _median(self, dim, keepdim: bool, skip_nan: bool, op: str):
        """The lower median (NaN where a row has one, unless ``skip_nan``) along ``dim``; all
        dims flattened, values only, when ``dim`` is None."""
        x = self.reshape(-1) if dim is None else self
        axis = 0 if dim is None else x._axis(dim, op) if x.ndim else 0
        n = x.st.dims[axis] if x.ndim else Expr(1)
        if dt.is_float(x.dtype) and x.ndim:
            nan = x.isnan().to(dt.int32).sum(axis, keepdim=True)
            last = x.graph.constant(n - 1, dt.int32)
            if skip_nan:  # the lower median of the values that are not NaN
                k = ((x.graph.constant(n, dt.int32) - nan - 1).clamp(min=0)) // 2
            else:  # NaN sorts last: the median of a row with one is NaN
                k = where(nan > 0, last, x.graph.constant((n - 1) // 2, dt.int32))
        else:
            k = (n - 1) // 2
        picked = x._kth_sorted(axis, k, keepdim, op)
        return picked.values if dim is None else picked

    def median(self, dim=None, keepdim: bool = False):
        """torch.median: the lower of the two middle values (NaN if there is one); with
        ``dim``, (values, indices)."""
        return self._median(dim, keepdim, False, "median")

    def nanmedian(self, dim=None, keepdim: bool = False):
        """torch.nanmedian: median ignoring NaN (NaN where a row is all NaN)."""
        return self._median(dim, keepdim, True, "nanmedian")


def searchsorted(sorted_sequence, values, *, out_int32: bool = False, right: bool = False,
                 side=None, sorter=None):
    """torch.searchsorted: for each value, how many elements of the sorted last dim of
    ``sorted_sequence`` go before it (those < value; those <= value with right=True). A 1-D
    sequence serves every value; else its leading dims match ``values``'."""
    if side is not None:
        if side not in ("left", "right"):
            raise ShapeError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    seq = sorted_sequence if sorter is None else sorted_sequence.gather(-1, sorter)
    if seq.ndim > 1 and list(seq.st.dims[:-1]) != list(values.st.dims[:-1]):
        raise ShapeError(f"searchsorted: sorted_sequence of shape {sorted_sequence.shape} and "
                         f"values of shape {values.shape} differ in their leading dims")
    m = seq.st.dims[-1]
    edges = seq.unsqueeze(-2) if seq.ndim > 1 else seq   # (..., 1, m)
    v = values.unsqueeze(-1)                               # (..., k, 1)
    if right:  # upper bound: the elements not above the value (NaN counts past them all)
        above = (v < edges).to(dt.int32).sum(-1)
        return values.graph.constant(m, dt.int32) - above
    return (edges < v).to(dt.int32).sum(-1)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """torch.bucketize: the bucket of each input among the sorted 1-D ``boundaries``."""
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-D, got shape {boundaries.shape}")
    return searchsorted(boundaries, input, right=right)
