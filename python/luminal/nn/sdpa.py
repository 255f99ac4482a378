"""scaled_dot_product_attention (torch.nn.functional's): softmax(q @ k^T * scale + mask) @ v
with a bool or float attn_mask, is_causal (top-left aligned, as torch), grouped-query heads
(enable_gqa). Rows with every key masked give 0, as torch's math kernel does. Half inputs are
computed in f32 and rounded once. No dropout: a graph has no random state."""

from __future__ import annotations

import math

from .. import dtype as dt
from ..errors import ShapeError
from ..hl_ops.shape_utils import as_expr, const_int
from ._grid import grid_coords, iota_grid
from .masks import neg_inf_where_false

_F32_LOWEST = -3.4028234663852886e38


def _repeat_heads(t, heads: int, op: str, name: str):
    """(..., Hk, S, E) -> (..., heads, S, E), each head repeated heads // Hk times."""
    have = const_int(t.st.dims[-3], op, f"{name} heads")
    if heads % have:
        raise ShapeError(f"{op}: {heads} query heads are not a multiple of {have} {name} heads")
    dims = list(t.st.dims)
    expanded = t.unsqueeze(-3).expand(dims[:-3] + [dims[-3], heads // have] + dims[-2:])
    return expanded.reshape(dims[:-3] + [heads] + dims[-2:])


def _causal_bias(graph, length, keys):
    """(L, S): 0 where key j <= query i, -inf above the diagonal."""
    c = grid_coords([length, keys])
    return neg_inf_where_false(iota_grid(graph, [length, keys], c[1].le(c[0])))


def safe_softmax(scores, dim: int = -1):
    """softmax over ``dim`` (the last by default) in which an all -inf row gives zeros instead
    of NaN (torch's aten._safe_softmax, which SDPA's math path applies)."""
    m = scores.amax(dim, keepdim=True).maximum(_F32_LOWEST)
    e = (scores - m).exp()
    total = e.sum(dim, keepdim=True)
    return e / (total + (total == 0).to(total.dtype))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None, enable_gqa: bool = False):
    op = "scaled_dot_product_attention"
    if dropout_p:
        raise NotImplementedError(f"{op}: dropout_p > 0 is not supported (no random state)")
    if value.ndim < 2:
        raise ShapeError(f"{op}: value needs at least 2 dims (..., seq, features), got shape "
                         f"{value.shape}")
    if as_expr(key.st.dims[-2]) != as_expr(value.st.dims[-2]):
        raise ShapeError(f"{op}: key of shape {key.shape} and value of shape {value.shape} "
                         f"differ in the sequence dim")
    scores, masked = attention_scores(query, key, attn_mask, is_causal, scale, enable_gqa, op)
    out_dtype = dt.promote(dt.promote(query.dtype, key.dtype), value.dtype)
    v = value.to(dt.float32)
    if enable_gqa and query.ndim >= 3:
        v = _repeat_heads(v, const_int(query.st.dims[-3], op, "query heads"), op, "value")
    weights = safe_softmax(scores) if masked else scores.softmax(-1)
    return weights.matmul(v).to(out_dtype)


def attention_logsumexp(query, key, attn_mask=None, is_causal: bool = False, scale=None,
                        enable_gqa: bool = False):
    """The log of each query row's softmax denominator in scaled_dot_product_attention (f32,
    shape (..., L)): log(sum(exp(scores))) over the keys, 0 for a row whose every key is
    masked, as torch's CPU flash attention returns it for its backward."""
    scores, _ = attention_scores(query, key, attn_mask, is_causal, scale, enable_gqa,
                                 "attention_logsumexp")
    m = scores.amax(-1, keepdim=True).maximum(_F32_LOWEST)
    total = (scores - m).exp().sum(-1, keepdim=True)
    empty = (total == 0).to(total.dtype)  # a fully masked row: m * 0 + log(1)
    return (m * (1 - empty) + (total + empty).log()).squeeze(-1)


def attention_scores(query, key, attn_mask=None, is_causal: bool = False, scale=None,
                     enable_gqa: bool = False, op: str = "attention_scores"):
    """(q @ k^T * scale + the mask's bias, in f32; whether a mask was added), the shapes
    checked (errors name ``op``)."""
    for t, name in ((query, "query"), (key, "key")):
        if t.ndim < 2:
            raise ShapeError(f"{op}: {name} needs at least 2 dims (..., seq, features), got "
                             f"shape {t.shape}")
    if is_causal and attn_mask is not None:
        raise ShapeError(f"{op}: give attn_mask or is_causal, not both")
    if as_expr(query.st.dims[-1]) != as_expr(key.st.dims[-1]):
        raise ShapeError(f"{op}: query of shape {query.shape} and key of shape {key.shape} "
                         f"differ in the feature dim")
    q, k = query.to(dt.float32), key.to(dt.float32)
    if enable_gqa and query.ndim >= 3:
        k = _repeat_heads(k, const_int(query.st.dims[-3], op, "query heads"), op, "key")
    if scale is None:
        scale = 1.0 / math.sqrt(const_int(query.st.dims[-1], op, "the feature dim"))
    scores = q.matmul(k.transpose(-2, -1)) * float(scale)
    if is_causal:
        scores = scores + _causal_bias(q.graph, q.st.dims[-2], k.st.dims[-2])
    elif attn_mask is not None:
        if attn_mask.dtype == dt.bool_:
            bias = neg_inf_where_false(attn_mask)
        else:
            bias = attn_mask.to(dt.float32)
        scores = scores + bias
    return scores, is_causal or attn_mask is not None
