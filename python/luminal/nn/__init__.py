"""luminal.nn: neural-network building blocks. ``luminal.nn.functional`` holds
torch.nn.functional's ops by the same names; the modules with parameters are re-exported here
from their files, one concept each: module.py (the Module base class, Parameter, Buffer,
ModuleList, Sequential), layers.py, dropout.py, mlp.py, rotary.py, attention.py, kv_cache.py,
transformer.py, similarity.py."""

from . import functional
from .attention import MultiHeadAttention
from .dropout import Dropout
from .kv_cache import KVCache, KVCacheBuffers
from .layers import BatchNorm2d, Conv1d, Conv2d, Embedding, LayerNorm, Linear, RMSNorm
from .mlp import MLP, SwiGLU
from .module import Buffer, Module, ModuleList, Parameter, Sequential
from .rotary import RotaryEmbedding, default_inv_freq, llama3_inv_freq
from .similarity import CosineSimilarity
from .transformer import TransformerDecoderLayer, TransformerEncoderLayer

__all__ = [
    "functional",
    "BatchNorm2d", "Buffer", "Conv1d", "Conv2d", "CosineSimilarity", "Dropout", "Embedding", "KVCache", "KVCacheBuffers", "LayerNorm", "Linear",
    "MLP", "Module", "ModuleList", "MultiHeadAttention", "Parameter", "RMSNorm", "RotaryEmbedding", "Sequential", "SwiGLU",
    "TransformerDecoderLayer", "TransformerEncoderLayer", "default_inv_freq", "llama3_inv_freq",
]
