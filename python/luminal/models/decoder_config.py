"""The config of a decoder-only language model of the Llama family, read from a Hugging Face
config.json: Llama itself and the models that differ from it in small, documented ways —
Mistral (a sliding attention window), Qwen2 (q/k/v biases, windowed upper layers), Qwen3
(RMSNorm on each head's queries and keys), Gemma (scaled embeddings, (1 + w) norms, tanh GELU),
Gemma 2 (soft-capped scores and logits, norms around the attention and the MLP, alternating
windowed layers) and Gemma 3 (Gemma 2's layout with Qwen3's head norms and a rope base of its
own for the windowed layers). Each family's reader maps its keys onto DecoderConfig's fields;
every value is checked (ConfigValues). Not here: the modules (llama.py, nn/)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import WeightsError
from ..nn.rotary import default_inv_freq, llama3_inv_freq
from .config import ConfigValues

SLIDING, FULL = "sliding_attention", "full_attention"


@dataclass
class RopeConfig:
    """Rotary frequencies: base ``theta`` and an optional scaling (None, "linear": positions
    divided by ``factor``, or "llama3": Llama 3.1's banded scaling with its keys in
    ``params``)."""

    theta: float = 10000.0
    kind: str = "default"
    params: dict = field(default_factory=dict)

    def inv_freq(self, head_dim: int) -> np.ndarray:
        inv = default_inv_freq(head_dim, self.theta)
        if self.kind == "linear":
            return (inv / np.float32(self.params["factor"])).astype(np.float32)
        if self.kind == "llama3":
            p = self.params
            return llama3_inv_freq(inv, p["factor"], p["low_freq_factor"],
                                   p["high_freq_factor"], p["original_max_position_embeddings"])
        return inv


@dataclass
class DecoderConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    model_type: str = "llama"
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope: RopeConfig = field(default_factory=RopeConfig)
    # the windowed layers' rope where it differs (Gemma 3's local base), else None
    sliding_rope: RopeConfig | None = None
    tie_word_embeddings: bool = False
    qkv_bias: bool = False        # biases on q, k, v (Llama's attention_bias, Qwen2's always)
    o_bias: bool = False          # a bias on o_proj (Llama's attention_bias)
    mlp_bias: bool = False
    qk_norm: bool = False         # RMSNorm over each head's q and k before rope
    hidden_act: str = "silu"      # "silu" or "gelu_tanh", the SwiGLU gate's activation
    norm_offset: float = 0.0      # RMSNorm scales by (norm_offset + w): Gemma's 1
    embed_scale: float = 1.0      # embeddings times this (Gemma: sqrt(hidden_size))
    sandwich_norms: bool = False  # Gemma 2/3: norms after attention and around the MLP
    attention_scale: float | None = None  # default 1 / sqrt(head_dim)
    attn_softcap: float | None = None     # scores -> cap * tanh(scores / cap)
    final_softcap: float | None = None    # logits likewise
    sliding_window: int | None = None     # a windowed layer's query sees this many keys
    layer_types: list = field(default_factory=list)  # SLIDING or FULL, one per layer
    bos_token_id: int | None = None
    eos_token_id: list | None = None

    @classmethod
    def from_dict(cls, c: dict, source: str = "config.json") -> DecoderConfig:
        """The config of a config.json dict of any family in FAMILIES (by ``model_type``;
        Llama where it is missing); every value checked, with a WeightsError naming
        ``source`` and the key."""
        v = ConfigValues(c, source)
        kind = v.str("model_type", "llama")
        if kind not in FAMILIES:
            raise WeightsError(f"{source}: model_type {kind!r} is not supported (supported: "
                               f"{', '.join(sorted(FAMILIES))})")
        fields = _common(v, kind)
        FAMILIES[kind](v, fields)
        layers = fields["num_hidden_layers"]
        if fields["sliding_window"] is None:
            fields["layer_types"] = [FULL] * layers
        elif len(fields["layer_types"]) != layers or \
                not set(fields["layer_types"]) <= {SLIDING, FULL}:
            raise WeightsError(f"{source}: 'layer_types' must list {layers} of "
                               f"{SLIDING!r} / {FULL!r}, got {fields['layer_types']!r}")
        return cls(**fields)

    def inv_freq(self, layer_type: str = FULL) -> np.ndarray:
        rope = self.sliding_rope if layer_type == SLIDING and self.sliding_rope else self.rope
        return rope.inv_freq(self.head_dim)

    def window(self, layer: int) -> int | None:
        """The attention window of layer ``layer`` (None: it sees every earlier key)."""
        return self.sliding_window if self.layer_types[layer] == SLIDING else None


def _common(v: ConfigValues, kind: str) -> dict:
    """The keys every family shares, in Llama's meaning."""
    heads = v.int("num_attention_heads")
    hidden = v.int("hidden_size")
    kv_heads = v.int("num_key_value_heads", heads)
    v.divides("num_attention_heads", heads, "num_key_value_heads", kv_heads)
    head_dim = v.int("head_dim", None)
    if head_dim is None:
        v.divides("hidden_size", hidden, "num_attention_heads", heads)
        head_dim = hidden // heads
    bias = v.bool("attention_bias", False)
    return dict(
        vocab_size=v.int("vocab_size"), hidden_size=hidden,
        intermediate_size=v.int("intermediate_size"),
        num_hidden_layers=v.int("num_hidden_layers"), num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim, model_type=kind,
        max_position_embeddings=v.int("max_position_embeddings", 2048),
        rms_norm_eps=v.float("rms_norm_eps", 1e-6), rope=_rope(v, v.section("rope_parameters",
                                                                           "rope_scaling")),
        tie_word_embeddings=v.bool("tie_word_embeddings", False), qkv_bias=bias, o_bias=bias,
        mlp_bias=v.bool("mlp_bias", False), sliding_window=None, layer_types=[],
        bos_token_id=v.int("bos_token_id", None, minimum=0),
        eos_token_id=v.token_ids("eos_token_id"),
    )


