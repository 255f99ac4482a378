"""Sorting by O(n^2) comparison ranking: sort (stable; NaN sorts as the largest value, as in
torch), argsort and topk. Each element's rank counts the elements that go before it; the
inverse permutation comes from matching ranks to positions, and values from a Gather."""

from __future__ import annotations

from .._core import Expr
from .. import dtype as dt
from ..errors import ShapeError
from .scan import ValuesIndices, move_last
from .shape_utils import product


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
