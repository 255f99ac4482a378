"""Whisper speech recognition (encoder-decoder) as luminal.nn modules, built from a Hugging
Face directory: a convolutional stem and pre-norm encoder over a 30 s log-mel window, a
pre-norm decoder with causal self-attention (KV cache) and cross-attention to the encoder.

Two compiled programs: the encoder runs once per window and also outputs every decoder
layer's cross-attention keys and values; the decoder program (symbolic "s" new tokens after
"p" cached ones) serves every step and reads those keys and values as inputs, so no step
recomputes them. Module names are Hugging Face's (but self_attn's out_proj, our o_proj).
Not here: audio decoding and features (audio.py), text <-> ids (tokenizer.py)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError, WeightsError
from ..graph import Graph
from ..nn import functional as F
from ..nn.attention import MultiHeadAttention
from ..nn.kv_cache import KVCache, KVCacheBuffers
from ..nn.layers import Conv1d, Embedding, LayerNorm, Linear, weight_for
from ..nn.module import Module, ModuleList
from ..runtime import NativeRuntime
from .config import ConfigValues, open_pretrained, read_json, weights_dtype
from .generation import run_cached_step


@dataclass
class WhisperConfig:
    vocab_size: int
    num_mel_bins: int
    d_model: int
    encoder_layers: int
    encoder_attention_heads: int
    encoder_ffn_dim: int
    decoder_layers: int
    decoder_attention_heads: int
    decoder_ffn_dim: int
    max_source_positions: int = 1500
    max_target_positions: int = 448
    scale_embedding: bool = False
    decoder_start_token_id: int = 50257
    eos_token_id: int | None = 50256

    @classmethod
    def from_dict(cls, c: dict, source: str = "Whisper config.json") -> WhisperConfig:
        """The config of a config.json dict, every value checked (WeightsError naming
        ``source`` and the key)."""
        v = ConfigValues(c, source)
        eos = v.token_ids("eos_token_id")
        cfg = cls(v.int("vocab_size"), v.int("num_mel_bins"), v.int("d_model"),
                  v.int("encoder_layers"), v.int("encoder_attention_heads"),
                  v.int("encoder_ffn_dim"), v.int("decoder_layers"),
                  v.int("decoder_attention_heads"), v.int("decoder_ffn_dim"),
                  v.int("max_source_positions", 1500), v.int("max_target_positions", 448),
                  v.bool("scale_embedding", False), v.int("decoder_start_token_id", 50257, 0),
                  eos[0] if eos else None)
        v.divides("d_model", cfg.d_model, "encoder_attention_heads", cfg.encoder_attention_heads)
        v.divides("d_model", cfg.d_model, "decoder_attention_heads", cfg.decoder_attention_heads)
        if v.str("activation_function", "gelu") != "gelu":
            raise WeightsError(f"{source}: activation_function "
                               f"{c['activation_function']!r} is not supported (gelu is)")
        return cfg

    @property
    def input_frames(self) -> int:
        """Mel frames of one window: the stem's second conv halves them."""
        return 2 * self.max_source_positions


class WhisperCrossAttention(Module):
    """Attention of the decoder's queries to the encoder's keys and values, which
    ``keys_values`` computes once per window."""

    def __init__(self, dim: int, heads: int, dtype):
        super().__init__()
        self.heads = heads
        self.q_proj = Linear(dim, dim, True, dtype)
        self.k_proj = Linear(dim, dim, False, dtype)
        self.v_proj = Linear(dim, dim, True, dtype)
        self.out_proj = Linear(dim, dim, True, dtype)

    def _heads(self, x):
        """(b, t, dim) -> (b, heads, t, head_dim)."""
        b, t, d = x.st.dims
        return x.reshape(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def keys_values(self, memory):
        return self._heads(self.k_proj(memory)), self._heads(self.v_proj(memory))

    def forward(self, x, k, v):
        b, s, d = x.st.dims
        out = F.scaled_dot_product_attention(self._heads(self.q_proj(x)), k, v)
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(b, s, d))


class WhisperEncoderLayer(Module):
    def __init__(self, dim: int, heads: int, ffn: int, dtype):
        super().__init__()
        self.self_attn = MultiHeadAttention(dim, heads, bias=True, key_bias=False, dtype=dtype)
        self.self_attn_layer_norm = LayerNorm(dim, dtype=dtype)
        self.fc1 = Linear(dim, ffn, True, dtype)
        self.fc2 = Linear(ffn, dim, True, dtype)
        self.final_layer_norm = LayerNorm(dim, dtype=dtype)

    def forward(self, x):
        x = x + self.self_attn(self.self_attn_layer_norm(x))
        return x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))


