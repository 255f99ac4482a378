"""Decoder-only language models of the Llama family as luminal.nn modules, built from a
Hugging Face model directory: Llama (2, 3, 3.1, 3.2) with grouped-query attention and Llama 3
rope scaling, and the members that differ from it in small ways (Mistral, Qwen2, Qwen3, Gemma,
Gemma 2, Gemma 3; their differences are read in decoder_config.py). Module names are Hugging
Face's, so checkpoint keys load unchanged. Not here: the decode loop (generation.py) or
tokenization (tokenizer.py)."""

from __future__ import annotations

import numpy as np

from .. import dtype as dt
from ..nn import functional as F
from ..nn.kv_cache import KVCache
from ..nn.layers import (Embedding, Linear, RMSNorm, activations_for, check_activations,
                         weight_for)
from ..nn.module import Module, ModuleList
from ..nn.rotary import RotaryEmbedding
from ..nn.transformer import TransformerDecoderLayer
from ..runtime import _from_storage, _to_storage
from .config import open_pretrained, weights_dtype
from .decoder_config import SLIDING, DecoderConfig

LlamaConfig = DecoderConfig  # the name it had when only Llama was read

_ACTIVATIONS = {"silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}


def _rounded(value: float, dtype) -> float:
    """``value`` rounded to ``dtype``, as Gemma rounds its embedding scale to the weights'."""
    return float(_from_storage(_to_storage(np.array([value], np.float32), dtype), dtype)[0])


def _decoder_layer(c: DecoderConfig, i: int, dtype) -> TransformerDecoderLayer:
    attention = dict(qk_norm=c.rms_norm_eps if c.qk_norm else None, scale=c.attention_scale,
                     softcap=c.attn_softcap, window=c.window(i),
                     fused_qkv=c.fused_projections)
    return TransformerDecoderLayer(
        c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size,
        c.head_dim, c.rms_norm_eps, c.qkv_bias, c.mlp_bias, dtype, out_bias=c.o_bias,
        norm_offset=c.norm_offset, activation=_ACTIVATIONS[c.hidden_act],
        sandwich_norms=c.sandwich_norms, attention=attention, fused_mlp=c.fused_projections)


class LlamaModel(Module):
    def __init__(self, c: DecoderConfig, max_context: int, dtype=dt.float32):
        super().__init__()
        self.config = c
        self.embed_tokens = Embedding(c.vocab_size, c.hidden_size, dtype)
        self.layers = ModuleList(_decoder_layer(c, i, dtype) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps, dtype, c.norm_offset)
        self.rotary_emb = c.rotary_embedding(max_context)
        if c.sliding_rope is not None:  # Gemma 3's windowed layers
            self.rotary_emb_local = c.rotary_embedding(max_context, SLIDING)

    def embed(self, ids):
        """Token ids (batch, s) -> the first layer's input (batch, s, hidden)."""
        x = self.embed_tokens(ids)
        if self.config.embed_scale != 1.0:
            x = x * _rounded(self.config.embed_scale, self.embed_tokens.weight.dtype)
        return x

    def rope_for(self, i: int):
        """Layer ``i``'s rotary embedding (Gemma 3's windowed layers have their own)."""
        c = self.config
        local = c.layer_types[i] == SLIDING and c.sliding_rope is not None
        return self.rotary_emb_local if local else self.rotary_emb

    def run_layers(self, x, caches, layers):
        """``x`` through the layers at the indices ``layers`` (a range), each with its cache
        (``caches`` in the same order): all of them, or a pipeline stage's."""
        for i, cache in zip(layers, caches):
            x = self.layers[i](x, rope=self.rope_for(i), cache=cache)
        return x

    def forward(self, ids, caches):
        return self.norm(self.run_layers(self.embed(ids), caches, range(len(self.layers))))


class LlamaForCausalLM(Module):
    """ids (batch, s) int32 + one KVCache per layer -> logits (batch, s or 1, vocab). Any
    model_type of decoder_config.FAMILIES (AutoModelForCausalLM is this class)."""

    def __init__(self, config: DecoderConfig, max_context: int | None = None, dtype=dt.float32):
        super().__init__()
        self.config = config
        self.max_context = min(max_context or config.max_position_embeddings,
                               config.max_position_embeddings)
        self.model = LlamaModel(config, self.max_context, dtype)
        if not config.tie_word_embeddings:
            self.lm_head = Linear(config.hidden_size, config.vocab_size, False, dtype)
        self.weights = None
        self.activations = "f32"  # of a tied head (activations_for), as its Linears'
        self.dtype = dt.to_dtype(dtype)
        self.search_step = "decode"  # where a session's search times it (_set_activations)

    def make_caches(self, graph, batch=1, past="p", layers=None):
        """A KVCache per layer, or per layer of ``layers`` (a range: a pipeline stage's)."""
        c = self.config
        layers = range(c.num_hidden_layers) if layers is None else layers
        return [KVCache(graph, batch, c.num_key_value_heads, c.head_dim, past, f"layers.{i}")
                for i in layers]

    def forward(self, ids, caches, last_only: bool = False):
        return self.head(self.model(ids, caches), last_only, normed=True)

    def head(self, h, last_only: bool = False, normed: bool = False, lm_head=None):
        """The last layer's output (batch, s, hidden) -> logits: the final norm (unless
        ``normed``), the last position only where ``last_only``, the LM head (``lm_head``
        where given: a tensor-parallel rank's rows of it), soft-capping."""
        if not normed:
            h = self.model.norm(h)
        if last_only:
            h = h[:, -1:]
        if lm_head is not None:
            logits = lm_head(h)
        elif self.config.tie_word_embeddings:
            w = self.model.embed_tokens.weight
            logits = activations_for(h, w, self.activations) @ weight_for(w, h).t()
        else:
            logits = self.lm_head(h)
        cap = self.config.final_softcap
        return logits if cap is None else (logits * (1.0 / cap)).tanh() * cap

    @classmethod
    def from_pretrained(cls, model_dir, max_context: int | None = 4096, dtype=None,
                        activations: str = "f32"):
        """Config and lazily mapped weights of a Hugging Face directory of a Llama-family model
        (its model_type one of decoder_config.FAMILIES). Weights keep their file dtype (f32,
        f16 or bf16) unless ``dtype`` says otherwise. ``activations`` 'bf16' multiplies each
        bf16 matrix with its input rounded to bf16, as a bf16 model does in transformers (the
        CPU then multiplies bf16 pairs where the machine can); 'f32' (the default) with its
        input as is."""
        model_dir, config, weights = open_pretrained(model_dir, DecoderConfig)
        if dtype is None:
            dtype = weights_dtype(weights, "model.embed_tokens.weight")
        model = cls(config, max_context, dt.to_dtype(dtype))
        model.weights = weights
        model.model_dir = model_dir
        model._set_activations(activations, "from_pretrained")
        return model

    def _set_activations(self, activations: str, where: str) -> None:
        """Every Linear's ``activations`` (nn.layers.activations_for). bf16 activations of a
        bf16 model make the search time a prefill (generation.search_dims_of): its GEMMs of bf16 dot products
        decode as fast as the GEMVs a decode step would pick, and prefill far faster."""
        self.activations = check_activations(activations, where)
        rounds = activations == "bf16" and self.dtype == dt.bfloat16
        self.search_step = "prefill" if rounds else "decode"
        for _, module in self.named_modules():
            if isinstance(module, Linear):
                module.activations = activations

    @classmethod
    def from_gguf(cls, path, max_context: int | None = 4096, dtype=None,
                  activations: str = "q8_0"):
        """A llama.cpp GGUF file. Matrices keep their file's 16-bit or quantized dtype
        (F16/BF16/Q8_0/Q4_0/Q4_K/Q5_K/Q6_K, memory-mapped; other block types the `gguf` package
        knows are read as F16, with a warning), and the graph widens them where it reads them
        (a Cast to f32). ``activations`` 'q8_0' (the default) multiplies each quantized
        matrix with the Q8_0 round trip of its input, as llama.cpp does
        (F.quantize_activations, which the CPU runs as int8 dot products); 'f32' with its
        input as is (closer to the f32 model, slower)."""
        from ..weights.gguf import load_gguf
        from .llama_gguf import GGUFLlamaWeights, config_dict

        f = load_gguf(path)
        config = DecoderConfig.from_dict(config_dict(f), f"{path}: GGUF metadata")
        model = cls(config, max_context, dt.to_dtype(dtype or dt.float32))
        if "rope_freqs.weight" in f:  # Llama 3.1 scaling as per-frequency divisors
            inv_freq = config.inv_freq() / f["rope_freqs.weight"].astype(np.float32)
            model.model.rotary_emb = RotaryEmbedding(config.head_dim, model.max_context,
                                                     inv_freq.astype(np.float32))
        model.weights = GGUFLlamaWeights(f, config.num_attention_heads,
                                         config.num_key_value_heads)
        for name, p in model.named_parameters():
            if name not in model.weights or len(p.shape) != 2:
                continue
            stored = model.weights.file_dtype(name)
            if dt.is_quantized(stored) or stored in (dt.float16, dt.bfloat16):
                p.dtype = stored
        model._set_activations(activations, "from_gguf")
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


AutoModelForCausalLM = LlamaForCausalLM
