"""Every luminal.nn module in one import: ``from luminal.nn.modules import Linear, ...``.
The definitions live in module.py, layers.py, mlp.py, rotary.py, attention.py and
transformer.py, one concept each."""

from .attention import KVCache, MultiHeadAttention
from .layers import Conv1d, Conv2d, Embedding, LayerNorm, Linear, RMSNorm
from .mlp import MLP, SwiGLU
from .module import Buffer, Module, ModuleList, Parameter
from .rotary import RotaryEmbedding, default_inv_freq, llama3_inv_freq
from .transformer import TransformerDecoderLayer, TransformerEncoderLayer

__all__ = [
    "Buffer", "Conv1d", "Conv2d", "Embedding", "KVCache", "LayerNorm", "Linear", "MLP", "Module",
    "ModuleList", "MultiHeadAttention", "Parameter", "RMSNorm", "RotaryEmbedding", "SwiGLU",
    "TransformerDecoderLayer", "TransformerEncoderLayer", "default_inv_freq", "llama3_inv_freq",
]
