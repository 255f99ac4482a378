"""Multi-head attention with grouped-query heads and a KV cache whose length is symbolic.

With a cache (kv_cache.py), the keys are two parts: the ``past`` cached positions, read in
place from the cache inputs, and this step's own. Attention takes both without joining them:
one softmax whose max and sum span the two parts, and the value sum of each part added. So
no step copies the cache, and a prefill (past = 0) and every decode step (s = 1) run the same
compiled program.
Not here: the cache's host memory and the generation loop (kv_cache.py, models/generation.py)."""

from __future__ import annotations

import math

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError
from . import masks
from .kv_cache import KVCache
from .layers import Linear, RMSNorm
from .module import Module


class MultiHeadAttention(Module):
    """softmax(q k^T / sqrt(head_dim) + bias) v over ``num_heads`` query heads that share
    ``num_kv_heads`` key/value heads (grouped-query attention; equal counts give MHA).
    Projections are named q_proj, k_proj, v_proj, o_proj (Hugging Face's Llama names).

    Options of the Llama family's members: ``qk_norm`` (an RMSNorm of that eps over each
    head's queries and keys before rope, q_norm / k_norm, scaled by ``norm_offset`` + w),
    ``scale`` in place of 1 / sqrt(head_dim), ``softcap`` (scores -> cap * tanh(scores / cap)
    before the mask) and ``window`` (with ``causal``, a query sees only the last ``window``
    keys, itself included), ``fused_qkv`` (one projection qkv_proj whose output is q, k and v
    side by side, as Phi-3 stores them), ``key_bias`` (k_proj's bias where it differs from
    ``bias``: Whisper's k_proj has none)."""

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int | None = None,
                 head_dim: int | None = None, bias: bool = False, out_bias: bool | None = None,
                 dtype=dt.float32, *, qk_norm: float | None = None, norm_offset: float = 0.0,
                 scale: float | None = None, softcap: float | None = None,
                 window: int | None = None, fused_qkv: bool = False,
                 key_bias: bool | None = None):
        super().__init__()
        num_kv_heads = num_kv_heads or num_heads
        if num_heads % num_kv_heads:
            raise ShapeError(f"MultiHeadAttention: {num_heads} heads are not a multiple of "
                             f"{num_kv_heads} kv heads")
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim or dim // num_heads
        self.scale = 1.0 / math.sqrt(self.head_dim) if scale is None else scale
        self.softcap = softcap
        self.window = window
        out_bias = bias if out_bias is None else out_bias
        self.fused_qkv = fused_qkv
        if fused_qkv:
            self.qkv_proj = Linear(dim, (num_heads + 2 * num_kv_heads) * self.head_dim, bias,
                                   dtype)
        else:
            self.q_proj = Linear(dim, num_heads * self.head_dim, bias, dtype)
            self.k_proj = Linear(dim, num_kv_heads * self.head_dim,
                                 bias if key_bias is None else key_bias, dtype)
            self.v_proj = Linear(dim, num_kv_heads * self.head_dim, bias, dtype)
        self.o_proj = Linear(num_heads * self.head_dim, dim, out_bias, dtype)
        if qk_norm is not None:
            self.q_norm = RMSNorm(self.head_dim, qk_norm, dtype, norm_offset)
            self.k_norm = RMSNorm(self.head_dim, qk_norm, dtype, norm_offset)
        self.qk_norm = qk_norm is not None

    def forward(self, x, rope=None, bias=None, cache: KVCache | None = None,
                causal: bool = False):
        """``x``: (batch, s, dim). ``bias``: additive mask broadcastable to (batch, heads,
        s, t) with t the key count. ``causal`` adds the causal mask (offset by the cache's
        past length). Returns (batch, s, dim)."""
        b, s = x.st.dims[0], x.st.dims[1]
        kvh, hd = self.num_kv_heads, self.head_dim
        rep = self.num_heads // kvh
        # q: (b, kvh, rep, s, hd); k, v: (b, kvh, s, hd). Query head j uses kv head j // rep.
        q, k, v = self._project(x)
        q = q.reshape(b, s, kvh, rep, hd)
        k = k.reshape(b, s, kvh, hd)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.permute(0, 2, 3, 1, 4)
        k = k.permute(0, 2, 1, 3)
        v = v.reshape(b, s, kvh, hd).permute(0, 2, 1, 3)
        past = cache.past if cache is not None else Expr(0)
        if rope is not None:
            q = rope(q, past)
            k = rope(k, past)
        new_bias = masks.causal_bias(x.graph, s, Expr(0), self.window) if causal else None
        if bias is not None:
            bias = self._grouped(bias)
        parts = []  # (keys, values, additive bias or None), each (b, kvh, t_part, hd)
        if cache is not None:
            cache.add(k, v)
            past_k, past_v = cache.cached()
            split = bias is not None and not _is_one(bias.st.dims[-1])
            past_bias = bias[..., :past] if split else bias
            if causal and self.window is not None:  # cached keys out of the window
                past_bias = _add_bias(past_bias, masks.key_range_bias(x.graph, s, past, 0, past,
                                                                      self.window))
            parts.append((past_k, past_v, past_bias))
            bias = bias[..., past:] if split else bias
        parts.append((k, v, _add_bias(new_bias, bias)))
        out = self._attend(q, parts)  # (b, kvh, rep, s, hd)
        out = out.permute(0, 3, 1, 2, 4).reshape(b, s, self.num_heads * hd)
        return self.o_proj(out)

    def _project(self, x):
        """q (b, s, heads * hd), k and v (b, s, kv_heads * hd)."""
        if not self.fused_qkv:
            return self.q_proj(x), self.k_proj(x), self.v_proj(x)
        qd, kd = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        qkv = self.qkv_proj(x)
        return qkv[..., :qd], qkv[..., qd:qd + kd], qkv[..., qd + kd:]

    def _attend(self, q, parts):
        """softmax(q k^T * scale + bias) v over the keys of every part taken together: the max
        and the sum of the exponentials span all parts, each part's values are summed on its
        own (one part: softmax(scores) @ v, as sdpa builds it). q: (b, kvh, rep, s, hd)."""
        scores = []
        for k, _, bias in parts:
            sc = (q @ k.unsqueeze(2).transpose(-1, -2)) * self.scale  # (b, kvh, rep, s, t)
            if self.softcap is not None:
                sc = (sc * (1.0 / self.softcap)).tanh() * self.softcap
            scores.append(sc if bias is None else sc + bias)
        top = scores[0].amax(-1, keepdim=True)
        for sc in scores[1:]:
            top = top.maximum(sc.amax(-1, keepdim=True))
        if len(parts) == 1:  # softmax(scores) @ v: the shape a fused attention kernel takes
            e = (scores[0] - top).exp()
            return (e / e.sum(-1, keepdim=True)) @ parts[0][1].unsqueeze(2)
        total, out = None, None
        for sc, (_, v, _) in zip(scores, parts):
            e = (sc - top).exp()
            part_sum, part_out = e.sum(-1, keepdim=True), e @ v.unsqueeze(2)
            total = part_sum if total is None else total + part_sum
            out = part_out if out is None else out + part_out
        return out / total

    def _grouped(self, bias):
        """A (…, heads or 1, s, t) bias laid out as the grouped scores (b, kvh, rep, s, t)."""
        while bias.ndim < 4:
            bias = bias.unsqueeze(0)
        heads = bias.shape[1]
        if heads == 1:
            return bias.unsqueeze(1)
        if heads != self.num_heads:
            raise ShapeError(f"attention bias of shape {bias.shape} has {heads} heads, the "
                             f"layer has {self.num_heads}")
        dims = bias.st.dims
        return bias.reshape(dims[0], self.num_kv_heads, heads // self.num_kv_heads,
                            dims[2], dims[3])


def _is_one(dim) -> bool:
    return dim.is_const() and dim.as_const() == 1


def _add_bias(a, b):
    if a is None or b is None:
        return a if b is None else b
    return a + b
