"""Additive attention masks for the nn attention layers: causal with a past offset (a KV
cache) and padding from a 1/0 attention mask. Each is 0 where a key is seen and NEG_INF where
it is not. Not here: scaled_dot_product_attention's own masks (sdpa.py, -inf as torch)."""

from __future__ import annotations

from .. import dtype as dt
from .._core import Expr
from ..hl_ops.shape_utils import as_expr

NEG_INF = -1e30  # additive mask value: exp() of it is exactly 0, and no inf - inf NaNs


def causal_bias(graph, s, past):
    """(s, past + s) additive mask: query i (at absolute position past + i) sees keys
    j <= past + i; the rest get NEG_INF."""
    s, past = as_expr(s), as_expr(past)
    rows = graph.iota(Expr("z") + past, s).reshape(s, 1)
    cols = graph.iota(Expr("z"), past + s).reshape(1, past + s)
    return (rows < cols).to(dt.float32) * NEG_INF


def padding_bias(mask):
    """(batch, 1, 1, s) additive bias from a (batch, s) 1/0 attention mask."""
    keep = mask.to(dt.float32)
    return ((keep - 1.0) * -NEG_INF).unsqueeze(1).unsqueeze(1)
