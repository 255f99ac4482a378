"""Private pieces the nn modules need that luminal.nn.functional does not offer:
concatenation along a (possibly symbolic) axis as two pads and an Add, and additive
attention masks (causal with a past offset, padding). Everything else comes from
luminal.nn.functional and the GraphTensor methods."""

from __future__ import annotations

from .. import dtype as dt
from .._core import Expr

NEG_INF = -1e30  # additive mask value: exp() of it is exactly 0, and no inf - inf NaNs


def cat2(a, b, dim: int):
    """``torch.cat([a, b], dim)`` as two zero-pads and an Add; sizes may be symbolic."""
    dim = a._axis(dim, "cat")
    na, nb = a.st.dims[dim], b.st.dims[dim]
    after = 2 * (a.ndim - 1 - dim)
    pa = [0] * after + [Expr(0), nb]
    pb = [0] * after + [na, Expr(0)]
    return a.pad_zeros(pa) + b.pad_zeros(pb)


def causal_bias(graph, s, past):
    """(s, past + s) additive mask: query i (at absolute position past + i) sees keys
    j <= past + i; the rest get NEG_INF."""
    s, past = _expr(s), _expr(past)
    rows = graph.iota(Expr("z") + past, s).reshape(s, 1)
    cols = graph.iota(Expr("z"), past + s).reshape(1, past + s)
    return (rows < cols).to(dt.float32) * NEG_INF


def padding_bias(mask):
    """(batch, 1, 1, s) additive bias from a (batch, s) 1/0 attention mask."""
    keep = mask.to(dt.float32)
    return ((keep - 1.0) * -NEG_INF).unsqueeze(1).unsqueeze(1)


def _expr(d):
    return d if isinstance(d, Expr) else Expr(d)
