"""Small compositions the nn ops build on: stack/cat by padding, exact maximum, a select for
finite values, index ranges and filled tensors. Private to ``luminal.nn``; each is exact (no
rounding beyond the ops it names). Not a public API: use the GraphTensor methods instead."""

from __future__ import annotations

import math

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError


def as_expr(d) -> Expr:
    return d if isinstance(d, Expr) else Expr(d)


def const_int(d, op: str, what: str) -> int:
    """``d`` as a Python int; symbolic dims raise a ShapeError naming ``op``."""
    e = as_expr(d)
    if not e.is_const():
        raise ShapeError(f"{op}: {what} must be a concrete size, got symbolic {e}")
    return e.as_const()


def full(graph, shape, value, dtype=dt.float32):
    """A tensor of ``shape`` holding ``value`` (a broadcast view of one scalar)."""
    return graph.constant(value, dtype).expand([as_expr(d) for d in shape])


def arange(graph, n, dtype=dt.int32):
    """[0, 1, ..., n-1] as a 1-D tensor."""
    return graph.iota(Expr("z"), as_expr(n)).to(dtype)


def cat(tensors, dim: int):
    """Concatenation along ``dim``: each part zero-padded to the full length, then added (the
    padding reads as 0, so every element is one operand plus zeros, exactly)."""
    first = tensors[0]
    dim = first._axis(dim, "cat")
    total = Expr(0)
    for t in tensors:
        total = total + t.st.dims[dim]
    out = None
    start = Expr(0)
    for t in tensors:
        length = t.st.dims[dim]
        padded = t._with_view(t.st.pad(dim, start, total - start - length))
        out = padded if out is None else out + padded
        start = start + length
    return out


def stack(tensors, dim: int):
    """Stacks same-shape tensors along a new axis ``dim``."""
    n = tensors[0].ndim + 1
    if not -n <= dim < n:
        raise ShapeError(f"stack: dim {dim} is out of range for {n} dims")
    dim = dim % n
    return cat([t.unsqueeze(dim) for t in tensors], dim)


def maximum(a, b):
    """Elementwise max of two tensors (or a tensor and a Python number); NaN propagates and
    infinities are exact, as in torch.maximum."""
    if not hasattr(b, "graph"):
        b = a._scalar_like(b)
    a, b = a.broadcast_together(b, "maximum")
    return stack([a, b], -1).amax(-1)


def minimum(a, b):
    if not hasattr(b, "graph"):
        b = a._scalar_like(b)
    return -maximum(-a, -b)


def select(cond, a, b):
    """where(cond, a, b) for finite ``a`` and ``b``: cond * a + (1 - cond) * b."""
    c = cond.to(dt.bool_)
    dtype = a.dtype if hasattr(a, "graph") else b.dtype
    return c.to(dtype) * a + c.logical_not().to(dtype) * b


def neg_inf_where_false(mask):
    """0 where ``mask`` is True and -inf where False (log2 of 1 and of 0), so that adding it
    masks scores exactly."""
    return mask.to(dt.float32).log2()


def sigmoid(x):
    return 1.0 / ((-x).exp() + 1.0)


def tanh(x):
    return sigmoid(x * 2.0) * 2.0 - 1.0


def relu(x):
    return maximum(x, 0.0)


def silu(x):
    return x * sigmoid(x)


def erf(x):
    """erf to ~1e-7 (Abramowitz and Stegun 7.1.26 with odd symmetry)."""
    sign = (x > 0).to(x.dtype) - (x < 0).to(x.dtype)
    a = x.abs()
    t = 1.0 / (a * 0.3275911 + 1.0)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
        -1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * (-(a * a)).exp())


def gelu(x, approximate: str = "none"):
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (tanh(inner) + 1.0)
    return x * 0.5 * (erf(x * (1.0 / math.sqrt(2.0))) + 1.0)
