"""Private compositions the nn modules need, built from ops GraphTensor already has:
softmax, layer/rms norm, silu, exact (erf) gelu, concatenation along a symbolic axis, and
additive attention masks. PyTorch's names and semantics; luminal.nn.functional holds the
public versions, and these can give way to them."""

from __future__ import annotations

import math

from .._core import Expr
from .. import dtype as dt

NEG_INF = -1e30  # additive mask value: exp() of it is exactly 0, and no inf - inf NaNs


def softmax(x, dim: int = -1):
    shifted = x - x.amax(dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim, keepdim=True)


def layer_norm(x, weight=None, bias=None, eps: float = 1e-5):
    """Normalizes the last dim (PyTorch's layer_norm with normalized_shape = x.shape[-1:])."""
    centered = x - x.mean(-1, keepdim=True)
    var = (centered * centered).mean(-1, keepdim=True)
    out = centered * (var + eps).sqrt().reciprocal()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(x, weight=None, eps: float = 1e-6):
    out = x * ((x * x).mean(-1, keepdim=True) + eps).sqrt().reciprocal()
    return out * weight if weight is not None else out


def sigmoid(x):
    return ((-x).exp() + 1.0).reciprocal()


def silu(x):
    return x * sigmoid(x)


def erf(x):
    """Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7), odd-extended."""
    a = x.abs()
    t = (a * 0.3275911 + 1.0).reciprocal()
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    positive = 1.0 - poly * (-(a * a)).exp()
    sign = (x < 0).to(x.dtype) * -2.0 + 1.0
    return positive * sign


def gelu(x):
    """Exact GELU: x * Phi(x)."""
    return x * 0.5 * (erf(x * (1.0 / math.sqrt(2.0))) + 1.0)


def cat2(a, b, dim: int):
    """``torch.cat([a, b], dim)`` as two zero-pads and an Add; sizes may be symbolic."""
    dim = a._axis(dim, "cat")
    na, nb = a.view.dims[dim], b.view.dims[dim]
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
