"""The config of a decoder-only language model of the Llama family, read from a Hugging Face
config.json: Llama itself and the models that differ from it in small, documented ways —
Mistral (a sliding attention window), Qwen2 (q/k/v biases, windowed upper layers), Qwen3
(RMSNorm on each head's queries and keys), Phi-3 (fused q/k/v and gate/up projections,
longrope, a partial rotary factor), Gemma (scaled embeddings, (1 + w) norms, tanh GELU),
Gemma 2 (soft-capped scores and logits, norms around the attention and the MLP, alternating
windowed layers) and Gemma 3 (Gemma 2's layout with Qwen3's head norms and a rope base of its
own for the windowed layers). Each family's reader maps its keys onto DecoderConfig's fields;
every value is checked (ConfigValues). Not here: the modules (llama.py, nn/)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import WeightsError
from ..nn.rotary import RotaryEmbedding, default_inv_freq, llama3_inv_freq
from .config import ConfigValues

SLIDING, FULL = "sliding_attention", "full_attention"


@dataclass
class RopeConfig:
    """Rotary frequencies: base ``theta``, the fraction of each head's dims rotated, and an
    optional scaling (``kind`` "default": none; "linear": positions divided by ``factor``;
    "llama3": Llama 3.1's banded scaling; "longrope": Phi-3's per-frequency short and long
    factors and cos/sin scale; their keys in ``params``)."""

    theta: float = 10000.0
    kind: str = "default"
    params: dict = field(default_factory=dict)
    rotary_fraction: float = 1.0

    def inv_freq(self, head_dim: int, factors: str = "short_factor") -> np.ndarray:
        inv = default_inv_freq(int(head_dim * self.rotary_fraction), self.theta)
        p = self.params
        if self.kind == "linear":
            return (inv / np.float32(p["factor"])).astype(np.float32)
        if self.kind == "llama3":
            return llama3_inv_freq(inv, p["factor"], p["low_freq_factor"],
                                   p["high_freq_factor"], p["original_max_position_embeddings"])
        if self.kind == "longrope":
            return (inv / np.asarray(p[factors], np.float32)).astype(np.float32)
        return inv

    def embedding(self, head_dim: int, max_positions: int) -> RotaryEmbedding:
        if self.kind != "longrope":
            return RotaryEmbedding(head_dim, max_positions, self.inv_freq(head_dim))
        p = self.params
        return RotaryEmbedding(head_dim, max_positions, self.inv_freq(head_dim),
                               p["attention_factor"], self.inv_freq(head_dim, "long_factor"),
                               p["original_max_position_embeddings"])


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
    fused_projections: bool = False  # Phi-3's qkv_proj and gate_up_proj
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

    def rotary_embedding(self, max_positions: int, layer_type: str = FULL) -> RotaryEmbedding:
        rope = self.sliding_rope if layer_type == SLIDING and self.sliding_rope else self.rope
        return rope.embedding(self.head_dim, max_positions)

    def inv_freq(self) -> np.ndarray:
        return self.rope.inv_freq(self.head_dim)

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
        rms_norm_eps=v.float("rms_norm_eps", 1e-6),
        rope=_rope(v, v.section("rope_parameters", "rope_scaling"), head_dim),
        tie_word_embeddings=v.bool("tie_word_embeddings", False), qkv_bias=bias, o_bias=bias,
        mlp_bias=v.bool("mlp_bias", False), sliding_window=None, layer_types=[],
        bos_token_id=v.int("bos_token_id", None, minimum=0),
        eos_token_id=v.token_ids("eos_token_id"),
    )


def _rope(v: ConfigValues, section: ConfigValues | None, head_dim: int,
          theta: float = 10000.0) -> RopeConfig:
    """A rope from ``section`` (rope_parameters or rope_scaling), its base and rotary fraction
    from the section or else the config."""
    theta = v.float("rope_theta", theta)
    fraction = v.float("partial_rotary_factor", 1.0)
    if section is not None:
        theta = section.float("rope_theta", theta)
        fraction = section.float("partial_rotary_factor", fraction)
    if fraction > 1.0 or int(head_dim * fraction) % 2:
        raise WeightsError(f"{v.source}: 'partial_rotary_factor' {fraction} must rotate an even "
                           f"number of the {head_dim} dims of a head")
    kind = "default" if section is None else section.str("rope_type", section.str("type",
                                                                                    "default"))
    rope = RopeConfig(theta, "longrope" if kind == "su" else kind, {}, fraction)
    if kind == "linear":
        rope.params = {"factor": section.float("factor")}
    elif kind == "llama3":
        rope.params = {
            "factor": section.float("factor"), "low_freq_factor": section.float("low_freq_factor"),
            "high_freq_factor": section.float("high_freq_factor"),
            "original_max_position_embeddings": section.int("original_max_position_embeddings")}
    elif kind in ("longrope", "su"):
        rope.params = _longrope(v, section, int(head_dim * fraction) // 2)
    elif kind != "default":
        raise WeightsError(f"{section.source}: rope scaling of type {kind!r} is not supported "
                           f"(default, linear, llama3 and longrope are)")
    return rope


def _longrope(v: ConfigValues, section: ConfigValues, pairs: int) -> dict:
    """Phi-3's longrope keys: a factor per rotated pair, short and long, and the cos/sin scale
    (sqrt(1 + ln(factor) / ln(original context)), factor the context's growth)."""
    original = section.int("original_max_position_embeddings",
                           v.int("original_max_position_embeddings"))
    factor = section.float("factor", None) or v.int("max_position_embeddings") / original
    scale = section.float("attention_factor", None)
    if scale is None:
        scale = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    return {"short_factor": section.floats("short_factor", pairs),
            "long_factor": section.floats("long_factor", pairs),
            "original_max_position_embeddings": original, "attention_factor": scale}


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


def _phi3(v: ConfigValues, f: dict) -> None:
    """Phi-3: fused projections, a window on every layer where configured."""
    f["fused_projections"] = True
    _window(v, f, lambda n: [SLIDING] * n)


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
        f["rope"] = _rope(v, rope.section(FULL), f["head_dim"], theta=1e6)
        f["sliding_rope"] = _rope(v, rope.section(SLIDING), f["head_dim"], theta=1e4)
    else:
        f["rope"] = _rope(v, v.section("rope_scaling"), f["head_dim"], theta=1e6)
        f["sliding_rope"] = RopeConfig(v.float("rope_local_base_freq", 1e4))


# model_type -> the reader of the keys its family adds to or reads differently from Llama's
FAMILIES = {"llama": _llama, "mistral": _mistral, "phi3": _phi3, "qwen2": _qwen, "qwen3": _qwen,
            "gemma": _gemma, "gemma2": _gemma, "gemma3_text": _gemma}
