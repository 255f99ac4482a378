"""Reductions over one dim, several dims or all, with keepdim, built from SumReduce and
MaxReduce (min is -max(-x))."""

from __future__ import annotations

from .._core import Expr, OpKind
from .. import dtype as dt


class ReductionOps:
    def _reduce_dims(self, dim, op: str):
        if dim is None:
            return list(range(self.ndim))
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        axes = sorted({self._axis(d, op) for d in dims})
        return axes

    def _reduce_many(self, op: OpKind, dim, keepdim: bool, name: str):
        axes = self._reduce_dims(dim, name)
        out = self
        for axis in reversed(axes):
            out = out._reduce(op, axis)
        if keepdim:
            for axis in axes:
                out = out.unsqueeze(axis)
        return out

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        x = self
        if dtype is not None:
            x = x.to(dtype)
        elif x.dtype == dt.bool_:
            x = x.to(dt.int32)
        return x._reduce_many(OpKind.SumReduce, dim, keepdim, "sum")

    def amax(self, dim=None, keepdim: bool = False):
        return self._reduce_many(OpKind.MaxReduce, dim, keepdim, "amax")

    def amin(self, dim=None, keepdim: bool = False):
        if self.dtype == dt.bool_:
            return self.logical_not().amax(dim, keepdim).logical_not()
        return -((-self).amax(dim, keepdim))

    def mean(self, dim=None, keepdim: bool = False):
        x = self if dt.is_float(self.dtype) else self.to(dt.float32)
        count = Expr(1)
        for axis in self._reduce_dims(dim, "mean"):
            count = count * self.view.dims[axis]
        total = x.sum(dim, keepdim)
        n = self.graph.constant(count, dt.int32).to(x.dtype)
        return total / n
