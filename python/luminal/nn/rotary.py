"""Rotary position embeddings (RoPE) in Hugging Face's rotate-half layout, with Llama 3's
frequency scaling. The cos/sin tables are computed once on the host (float32, as HF does)
and live in the graph as buffers; a forward pass reads rows past .. past + s of them, a pure
view, so one compiled program serves every position."""

from __future__ import annotations

import math

import numpy as np

from .._core import Expr
from ..errors import ShapeError
from ..hl_ops.joining import cat
from .module import Buffer, Module


def default_inv_freq(head_dim: int, base: float) -> np.ndarray:
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    return (np.float32(1.0) / (np.float32(base) ** exponents)).astype(np.float32)


def llama3_inv_freq(inv_freq: np.ndarray, factor: float, low_freq_factor: float,
                    high_freq_factor: float, original_max_position_embeddings: int) -> np.ndarray:
    """Llama 3.1's scaling: long wavelengths slowed by ``factor``, short ones kept, the band
    between smoothly interpolated."""
    old = float(original_max_position_embeddings)
    low_wavelen = old / low_freq_factor
    high_wavelen = old / high_freq_factor
    wavelen = np.float32(2 * math.pi) / inv_freq
    scaled = np.where(wavelen > low_wavelen, inv_freq / np.float32(factor), inv_freq)
    smooth = (old / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * scaled / np.float32(factor) + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled).astype(np.float32)


def rotate_half(x):
    half = x.shape[-1] // 2
    return cat([-x[..., half:], x[..., :half]], -1)


class RotaryEmbedding(Module):
    """Applies RoPE to (..., seq, head_dim) tensors at positions past .. past + seq.

    ``inv_freq`` has one frequency per pair of rotated dims: fewer than head_dim / 2 rotate
    only the first dims (a partial rotary factor), the rest pass unchanged. With
    ``long_inv_freq``, positions from ``long_from`` on use those frequencies instead (Phi-3's
    longrope: short factors within the original context, long ones past it)."""

    def __init__(self, head_dim: int, max_positions: int, inv_freq: np.ndarray,
                 attention_scaling: float = 1.0, long_inv_freq: np.ndarray | None = None,
                 long_from: int | None = None):
        super().__init__()
        self.rotary_dim = 2 * len(inv_freq)
        if head_dim % 2 or self.rotary_dim > head_dim:
            raise ShapeError(f"RotaryEmbedding: head_dim {head_dim} must be even and hold the "
                             f"{self.rotary_dim} rotated dims")
        self.head_dim = head_dim
        self.max_positions = max_positions
        positions = np.arange(max_positions, dtype=np.float32)
        freqs = np.outer(positions, inv_freq.astype(np.float32)).astype(np.float32)
        if long_inv_freq is not None and long_from is not None and long_from < max_positions:
            freqs[long_from:] = np.outer(positions[long_from:],
                                         long_inv_freq.astype(np.float32)).astype(np.float32)
        emb = np.concatenate([freqs, freqs], axis=-1)
        self.cos = Buffer((np.cos(emb) * np.float32(attention_scaling)).astype(np.float32))
        self.sin = Buffer((np.sin(emb) * np.float32(attention_scaling)).astype(np.float32))

    def forward(self, x, past=0):
        """``x``: (..., s, head_dim); ``past``: positions before this chunk (int or Expr)."""
        s = x.st.dims[-2]
        past = past if isinstance(past, Expr) else Expr(past)
        cos = self.cos.tensor(x.graph).slice_axis(0, past, past + s)
        sin = self.sin.tensor(x.graph).slice_axis(0, past, past + s)
        if self.rotary_dim < self.head_dim:
            rot, rest = x[..., :self.rotary_dim], x[..., self.rotary_dim:]
            return cat([rot * cos + rotate_half(rot) * sin, rest], -1)
        return x * cos + rotate_half(x) * sin
