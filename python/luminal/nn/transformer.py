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
    """x + attn(norm(x)), then + mlp(norm(.)) — causal self-attention. With
    ``sandwich_norms`` (Gemma 2/3), x + norm(attn(norm(x))), then + norm(mlp(norm(.))).

    ``attention``: MultiHeadAttention's keyword options (qk_norm, scale, softcap, window);
    ``out_bias``: o_proj's bias (default: ``attention_bias``, Qwen2 has none);
    ``norm_offset``: every norm scales by offset + w (Gemma: 1); ``activation``: the MLP
    gate's; ``fused_mlp``: SwiGLU's gate_up_proj (Phi-3)."""

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int, hidden: int,
                 head_dim: int | None = None, eps: float = 1e-6, attention_bias: bool = False,
                 mlp_bias: bool = False, dtype=dt.float32, *, out_bias: bool | None = None,
                 norm_offset: float = 0.0, activation=F.silu, sandwich_norms: bool = False,
                 attention: dict | None = None, fused_mlp: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(dim, num_heads, num_kv_heads, head_dim,
                                            attention_bias, out_bias, dtype,
                                            norm_offset=norm_offset, **(attention or {}))
        self.mlp = SwiGLU(dim, hidden, mlp_bias, dtype, activation, fused_mlp)
        self.input_layernorm = RMSNorm(dim, eps, dtype, norm_offset)
        self.post_attention_layernorm = RMSNorm(dim, eps, dtype, norm_offset)
        self.sandwich_norms = sandwich_norms
        if sandwich_norms:
            self.pre_feedforward_layernorm = RMSNorm(dim, eps, dtype, norm_offset)
            self.post_feedforward_layernorm = RMSNorm(dim, eps, dtype, norm_offset)

    def forward(self, x, rope=None, cache=None):
        a = self.self_attn(self.input_layernorm(x), rope=rope, cache=cache, causal=True)
        if not self.sandwich_norms:
            h = x + a
            return h + self.mlp(self.post_attention_layernorm(h))
        h = x + self.post_attention_layernorm(a)
        return h + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(h)))


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