class WhisperDecoderLayer(WhisperEncoderLayer):
    def __init__(self, dim: int, heads: int, ffn: int, dtype):
        super().__init__(dim, heads, ffn, dtype)
        self.encoder_attn = WhisperCrossAttention(dim, heads, dtype)
        self.encoder_attn_layer_norm = LayerNorm(dim, dtype=dtype)

    def forward(self, x, cache, cross_k, cross_v):
        x = x + self.self_attn(self.self_attn_layer_norm(x), cache=cache, causal=True)
        x = x + self.encoder_attn(self.encoder_attn_layer_norm(x), cross_k, cross_v)
        return x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))


class WhisperEncoder(Module):
    def __init__(self, c: WhisperConfig, dtype):
        super().__init__()
        d = c.d_model
        self.conv1 = Conv1d(c.num_mel_bins, d, 3, padding=1, dtype=dtype)
        self.conv2 = Conv1d(d, d, 3, stride=2, padding=1, dtype=dtype)
        self.embed_positions = Embedding(c.max_source_positions, d, dtype)
        self.layers = ModuleList(WhisperEncoderLayer(d, c.encoder_attention_heads,
                                                     c.encoder_ffn_dim, dtype)
                                 for _ in range(c.encoder_layers))
        self.layer_norm = LayerNorm(d, dtype=dtype)

    def forward(self, features):
        x = F.gelu(self.conv2(F.gelu(self.conv1(features)))).permute(0, 2, 1)
        x = x + weight_for(self.embed_positions.weight, x)
        for layer in self.layers:
            x = layer(x)
        return self.layer_norm(x)


class WhisperDecoder(Module):
    def __init__(self, c: WhisperConfig, dtype):
        super().__init__()
        d = c.d_model
        self.config = c
        self.embed_tokens = Embedding(c.vocab_size, d, dtype)
        self.embed_positions = Embedding(c.max_target_positions, d, dtype)
        self.layers = ModuleList(WhisperDecoderLayer(d, c.decoder_attention_heads,
                                                     c.decoder_ffn_dim, dtype)
                                 for _ in range(c.decoder_layers))
        self.layer_norm = LayerNorm(d, dtype=dtype)

    def forward(self, ids, caches, cross):
        s = ids.st.dims[1]
        x = self.embed_tokens(ids)
        if self.config.scale_embedding:
            x = x * float(np.sqrt(self.config.d_model))
        positions = ids.graph.iota(Expr("z") + caches[0].past, s)
        x = x + self.embed_positions(positions).unsqueeze(0)
        for layer, cache, (k, v) in zip(self.layers, caches, cross):
            x = layer(x, cache, k, v)
        return self.layer_norm(x)


class WhisperModel(Module):
    def __init__(self, c: WhisperConfig, dtype):
        super().__init__()
        self.encoder = WhisperEncoder(c, dtype)
        self.decoder = WhisperDecoder(c, dtype)


