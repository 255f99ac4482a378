"""Additive masks, 0 where a value counts: for the nn attention layers, causal with a past
offset (a KV cache) and padding from a 1/0 attention mask, NEG_INF where a key is not seen;
and -inf where a mask is false, as torch's scaled_dot_product_attention and max pooling use.
Not here: sdpa's causal mask (sdpa.py, top-left aligned as torch)."""

from __future__ import annotations

from .. import dtype as dt
from .._core import Expr
from ..hl_ops.shape_utils import as_expr

NEG_INF = -1e30  # additive mask value: exp() of it is exactly 0, and no inf - inf NaNs


def neg_inf_where_false(mask):
    """0 where ``mask`` is True (or 1) and -inf where False (log2 of 1 and of 0), so that
    adding it masks scores exactly."""
    return mask.to(dt.float32).log2()


def causal_bias(graph, s, past, window=None):
    """(s, past + s) additive mask: query i (at absolute position past + i) sees keys
    j <= past + i, and with a ``window`` only the last ``window`` of them
    (j > past + i - window, a sliding window); the rest get NEG_INF."""
    return key_range_bias(graph, s, past, 0, as_expr(past) + as_expr(s), window)


def key_range_bias(graph, s, past, first_key, keys, window=None):
    """causal_bias's mask over the ``keys`` keys from absolute position ``first_key`` on:
    (s, keys)."""
    s, past, first_key, keys = as_expr(s), as_expr(past), as_expr(first_key), as_expr(keys)
    rows = graph.iota(Expr("z") + past, s).reshape(s, 1)
    cols = graph.iota(Expr("z") + first_key, keys).reshape(1, keys)
    hidden = (rows < cols).to(dt.float32)
    if window is not None:
        hidden = hidden + (cols + (window - 1) < rows).to(dt.float32)
    return hidden * NEG_INF


def padding_bias(mask):
    """(batch, 1, 1, s) additive bias from a (batch, s) 1/0 attention mask."""
    keep = mask.to(dt.float32)
    return ((keep - 1.0) * -NEG_INF).unsqueeze(1).unsqueeze(1)
