"""Feed-forward blocks: MLP (Linear, activation, Linear; BERT's) and SwiGLU (Llama's
down(silu(gate(x)) * up(x))). Weight names follow Hugging Face's Llama for SwiGLU."""

from __future__ import annotations

from .. import dtype as dt
from . import functional as F
from .layers import Linear
from .module import Module


class MLP(Module):
    """fc2(activation(fc1(x))); ``activation`` is a function of a GraphTensor (exact GELU)."""

    def __init__(self, dim: int, hidden: int, activation=F.gelu, bias: bool = True,
                 dtype=dt.float32):
        super().__init__()
        self.fc1 = Linear(dim, hidden, bias, dtype)
        self.fc2 = Linear(hidden, dim, bias, dtype)
        self.activation = activation

    def forward(self, x):
        return self.fc2(self.activation(self.fc1(x)))


class SwiGLU(Module):
    """down(activation(gate(x)) * up(x)); ``activation``: SiLU (Llama's), or the tanh GELU for
    Gemma's GeGLU. ``fused``: gate and up as one projection gate_up_proj, gate's outputs first
    (Phi-3's)."""

    def __init__(self, dim: int, hidden: int, bias: bool = False, dtype=dt.float32,
                 activation=F.silu, fused: bool = False):
        super().__init__()
        self.hidden = hidden
        self.fused = fused
        if fused:
            self.gate_up_proj = Linear(dim, 2 * hidden, bias, dtype)
        else:
            self.gate_proj = Linear(dim, hidden, bias, dtype)
            self.up_proj = Linear(dim, hidden, bias, dtype)
        self.down_proj = Linear(hidden, dim, bias, dtype)
        self.activation = activation

    def forward(self, x):
        if self.fused:
            both = self.gate_up_proj(x)
            gate, up = both[..., :self.hidden], both[..., self.hidden:]
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.activation(gate) * up)