class WhisperForConditionalGeneration(Module):
    """``encode``: features (batch, mels, frames) -> each decoder layer's cross-attention
    keys and values; ``decode``: ids (batch, s) after the caches' ``p`` positions -> logits
    (batch, s or 1, vocab). The output projection is the token embedding (tied), unless the
    checkpoint holds a proj_out of its own."""

    def __init__(self, config: WhisperConfig, dtype=dt.float32, tied: bool = True):
        super().__init__()
        self.config = config
        self.max_context = config.max_target_positions
        self.model = WhisperModel(config, dtype)
        if not tied:
            self.proj_out = Linear(config.d_model, config.vocab_size, False, dtype)
        self.tied = tied
        self.weights = None

    def encode(self, features):
        if not self._named:
            self._name_tree()
        memory = self.model.encoder(features)
        return [layer.encoder_attn.keys_values(memory) for layer in self.model.decoder.layers]

    def cross_inputs(self, graph, batch):
        """Graph inputs of the cross-attention keys and values the decoder reads."""
        c = self.config
        heads = c.decoder_attention_heads
        shape = (batch, heads, c.max_source_positions, c.d_model // heads)
        return [(graph.tensor(shape, dt.float32, f"layers.{i}.cross_k"),
                 graph.tensor(shape, dt.float32, f"layers.{i}.cross_v"))
                for i in range(c.decoder_layers)]

    def make_caches(self, graph, batch=1, past="p"):
        c = self.config
        heads = c.decoder_attention_heads
        return [KVCache(graph, batch, heads, c.d_model // heads, past, f"layers.{i}")
                for i in range(c.decoder_layers)]

    def decode(self, ids, caches, cross, last_only: bool = False):
        if not self._named:
            self._name_tree()
        h = self.model.decoder(ids, caches, cross)
        if last_only:
            h = h[:, -1:]
        if self.tied:
            return h @ weight_for(self.model.decoder.embed_tokens.weight, h).t()
        return self.proj_out(h)

    @classmethod
    def from_pretrained(cls, model_dir, dtype=None):
        """Config and lazily mapped weights of a Hugging Face Whisper directory."""
        model_dir, config, weights = open_pretrained(model_dir, WhisperConfig, hf_to_luminal)
        if dtype is None:
            dtype = weights_dtype(weights, "model.decoder.embed_tokens.weight")
        model = cls(config, dt.to_dtype(dtype), tied="proj_out.weight" not in weights)
        model.weights = weights
        model.model_dir = model_dir
        return model

    def load_weights(self, runtime, weights=None) -> None:
        """Sets, on ``runtime``, the weights its program (encoder or decoder) uses."""
        weights = weights if weights is not None else self.weights
        self.load_state_dict(runtime, weights, strict=False)


_SELF_OUT = re.compile(r"\.self_attn\.out_proj\.")


def hf_to_luminal(key: str):
    """A Hugging Face Whisper checkpoint key as our module name (self-attention's out_proj is
    o_proj here)."""
    return _SELF_OUT.sub(".self_attn.o_proj.", key)


def _generation_config(model_dir) -> dict:
    path = os.path.join(str(model_dir), "generation_config.json")
    return read_json(path) if os.path.exists(path) else {}


class WhisperSession:
    """``model`` compiled as two programs on runtimes of ``runtime``'s class (its encoder
    and its decoder), weights set once. ``encode(features)`` binds a window's cross keys and
    values; ``step(ids)`` runs decoder tokens after the cached ones and returns logits."""

    def __init__(self, model: WhisperForConditionalGeneration, runtime=None, search: int = 1,
                 batch: int = 1):
        self.model = model
        self.batch = batch
        c = model.config
        runtime = runtime if runtime is not None else NativeRuntime()
        make = type(runtime)

        enc = Graph()
        self.features = enc.tensor((batch, c.num_mel_bins, c.input_frames), dt.float32,
                                   "input_features")
        self.cross_out = [(k.output(), v.output()) for k, v in model.encode(self.features)]
        self.encoder_runtime = enc.search(make(), search)
        model.load_weights(self.encoder_runtime)

        dec = Graph()
        self.ids = dec.tensor((batch, "s"), dt.int32, "decoder_input_ids")
        self.caches = model.make_caches(dec, batch, "p")
        self.cross_in = model.cross_inputs(dec, batch)
        self.logits = model.decode(self.ids, self.caches, self.cross_in, last_only=True).output()
        dec.set_dim("s", 1)
        dec.set_dim("p", min(16, c.max_target_positions - 1))
        self.runtime = dec.search(runtime, search)
        model.load_weights(self.runtime)
        self.cache_buffers = KVCacheBuffers(self.caches, c.max_target_positions)

    @property
    def past(self) -> int:
        return self.cache_buffers.length

    def reset(self) -> None:
        """Empties the decoder's caches (the window's cross keys and values stay)."""
        self.cache_buffers.reset()

    def encode(self, features) -> None:
        """Runs the encoder on ``features`` (batch, mels, frames) or (mels, frames) and hands
        its cross keys and values to the decoder; empties the caches."""
        c = self.model.config
        features = np.asarray(features, np.float32)
        if features.ndim == 2:
            features = features[None]
        want = (self.batch, c.num_mel_bins, c.input_frames)
        if features.shape != want:
            raise ShapeError(f"encode: features must be {want} (batch, mel bins, frames), got "
                             f"{features.shape}")
        rt = self.encoder_runtime
        # the decoder's runtime first, as generate holds it: one order, no deadlock
        with self.runtime.sequence(), rt.sequence():
            rt.set_data(self.features, features)
            rt.execute({})
            for (k_out, v_out), (k_in, v_in) in zip(self.cross_out, self.cross_in):
                self.runtime.set_data(k_in, rt.get(k_out))
                self.runtime.set_data(v_in, rt.get(v_out))
            self.reset()

    def step(self, ids) -> np.ndarray:
        """Runs decoder tokens ``ids`` (batch, s) after the cached ones; returns the last
        position's logits (batch, 1, vocab)."""
        c = self.model.config
        return run_cached_step(self, ids, c.vocab_size, c.max_target_positions)

    def generate(self, features, prompt_ids=None, max_new_tokens: int = 64,
                 suppress=(), begin_suppress=()) -> list:
        """Greedy decoding of one window: the prompt (default: the decoder start token),
        then tokens until end of text or ``max_new_tokens``. ``suppress`` ids never come;
        ``begin_suppress`` ids not first. Returns the new ids (end of text excluded). Other
        threads' calls on this session wait until it is done."""
        with self.runtime.sequence():
            return self._generate(features, prompt_ids, max_new_tokens, suppress,
                                  begin_suppress)

    def _generate(self, features, prompt_ids, max_new_tokens, suppress, begin_suppress):
        c = self.model.config
        self.encode(features)
        chunk = list(prompt_ids) if prompt_ids else [c.decoder_start_token_id]
        room = c.max_target_positions - len(chunk)
        vocab = c.vocab_size
        suppress = [t for t in suppress if 0 <= t < vocab]
        begin_suppress = [t for t in begin_suppress if 0 <= t < vocab]
        out = []
        for i in range(min(max_new_tokens, room)):
            logits = self.step(np.array([chunk], np.int32))[0, -1].astype(np.float64)
            logits[list(suppress)] = -np.inf
            if i == 0:
                logits[list(begin_suppress)] = -np.inf
            token = int(np.argmax(logits))
            if token == c.eos_token_id:
                break
            out.append(token)
            chunk = [token]
        return out

    def detect_language(self, features, language_ids) -> int:
        """The id among ``language_ids`` the decoder ranks first after the start token."""
        with self.runtime.sequence():
            self.encode(features)
            logits = self.step(np.array([[self.model.config.decoder_start_token_id]],
                                        np.int32))
        ids = list(language_ids)
        return ids[int(np.argmax(logits[0, -1, ids]))]

    def transcribe(self, audio, model_dir, language: str | None = None,
                   task: str = "transcribe", max_new_tokens: int = 128) -> list:
        """Token ids of 16 kHz ``audio``, window by 30 s window, with the prompt and
        suppressions of ``model_dir``'s generation config (transcription_prompt)."""
        from .audio import CHUNK_SECONDS, SAMPLE_RATE, log_mel_spectrogram

        audio = np.asarray(audio, np.float32).reshape(-1)
        mels = self.model.config.num_mel_bins
        window = CHUNK_SECONDS * SAMPLE_RATE
        windows = [log_mel_spectrogram(audio[start:start + window], mels)
                   for start in range(0, max(len(audio), 1), window)]
        prompt, suppress, begin = transcription_prompt(
            model_dir, language, task, lambda ids: self.detect_language(windows[0], ids))
        tokens = []
        for features in windows:
            tokens += self.generate(features, prompt, max_new_tokens, suppress, begin)
        return tokens


def transcription_prompt(model_dir, language: str | None = None, task: str = "transcribe",
                         detect=None):
    """(prompt ids, suppressed ids, ids suppressed first) from a directory's
    generation_config.json, as Hugging Face's generate forces them: start of transcript, then
    for a multilingual model the language (``language``, else ``detect(language ids)`` picks
    one) and the task, then no timestamps. Without a generation config: the start token."""
    g = _generation_config(model_dir)
    start = g.get("decoder_start_token_id")
    if not isinstance(start, int):
        return None, [], []
    prompt = [start]
    langs, tasks = g.get("lang_to_id") or {}, g.get("task_to_id") or {}
    if g.get("is_multilingual") and langs:
        if language is None:
            prompt.append(detect(sorted(langs.values())) if detect else langs["<|en|>"])
        elif f"<|{language}|>" in langs:
            prompt.append(langs[f"<|{language}|>"])
        else:
            names = ", ".join(k.strip("<|>") for k in sorted(langs))
            raise ShapeError(f"language {language!r} is not one of the model's ({names})")
        if task not in tasks:
            raise ShapeError(f"task {task!r} is not one of the model's ({', '.join(tasks)})")
        prompt.append(tasks[task])
    notimestamps = g.get("no_timestamps_token_id")
    if isinstance(notimestamps, int):
        prompt.append(notimestamps)
    return prompt, list(g.get("suppress_tokens") or []), list(g.get("begin_suppress_tokens") or [])
