"""Multi-head attention with grouped-query heads and a KV cache whose length is symbolic.

The cache of one layer is a pair of graph inputs (batch, kv_heads, past, head_dim) with
``past`` a symbol; the layer concatenates the new keys/values to them and marks the result
as outputs, which the caller feeds back as the next step's inputs. So a prefill (past = 0)
and every decode step (s = 1) run the same compiled program.
Not here: the host-side loop that moves caches between steps (models/generation.py)."""

from __future__ import annotations

import math

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError
from ..hl_ops.joining import cat
from . import masks
from .layers import Linear
from .module import Module


class KVCache:
    """One layer's cache: inputs ``k``, ``v`` and, after the forward pass, outputs
    ``k_out``, ``v_out`` of shape (batch, kv_heads, past + s, head_dim)."""

    def __init__(self, graph, batch, kv_heads: int, head_dim: int, past="p", name: str = "kv"):
        self.k = graph.tensor((batch, kv_heads, past, head_dim), dt.float32, f"{name}.k_cache")
        self.v = graph.tensor((batch, kv_heads, past, head_dim), dt.float32, f"{name}.v_cache")
        self.k_out = None
        self.v_out = None

    @property
    def past(self) -> Expr:
        return self.k.st.dims[2]


class MultiHeadAttention(Module):
    """softmax(q k^T / sqrt(head_dim) + bias) v over ``num_heads`` query heads that share
    ``num_kv_heads`` key/value heads (grouped-query attention; equal counts give MHA).
    Projections are named q_proj, k_proj, v_proj, o_proj (Hugging Face's Llama names)."""

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int | None = None,
                 head_dim: int | None = None, bias: bool = False, out_bias: bool | None = None,
                 dtype=dt.float32):
        super().__init__()
        num_kv_heads = num_kv_heads or num_heads
        if num_heads % num_kv_heads:
            raise ShapeError(f"MultiHeadAttention: {num_heads} heads are not a multiple of "
                             f"{num_kv_heads} kv heads")
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim or dim // num_heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        out_bias = bias if out_bias is None else out_bias
        self.q_proj = Linear(dim, num_heads * self.head_dim, bias, dtype)
        self.k_proj = Linear(dim, num_kv_heads * self.head_dim, bias, dtype)
        self.v_proj = Linear(dim, num_kv_heads * self.head_dim, bias, dtype)
        self.o_proj = Linear(num_heads * self.head_dim, dim, out_bias, dtype)

    def forward(self, x, rope=None, bias=None, cache: KVCache | None = None,
                causal: bool = False):
        """``x``: (batch, s, dim). ``bias``: additive mask broadcastable to (batch, heads,
        s, t) with t the key count. ``causal`` adds the causal mask (offset by the cache's
        past length). Returns (batch, s, dim)."""
        b, s = x.st.dims[0], x.st.dims[1]
        kvh, hd = self.num_kv_heads, self.head_dim
        rep = self.num_heads // kvh
        # q: (b, kvh, rep, s, hd); k, v: (b, kvh, s, hd). Query head j uses kv head j // rep.
        q = self.q_proj(x).reshape(b, s, kvh, rep, hd).permute(0, 2, 3, 1, 4)
        k = self.k_proj(x).reshape(b, s, kvh, hd).permute(0, 2, 1, 3)
        v = self.v_proj(x).reshape(b, s, kvh, hd).permute(0, 2, 1, 3)
        past = cache.past if cache is not None else Expr(0)
        if rope is not None:
            q = rope(q, past)
            k = rope(k, past)
        if cache is not None:
            k = cat([cache.k, k], 2).output()
            v = cat([cache.v, v], 2).output()
            cache.k_out, cache.v_out = k, v
        scores = (q @ k.unsqueeze(2).transpose(-1, -2)) * self.scale  # (b, kvh, rep, s, t)
        if causal:
            scores = scores + masks.causal_bias(x.graph, s, past)
        if bias is not None:
            scores = scores + self._grouped(bias)
        probs = scores.softmax(-1)
        out = probs @ v.unsqueeze(2)  # (b, kvh, rep, s, hd)
        out = out.permute(0, 3, 1, 2, 4).reshape(b, s, self.num_heads * hd)
        return self.o_proj(out)

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
