"""Llama (2, 3, 3.1, 3.2) as luminal.nn modules, built from a Hugging Face model directory:
grouped-query attention, Llama 3 rope scaling, tied or untied embeddings. Module names are
Hugging Face's, so checkpoint keys load unchanged. Not here: the decode loop
(generation.py) or tokenization (tokenizer.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import dtype as dt
from ..errors import WeightsError
from ..nn.kv_cache import KVCache
from ..nn.layers import Embedding, Linear, RMSNorm, weight_for
from ..nn.module import Module, ModuleList
from ..nn.rotary import RotaryEmbedding, default_inv_freq, llama3_inv_freq
from ..nn.transformer import TransformerDecoderLayer
from ..weights.safetensors import load_safetensors
from .config import ConfigValues, read_config, weights_dtype


@dataclass
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    bos_token_id: int | None = None
    eos_token_id: list | None = None

    @classmethod
    def from_dict(cls, c: dict, source: str = "Llama config.json") -> LlamaConfig:
        """The config of a config.json dict; every value checked (types, ranges, head counts
        that divide), with a WeightsError naming ``source`` and the key."""
        v = ConfigValues(c, source)
        heads = v.int("num_attention_heads")
        hidden = v.int("hidden_size")
        kv_heads = v.int("num_key_value_heads", heads)
        v.divides("num_attention_heads", heads, "num_key_value_heads", kv_heads)
        head_dim = v.int("head_dim", None)
        if head_dim is None:
            v.divides("hidden_size", hidden, "num_attention_heads", heads)
            head_dim = hidden // heads
        rope = v.section("rope_parameters", "rope_scaling")
        theta = v.float("rope_theta", 10000.0)
        scaling = None
        if rope is not None:
            theta = rope.float("rope_theta", theta)
            kind = rope.str("rope_type", rope.str("type", "default"))
            if kind == "llama3":
                scaling = {"rope_type": kind, "factor": rope.float("factor"),
                           "low_freq_factor": rope.float("low_freq_factor"),
                           "high_freq_factor": rope.float("high_freq_factor"),
                           "original_max_position_embeddings":
                               rope.int("original_max_position_embeddings")}
            elif kind != "default":
                raise WeightsError(f"{rope.source}: rope scaling of type {kind!r} is not "
                                   f"supported (default and llama3 are)")
        return cls(
            vocab_size=v.int("vocab_size"), hidden_size=hidden,
            intermediate_size=v.int("intermediate_size"),
            num_hidden_layers=v.int("num_hidden_layers"), num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=head_dim,
            max_position_embeddings=v.int("max_position_embeddings", 2048),
            rms_norm_eps=v.float("rms_norm_eps", 1e-6), rope_theta=theta,
            rope_scaling=scaling,
            tie_word_embeddings=v.bool("tie_word_embeddings", False),
            attention_bias=v.bool("attention_bias", False), mlp_bias=v.bool("mlp_bias", False),
            bos_token_id=v.int("bos_token_id", None, minimum=0),
            eos_token_id=v.token_ids("eos_token_id"),
        )

    def inv_freq(self):
        inv = default_inv_freq(self.head_dim, self.rope_theta)
        if self.rope_scaling is None:
            return inv
        s = self.rope_scaling
        return llama3_inv_freq(inv, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                               s["original_max_position_embeddings"])


class LlamaModel(Module):
    def __init__(self, c: LlamaConfig, max_context: int, dtype=dt.float32):
        super().__init__()
        self.embed_tokens = Embedding(c.vocab_size, c.hidden_size, dtype)
        self.layers = ModuleList(
            TransformerDecoderLayer(c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
                                    c.intermediate_size, c.head_dim, c.rms_norm_eps,
                                    c.attention_bias, c.mlp_bias, dtype)
            for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps, dtype)
        self.rotary_emb = RotaryEmbedding(c.head_dim, max_context, c.inv_freq())

    def forward(self, ids, caches):
        x = self.embed_tokens(ids)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, rope=self.rotary_emb, cache=cache)
        return self.norm(x)


class LlamaForCausalLM(Module):
    """ids (batch, s) int32 + one KVCache per layer -> logits (batch, s or 1, vocab)."""

    def __init__(self, config: LlamaConfig, max_context: int | None = None, dtype=dt.float32):
        super().__init__()
        self.config = config
        self.max_context = min(max_context or config.max_position_embeddings,
                               config.max_position_embeddings)
        self.model = LlamaModel(config, self.max_context, dtype)
        if not config.tie_word_embeddings:
            self.lm_head = Linear(config.hidden_size, config.vocab_size, False, dtype)
        self.weights = None

    def make_caches(self, graph, batch=1, past="p"):
        c = self.config
        return [KVCache(graph, batch, c.num_key_value_heads, c.head_dim, past, f"layers.{i}")
                for i in range(c.num_hidden_layers)]

    def forward(self, ids, caches, last_only: bool = False):
        h = self.model(ids, caches)
        if last_only:
            h = h[:, -1:]
        if self.config.tie_word_embeddings:
            return h @ weight_for(self.model.embed_tokens.weight, h).t()
        return self.lm_head(h)

    @classmethod
    def from_pretrained(cls, model_dir, max_context: int | None = 4096, dtype=None):
        """Config and lazily mapped weights of a Hugging Face Llama directory. Weights keep
        their file dtype (f32, f16 or bf16) unless ``dtype`` says otherwise."""
        model_dir = str(model_dir)
        config = LlamaConfig.from_dict(read_config(model_dir),
                                       os.path.join(model_dir, "config.json"))
        weights = load_safetensors(model_dir)
        if dtype is None:
            dtype = weights_dtype(weights, "model.embed_tokens.weight")
        model = cls(config, max_context, dt.to_dtype(dtype))
        model.weights = weights
        model.model_dir = model_dir
        return model

    @classmethod
    def from_gguf(cls, path, max_context: int | None = 4096, dtype=None):
        """A llama.cpp GGUF file (F32/F16/BF16/Q8_0 tensors; Q8_0 dequantized to f32)."""
        from ..weights.gguf import load_gguf
        from .llama_gguf import GGUFLlamaWeights, config_dict

        f = load_gguf(path)
        config = LlamaConfig.from_dict(config_dict(f), f"{path}: GGUF metadata")
        model = cls(config, max_context, dt.to_dtype(dtype or dt.float32))
        if "rope_freqs.weight" in f:  # Llama 3.1 scaling as per-frequency divisors
            inv_freq = config.inv_freq() / f["rope_freqs.weight"].astype(np.float32)
            model.model.rotary_emb = RotaryEmbedding(config.head_dim, model.max_context,
                                                     inv_freq.astype(np.float32))
        model.weights = GGUFLlamaWeights(f, config.num_attention_heads,
                                         config.num_key_value_heads)
        model.model_dir = str(path)
        return model

    def load_weights(self, runtime, weights=None) -> None:
        """Sets the weights on ``runtime``. Ignored: an lm_head copy in a tied model's
        checkpoint, and the rotary inv_freq buffers older checkpoints carry."""
        weights = weights if weights is not None else self.weights
        ignore = {k for k in weights.keys() if k.endswith("rotary_emb.inv_freq")}
        if self.config.tie_word_embeddings:
            ignore.add("lm_head.weight")
        self.load_state_dict(runtime, weights, ignore=ignore)
