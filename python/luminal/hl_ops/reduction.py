"""Reductions over one dim, several dims or all, with keepdim: sum, mean, prod, amax/amin,
max/min (values and indices with a dim), argmax/argmin, var/std (and var_mean/std_mean),
logsumexp, norm, all/any.
Built from SumReduce and MaxReduce (min is the max of the order-flipped input). f16/bf16
accumulate in f32, as torch does. Cumulative ops come from ScanOps."""

from __future__ import annotations

import math

from .._core import Expr, OpKind
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from .tensor_utils import HALF_TYPES, blend, choose, full_like, is_tensor, order_flip
from .scan import ScanOps, ValuesIndices, move_last, product_last
from .shape_utils import product


class ReductionOps(ScanOps):
    # ---- plumbing -------------------------------------------------------------------------
    def _reduce_dims(self, dim, op: str):
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            return list(range(self.ndim))
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        axes = [self._axis(d, op) for d in dims]
        if self.ndim == 0:
            return []  # dim 0 / -1 of a scalar: nothing to reduce
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{op}: dim {tuple(dims)} names an axis twice (shape {self.shape})")
        return sorted(axes)

    def _reduce_many(self, op: OpKind, dim, keepdim: bool, name: str):
        axes = self._reduce_dims(dim, name)
        out = self
        for axis in reversed(axes):
            out = out._reduce(op, axis)
        return out._keep(axes, keepdim)

    def _keep(self, axes, keepdim: bool):
        out = self
        if keepdim:
            for axis in axes:
                out = out.unsqueeze(axis)
        return out

    def _count(self, axes) -> Expr:
        return product(self.st.dims[axis] for axis in axes)

    def _float_reduction_input(self, op: str, dtype=None):
        """The input of mean/var/std/norm: float only (as torch), halves widened to f32."""
        x = self.to(dtype) if dtype is not None else self
        if not dt.is_float(x.dtype):
            raise DTypeError(f"{op}: needs a float tensor (or dtype=), got {dt.name(x.dtype)} "
                             f"of shape {self.shape}")
        return x.to(dt.float32), x.dtype

    # ---- sums and products ----------------------------------------------------------------
    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        x = self.to(dtype) if dtype is not None else self
        if x.dtype == dt.bool_:
            x = x.to(dt.int32)
        out_dtype = x.dtype
        x = x.to(dt.float32) if x.dtype in HALF_TYPES else x
        return x._reduce_many(OpKind.SumReduce, dim, keepdim, "sum").to(out_dtype)

    def mean(self, dim=None, keepdim: bool = False, dtype=None):
        x, out_dtype = self._float_reduction_input("mean", dtype)
        axes = self._reduce_dims(dim, "mean")
        total = x.sum(dim, keepdim)
        count = self.graph.constant(self._count(axes), dt.int32).to(dt.float32)
        return (total / count).to(out_dtype)

    def prod(self, dim=None, keepdim: bool = False, dtype=None):
        x = self.to(dtype) if dtype is not None else self
        if x.dtype == dt.bool_:
            x = x.to(dt.int32)
        out_dtype = x.dtype
        x = x.to(dt.float32) if x.dtype in HALF_TYPES else x
        axes = self._reduce_dims(dim, "prod")
        out = x
        for axis in reversed(axes):
            moved, _ = move_last(out, axis)
            out = product_last(moved) if out.ndim else out
        return out._keep(axes, keepdim).to(out_dtype)

    # ---- extremes -------------------------------------------------------------------------
    def amax(self, dim=None, keepdim: bool = False):
        return self._reduce_many(OpKind.MaxReduce, dim, keepdim, "amax")

    def amin(self, dim=None, keepdim: bool = False):
        if self.dtype == dt.bool_:
            return self.logical_not().amax(dim, keepdim).logical_not()
        return order_flip(order_flip(self).amax(dim, keepdim))

    def _extreme(self, dim, keepdim, largest: bool, op: str):
        """(values, first index of the extreme along ``dim``); NaN counts as the extreme."""
        axis = self._axis(dim, op)
        x = self if self.ndim else self.reshape(1)
        values = x.amax(axis, keepdim=True) if largest else x.amin(axis, keepdim=True)
        hit = x == values
        if dt.is_float(x.dtype):
            hit = hit | x.isnan()
        n = x.st.dims[axis]
        shape = [Expr(1)] * x.ndim
        shape[axis] = n
        positions = self.graph.iota(Expr("z"), n).reshape(shape).expand(list(x.st.dims))
        index = blend(hit, positions, full_like(positions, n)).amin(axis, keepdim=True)
        if self.ndim == 0:
            return ValuesIndices(values.reshape([]), index.reshape([]))
        if not keepdim:
            values = values.squeeze(axis)
            index = index.squeeze(axis)
        return ValuesIndices(values, index)

    def max(self, dim=None, keepdim: bool = False):
        """max() is the value; max(dim) gives (values, indices); max(tensor) is maximum."""
        if is_tensor(dim):
            return self.maximum(dim)
        if dim is None:
            return self.amax()
        return self._extreme(dim, keepdim, True, "max")

    def min(self, dim=None, keepdim: bool = False):
        if is_tensor(dim):
            return self.minimum(dim)
        if dim is None:
            return self.amin()
        return self._extreme(dim, keepdim, False, "min")

    def argmax(self, dim=None, keepdim: bool = False):
        if dim is None:
            index = self.reshape(-1)._extreme(0, False, True, "argmax").indices
            return index.reshape([1] * self.ndim) if keepdim else index
        return self._extreme(dim, keepdim, True, "argmax").indices

    def argmin(self, dim=None, keepdim: bool = False):
        if dim is None:
            index = self.reshape(-1)._extreme(0, False, False, "argmin").indices
            return index.reshape([1] * self.ndim) if keepdim else index
        return self._extreme(dim, keepdim, False, "argmin").indices

    # ---- statistics -----------------------------------------------------------------------
    def var(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        """Variance with Bessel's ``correction`` (default 1; ``unbiased=False`` means 0)."""
        if isinstance(dim, bool):  # torch's legacy x.var(unbiased)
            dim, unbiased = None, dim
        if correction is None:
            correction = 0 if unbiased is False else 1
        x, out_dtype = self._float_reduction_input("var")
        axes = self._reduce_dims(dim, "var")
        deviation = x - x.mean(dim, keepdim=True)
        total = (deviation * deviation).sum(dim, keepdim)
        count = self.graph.constant(self._count(axes), dt.int32).to(dt.float32)
        return (total / (count - correction).relu()).to(out_dtype)

    def std(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        self._reduce_dims(dim, "std")
        x, out_dtype = self._float_reduction_input("std")
        return x.var(dim, unbiased, keepdim, correction=correction).sqrt().to(out_dtype)

    def var_mean(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        """torch.var_mean: (variance, mean) over ``dim``."""
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        variance = self.var(dim, unbiased, keepdim, correction=correction)
        return variance, self.mean(dim, keepdim).to(variance.dtype)

    def std_mean(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        """torch.std_mean: (standard deviation, mean) over ``dim``."""
        variance, mean = self.var_mean(dim, unbiased, keepdim, correction=correction)
        return variance.sqrt(), mean

    def logsumexp(self, dim, keepdim: bool = False):
        axes = self._reduce_dims(dim, "logsumexp")
        x = self.to(dt.float32) if not dt.is_float(self.dtype) else self
        out_dtype = x.dtype
        x = x.to(dt.float32)
        peak = x.amax(dim, keepdim=True)
        # An infinite max would give inf - inf; torch shifts by 0 there instead.
        shift = choose(peak.isinf().to(dt.int32), [peak, full_like(peak, 0.0)])
        total = (x - shift).exp().sum(dim, keepdim=True)
        out = total.log() + shift
        if not keepdim:
            out = out.squeeze(axes)
        return out.to(out_dtype)

    def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None):
        """Vector norms over ``dim`` (all dims by default): p = 'fro', 2, 1, inf, -inf, 0 or
        any other number."""
        self._reduce_dims(dim, "norm")
        x, out_dtype = self._float_reduction_input("norm", dtype)
        if p == "fro" or p == 2:
            out = (x * x).sum(dim, keepdim).sqrt()
        elif p == 1:
            out = x.abs().sum(dim, keepdim)
        elif p == math.inf:
            out = x.abs().amax(dim, keepdim)
        elif p == -math.inf:
            out = x.abs().amin(dim, keepdim)
        elif p == 0:
            out = (x != 0).to(dt.float32).sum(dim, keepdim)
        elif isinstance(p, (int, float)) and not isinstance(p, bool):
            out = x.abs().pow(p).sum(dim, keepdim).pow(1.0 / p)
        else:
            raise ShapeError(f"norm: unsupported p={p!r} (use 'fro', a number or +-inf)")
        return out.to(out_dtype)

    # ---- logic ----------------------------------------------------------------------------
    def all(self, dim=None, keepdim: bool = False):
        self._reduce_dims(dim, "all")
        return self.to(dt.bool_).amin(dim, keepdim)

    def any(self, dim=None, keepdim: bool = False):
        self._reduce_dims(dim, "any")
        return self.to(dt.bool_).amax(dim, keepdim)