def _rope(v: ConfigValues, section: ConfigValues | None, theta_key: str = "rope_theta",
          theta: float = 10000.0) -> RopeConfig:
    """A rope from ``section`` (rope_parameters or rope_scaling), its base from the section or
    ``theta_key`` of the config."""
    theta = v.float(theta_key, theta)
    if section is None:
        return RopeConfig(theta)
    theta = section.float("rope_theta", theta)
    kind = section.str("rope_type", section.str("type", "default"))
    if kind == "default":
        return RopeConfig(theta)
    if kind == "linear":
        return RopeConfig(theta, kind, {"factor": section.float("factor")})
    if kind == "llama3":
        return RopeConfig(theta, kind, {
            "factor": section.float("factor"), "low_freq_factor": section.float("low_freq_factor"),
            "high_freq_factor": section.float("high_freq_factor"),
            "original_max_position_embeddings": section.int("original_max_position_embeddings")})
    raise WeightsError(f"{section.source}: rope scaling of type {kind!r} is not supported "
                       f"(default, linear and llama3 are)")


def _window(v: ConfigValues, f: dict, default_types) -> None:
    """The sliding window and which layers use it: config.json's layer_types, else
    ``default_types(layers)``."""
    f["sliding_window"] = v.int("sliding_window", None)
    if f["sliding_window"] is None:
        return
    types = v.values.get("layer_types")
    f["layer_types"] = list(types) if isinstance(types, list) else \
        default_types(f["num_hidden_layers"])
    if types is not None and not isinstance(types, list):
        raise WeightsError(f"{v.source}: 'layer_types' is {types!r}, it must be a list")


def _llama(v: ConfigValues, f: dict) -> None:
    pass


def _mistral(v: ConfigValues, f: dict) -> None:
    _window(v, f, lambda n: [SLIDING] * n)


def _qwen(v: ConfigValues, f: dict) -> None:
    """Qwen2 and Qwen3: the window only with use_sliding_window, on layers from
    max_window_layers up."""
    if f["model_type"] == "qwen2":
        f["qkv_bias"], f["o_bias"] = True, False
    else:
        f["qk_norm"] = True
    if not v.bool("use_sliding_window", False):
        return
    first = v.int("max_window_layers", 28, minimum=0)
    _window(v, f, lambda n: [SLIDING if i >= first else FULL for i in range(n)])


def _gemma(v: ConfigValues, f: dict) -> None:
    """Gemma 1/2/3: tanh GELU, (1 + w) norms, sqrt(hidden) embeddings; 2 and 3 add the
    sandwich norms, the query_pre_attn_scalar scale, soft-caps and windowed layers (every
    other one in Gemma 2, five of six in Gemma 3), 3 the head norms and a local rope."""
    act = v.str("hidden_activation", v.str("hidden_act", "gelu_pytorch_tanh"))
    if act not in ("gelu_pytorch_tanh", "gelu"):  # Gemma's "gelu" means the tanh form
        raise WeightsError(f"{v.source}: hidden activation {act!r} is not supported for "
                           f"{f['model_type']} (gelu_pytorch_tanh is)")
    f.update(hidden_act="gelu_tanh", norm_offset=1.0,
             embed_scale=math.sqrt(f["hidden_size"]), tie_word_embeddings=v.bool(
                 "tie_word_embeddings", True))
    if f["model_type"] == "gemma":
        return
    f.update(sandwich_norms=True,
             attention_scale=v.float("query_pre_attn_scalar", 256.0) ** -0.5,
             attn_softcap=v.float("attn_logit_softcapping", None),
             final_softcap=v.float("final_logit_softcapping", None))
    if f["model_type"] == "gemma2":
        _window(v, f, lambda n: [SLIDING if i % 2 == 0 else FULL for i in range(n)])
        return
    f["qk_norm"] = True
    if v.bool("use_bidirectional_attention", False):
        raise WeightsError(f"{v.source}: bidirectional Gemma 3 attention is not supported")
    pattern = v.int("sliding_window_pattern", v.int("_sliding_window_pattern", 6))
    _window(v, f, lambda n: [SLIDING if (i + 1) % pattern else FULL for i in range(n)])
    rope = v.section("rope_parameters")
    if rope is not None and rope.section(FULL) is not None:  # one rope per layer type
        f["rope"] = _rope(v, rope.section(FULL), theta=1e6)
        f["sliding_rope"] = _rope(v, rope.section(SLIDING), theta=1e4)
    else:
        f["rope"] = _rope(v, v.section("rope_scaling"), theta=1e6)
        f["sliding_rope"] = RopeConfig(v.float("rope_local_base_freq", 1e4))


# model_type -> the reader of the keys its family adds to or reads differently from Llama's
FAMILIES = {"llama": _llama, "mistral": _mistral, "qwen2": _qwen, "qwen3": _qwen,
            "gemma": _gemma, "gemma2": _gemma, "gemma3_text": _gemma}
