"""Creation ops as methods of Graph (every tensor belongs to one): arange, zeros, ones, full,
the *_like forms, eye, linspace, and seeded rand / randn. Constants are one scalar node read
through a broadcast view; sequences come from Iota. Shapes may hold symbolic dims. Random
numbers are a counter hash in random_bits.py."""

from __future__ import annotations

import math

from .._core import Expr
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from .joining import cat
from .random_bits import normal, uniform
from .shape_utils import check_dim_arg, dims_tuple


def _shape(size, op: str) -> list:
    return [check_dim_arg(d, op) for d in dims_tuple(size)]


def _number(v, op: str, what: str):
    if isinstance(v, bool) or not isinstance(v, (int, float, Expr)):
        raise DTypeError(f"{op}: {what} must be a number, got {v!r}")
    return v


class CreationOps:
    def full(self, size, fill_value, dtype=None):
        """torch.full: ``size`` filled with ``fill_value`` (dtype from the value if None)."""
        shape = _shape(size if isinstance(size, (tuple, list)) else (size,), "full")
        if isinstance(fill_value, bool):
            default = dt.bool_
        elif isinstance(fill_value, float):
            default = dt.float32
        elif isinstance(fill_value, (int, Expr)):
            default = dt.int32
        else:
            raise DTypeError(f"full: fill_value must be a number, got {fill_value!r}")
        value = self.constant(fill_value, dt.to_dtype(dtype) if dtype else default)
        return value.expand(shape)

    def zeros(self, *size, dtype=dt.float32):
        return self.full(_shape(size, "zeros"), 0, dt.to_dtype(dtype))

    def ones(self, *size, dtype=dt.float32):
        return self.full(_shape(size, "ones"), 1, dt.to_dtype(dtype))

    def full_like(self, t, fill_value, dtype=None):
        self._check_owns(t)
        return self.full(t.st.dims, fill_value, dtype or t.dtype)

    def zeros_like(self, t, dtype=None):
        return self.full_like(t, 0, dtype)

    def ones_like(self, t, dtype=None):
        return self.full_like(t, 1, dtype)

    def arange(self, start, end=None, step=1, dtype=None):
        """torch.arange: ``[start, end)`` by ``step``; ``cx.arange(n)`` counts from 0. Int
        arguments (which may be Exprs) give int32, floats give float32."""
        if end is None:
            start, end = 0, start
        for name, v in (("start", start), ("end", end), ("step", step)):
            _number(v, "arange", name)
        if isinstance(step, Expr) or step == 0:
            raise ShapeError(f"arange: step must be a non-zero number, got {step!r}")
        exact = all(isinstance(v, (int, Expr)) for v in (start, end, step))
        if exact:
            span = Expr(end) - Expr(start) if step > 0 else Expr(start) - Expr(end)
            length = ((span + (abs(step) - 1)) // abs(step)).max(0)
            out = self.iota(Expr(start) + Expr("z") * step, length)
            return out if dtype is None else out.to(dtype)
        if isinstance(start, Expr) or isinstance(end, Expr):
            raise ShapeError("arange: symbolic bounds need int start and step")
        length = max(math.ceil((end - start) / step), 0)
        out = self.iota(Expr("z"), length).to(dt.float32) * float(step) + float(start)
        return out.to(dtype or dt.float32)

    def eye(self, n, m=None, dtype=dt.float32):
        n = check_dim_arg(n, "eye", "n")
        m = n if m is None else check_dim_arg(m, "eye", "m")
        rows = self.iota(Expr("z"), n).reshape(n, 1)
        cols = self.iota(Expr("z"), m).reshape(1, m)
        return (rows == cols).to(dtype)

    def linspace(self, start, end, steps, dtype=dt.float32):
        """torch.linspace, computed as torch does: the first half counts up from start, the
        second half down from end."""
        _number(start, "linspace", "start")
        _number(end, "linspace", "end")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ShapeError(f"linspace: steps must be a non-negative int, got {steps!r}")
        if steps <= 1:
            return self.full((steps,), float(start), dtype)
        step = (end - start) / (steps - 1)
        half = steps // 2
        i = self.iota(Expr("z"), steps).to(dt.float32)
        up = i * float(step) + float(start)
        down = (i - float(steps - 1)) * float(step) + float(end)
        out = cat([up[:half], down[half:]])
        return out.to(dtype)

    def rand(self, *size, seed: int = 0, dtype=dt.float32):
        """Uniform in [0, 1), deterministic for ``seed`` (not torch's generator)."""
        return uniform(self, _shape(size, "rand"), seed).to(dtype)

    def randn(self, *size, seed: int = 0, dtype=dt.float32):
        """Standard normal (Box-Muller), deterministic for ``seed`` (not torch's generator)."""
        return normal(self, _shape(size, "randn"), seed).to(dtype)

    def rand_like(self, t, seed: int = 0, dtype=None):
        self._check_owns(t)
        return self.rand(t.st.dims, seed=seed, dtype=dtype or t.dtype)

    def randn_like(self, t, seed: int = 0, dtype=None):
        self._check_owns(t)
        return self.randn(t.st.dims, seed=seed, dtype=dtype or t.dtype)
