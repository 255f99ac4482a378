"""Llama from a llama.cpp GGUF file: the config from its ``llama.*`` metadata, its tensor
names (blk.N.attn_q, ...) mapped onto Hugging Face's, and the rows of the q/k projections put
back in Hugging Face's rotate-half order (llama.cpp stores them interleaved; quantized rows are
whole blocks, so their raw rows are reordered the same way). Quantized tensors stay quantized;
a ``rope_freqs`` tensor (Llama 3.1 scaling) divides the frequencies.
Not here: the GGUF format itself (weights/gguf.py)."""

from __future__ import annotations

import re

import numpy as np

from ..errors import WeightsError
from ..weights.gguf import GGUFFile
from ..weights.renamed import RenamedWeights

_GLOBAL = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_LAYER = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_BLOCK = re.compile(r"^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$")


def hf_name(gguf_name: str):
    """The Hugging Face name of a llama.cpp tensor name; None for tensors that are not
    weights of the model (rope_freqs is read into the config instead)."""
    if gguf_name in _GLOBAL:
        return _GLOBAL[gguf_name]
    m = _BLOCK.match(gguf_name)
    if m and m.group(2) in _LAYER:
        return f"model.layers.{m.group(1)}.{_LAYER[m.group(2)]}.{m.group(3)}"
    return None


def gguf_name(hf: str):
    """hf_name's inverse: the llama.cpp name of a Hugging Face tensor name (None: none)."""
    for gguf, name in _GLOBAL.items():
        if name == hf:
            return gguf
    m = re.match(r"^model\.layers\.(\d+)\.(.+)\.(weight|bias)$", hf)
    for short, module in _LAYER.items():
        if m and m.group(2) == module:
            return f"blk.{m.group(1)}.{short}.{m.group(3)}"
    return None


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's convert permute (unpermute's inverse): per head, halves (x0, x1, ..., y0,
    y1, ...) to interleaved rows (x0, y0, x1, y1, ...)."""
    rows = w.shape[0]
    return np.ascontiguousarray(
        w.reshape(heads, 2, rows // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Inverse of llama.cpp's convert permute: per head, interleaved (x0, y0, x1, y1, ...)
    rows back to halves (x0, x1, ..., y0, y1, ...)."""
    rows = w.shape[0]
    return np.ascontiguousarray(
        w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


def config_dict(f: GGUFFile) -> dict:
    """A Hugging Face style config.json dict from the GGUF's llama.* metadata."""
    md = f.metadata
    arch = md.get("general.architecture")
    if arch != "llama":
        raise WeightsError(f"{f.path}: GGUF architecture {arch!r} is not 'llama'")

    def need(key):
        if f"llama.{key}" not in md:
            raise WeightsError(f"{f.path}: GGUF metadata lacks 'llama.{key}'")
        return md[f"llama.{key}"]

    heads = need("attention.head_count")
    hidden = need("embedding_length")
    vocab = md.get("llama.vocab_size") or len(md.get("tokenizer.ggml.tokens", [])) or \
        f.shape("token_embd.weight")[0]
    return {
        "vocab_size": vocab, "hidden_size": hidden,
        "intermediate_size": need("feed_forward_length"),
        "num_hidden_layers": need("block_count"), "num_attention_heads": heads,
        "num_key_value_heads": md.get("llama.attention.head_count_kv", heads),
        "head_dim": md.get("llama.rope.dimension_count"),  # None: hidden // heads
        "max_position_embeddings": md.get("llama.context_length", 2048),
        "rms_norm_eps": md.get("llama.attention.layer_norm_rms_epsilon", 1e-5),
        "rope_theta": md.get("llama.rope.freq_base", 10000.0),
        "tie_word_embeddings": "output.weight" not in f,
        "bos_token_id": md.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": md.get("tokenizer.ggml.eos_token_id"),
    }


class GGUFLlamaWeights(RenamedWeights):
    """The tensors of a llama GGUF under Hugging Face names (hf_name), q/k rows un-permuted."""

    def __init__(self, f: GGUFFile, heads: int, kv_heads: int):
        super().__init__(f, hf_name)
        self._heads = {"self_attn.q_proj.weight": heads, "self_attn.k_proj.weight": kv_heads}

    def _heads_of(self, name: str):
        for suffix, heads in self._heads.items():
            if name.endswith(suffix):
                return heads
        return None

    def file_dtype(self, name: str):
        """The luminal dtype tensor ``name`` is stored in (quantized ones included)."""
        return self._weights.file_dtype(self.file_key(name))

    def storage(self, name: str):
        raw = super().storage(name)
        heads = self._heads_of(name)
        if heads is None:
            return raw
        array, dtype = raw
        return unpermute(array, heads), dtype  # reordered on read: a copy

    def __getitem__(self, name):
        array = super().__getitem__(name)
        heads = self._heads_of(name)
        return array if heads is None else unpermute(array, heads)
