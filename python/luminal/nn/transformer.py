"""Transformer blocks: the pre-norm decoder layer of Llama (RMSNorm, GQA attention with RoPE
and a KV cache, SwiGLU) and the post-norm encoder layer of BERT (attention with biases,
LayerNorm, GELU MLP). Weight names follow Hugging Face's Llama for the decoder."""

from __future__ import annotations

from .. import dtype as dt
from . import functional as F
from .attention import MultiHeadAttention
from .layers import LayerNorm, RMSNorm
from .mlp import MLP, SwiGLU
from .module import Module


class TransformerDecoderLayer(Module):
    """x + attn(norm(x)), then + mlp(norm(.)) — causal self-attention."""

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int, hidden: int,
                 head_dim: int | None = None, eps: float = 1e-6, attention_bias: bool = False,
                 mlp_bias: bool = False, dtype=dt.float32):
        super().__init__()
        self.self_attn = MultiHeadAttention(dim, num_heads, num_kv_heads, head_dim,
                                            attention_bias, dtype=dtype)
        self.mlp = SwiGLU(dim, hidden, mlp_bias, dtype)
        self.input_layernorm = RMSNorm(dim, eps, dtype)
        self.post_attention_layernorm = RMSNorm(dim, eps, dtype)

    def forward(self, x, rope=None, cache=None):
        h = x + self.self_attn(self.input_layernorm(x), rope=rope, cache=cache, causal=True)
        return h + self.mlp(self.post_attention_layernorm(h))


class TransformerEncoderLayer(Module):
    """norm1(x + attn(x)), then norm2(. + mlp(.)) — bidirectional, with an optional
    additive padding bias."""

    def __init__(self, dim: int, num_heads: int, hidden: int, eps: float = 1e-12,
                 activation=F.gelu, dtype=dt.float32):
        super().__init__()
        self.self_attn = MultiHeadAttention(dim, num_heads, bias=True, dtype=dtype)
        self.norm1 = LayerNorm(dim, eps, dtype=dtype)
        self.mlp = MLP(dim, hidden, activation, True, dtype)
        self.norm2 = LayerNorm(dim, eps, dtype=dtype)

    def forward(self, x, bias=None):
        h = self.norm1(x + self.self_attn(x, bias=bias))
        return self.norm2(h + self.mlp(h))
