"""Text generation on a compiled causal LM: one program (symbolic sequence length "s" and
past length "p") serves the prefill and every decode step; each step reads the KV caches in
place and appends its own rows to them (nn/kv_cache.py). Greedy or temperature/top-p sampling with a seed,
tokens streamed as they come, time to first token and tokens/s measured.
Not here: the model (llama.py) or text <-> ids (tokenizer.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import dtype as dt
from ..errors import ShapeError
from ..graph import Graph
from ..nn.kv_cache import KVCacheBuffers
from ..runtime import NativeRuntime


# The cached positions of the decode step a session's search is timed at (capped by the
# model's context): a short conversation's worth, so attention over the cache weighs as it does
# in a typical step, while the step stays cheap enough to check and time.
DECODE_CONTEXT = 256


# The prompt a session's search is timed at when its model asks for a prefill (search_step).
PREFILL_TOKENS = 128


def decode_dims(model) -> dict:
    """The dims of a typical decode step of ``model``: one new token (s = 1) after
    DECODE_CONTEXT cached ones (p), or fewer where the model's context is shorter."""
    limit = getattr(model, "max_context", None)
    past = DECODE_CONTEXT if limit is None else max(0, min(DECODE_CONTEXT, limit - 1))
    return {"s": 1, "p": past}


def prefill_dims(model) -> dict:
    """The dims of a prompt of PREFILL_TOKENS (fewer where the context is shorter), none
    cached."""
    limit = getattr(model, "max_context", None)
    return {"s": PREFILL_TOKENS if limit is None else max(1, min(PREFILL_TOKENS, limit)),
            "p": 0}


def search_dims_of(model) -> dict:
    """Where a session's search times ``model``: its ``search_step`` ("decode", the default,
    or "prefill"). One program serves both steps, and the search times one of them. A decode
    step is most of generation's time, and its kernels also serve a prompt where the
    matrices are streamed either way (f32 and quantized weights: on a 2-layer Llama-1B shape,
    the program searched at a prefill decodes 2-11% slower and prefills no faster). A bf16
    model whose activations are rounded to bf16 has GEMMs of bf16 dot products on packed
    weights that decode as fast as its GEMVs but prefill ten times faster than them, which a
    search at decode never sees: it asks for the prefill (llama.py's _set_activations)."""
    step = getattr(model, "search_step", "decode")
    return prefill_dims(model) if step == "prefill" else decode_dims(model)


class CachedSession:
    """What the sessions over KV caches share (CausalLMSession, PipelineSession): the caches'
    length and their reset."""

    @property
    def past(self) -> int:
        """The positions the caches hold."""
        return self.cache_buffers.length

    def reset(self) -> None:
        """Empties the caches (a new conversation)."""
        self.cache_buffers.reset()


class CausalLMSession(CachedSession):
    """``model`` (a Module taking ids and caches, with ``make_caches``) compiled on
    ``runtime``, its weights set once. ``step(ids)`` runs a chunk and returns its logits.

    One program serves the prefill and every decode step; its search (``search``: the
    candidates timed) binds the symbols to ``search_dims``, by default the model's step
    (search_dims_of: a decode step unless the model asks for a prefill)."""

    def __init__(self, model, runtime=None, search: int = 1, batch: int = 1,
                 all_logits: bool = False, weights=None, search_dims: dict | None = None):
        self.model = model
        self.batch = batch
        cx = Graph()
        self.graph = cx
        self.ids = cx.tensor((batch, "s"), dt.int32, "input_ids")
        self.caches = model.make_caches(cx, batch, "p")
        self.logits = model(self.ids, self.caches, last_only=not all_logits).output()
        for name, value in (search_dims_of(model) if search_dims is None else search_dims).items():
            cx.set_dim(name, value)
        runtime = runtime if runtime is not None else NativeRuntime()
        self.runtime = cx.search(runtime, search)
        model.load_weights(self.runtime, weights)
        self.cache_buffers = KVCacheBuffers(self.caches, getattr(model, "max_context", None))

    def _vocab_size(self) -> int | None:
        config = getattr(self.model, "config", None)
        return getattr(config, "vocab_size", None)

    def step(self, ids) -> np.ndarray:
        """Runs ``ids`` (batch, s) after what the caches hold; returns logits (batch, s or 1,
        vocab) as float32 and extends the caches."""
        return run_cached_step(self, ids, self._vocab_size(),
                               getattr(self.model, "max_context", None))


def check_step_ids(ids, batch: int, vocab: int | None, past: int,
                   limit: int | None) -> np.ndarray:
    """Token ``ids`` as a (batch, s) int32 array, checked against the batch, the vocabulary
    and the context ``limit`` after ``past`` cached positions (ShapeError naming what is
    wrong)."""
    ids = np.asarray(ids, dtype=np.int32)
    if ids.ndim == 1:
        ids = ids[None, :]
    if ids.ndim != 2 or ids.shape[0] != batch or ids.shape[1] == 0:
        raise ShapeError(f"step: ids must be (batch={batch}, s >= 1), got {ids.shape}")
    if vocab is not None and (ids.min() < 0 or ids.max() >= vocab):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        raise ShapeError(f"step: token id {bad} is out of range for the model's vocabulary "
                         f"of {vocab} (a tokenizer that does not match the model?)")
    if limit is not None and past + ids.shape[1] > limit:
        raise ShapeError(f"step: {past} cached + {ids.shape[1]} new tokens exceed the "
                         f"context of {limit}")
    return ids


def run_cached_step(session, ids, vocab: int | None, limit: int | None) -> np.ndarray:
    """Runs token ``ids`` (batch, s) on ``session`` (its runtime, ids input, logits output
    and cache_buffers) after the positions its caches hold, checked against the vocabulary
    and the context ``limit``; returns the logits and extends the caches."""
    past = session.cache_buffers.length
    ids = check_step_ids(ids, session.batch, vocab, past, limit)
    rt = session.runtime
    with rt.sequence():  # callers in other threads wait their turn
        rt.set_data(session.ids, ids)
        session.cache_buffers.bind(rt)
        rt.execute({"s": int(ids.shape[1]), "p": past})
        session.cache_buffers.append(rt, int(ids.shape[1]))
        return rt.get(session.logits)


@dataclass
class Sampler:
    """Greedy when ``temperature`` is 0; else softmax(logits / temperature), cut to the
    smallest set of tokens whose probability reaches ``top_p``, sampled with ``seed``."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self):
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"Sampler: temperature must be >= 0 and top_p in (0, 1], got "
                             f"{self.temperature}, {self.top_p}")
        self.rng = np.random.default_rng(self.seed)

    def __call__(self, logits: np.ndarray) -> int:
        logits = np.asarray(logits, dtype=np.float64).reshape(-1)
        if self.temperature == 0:
            return int(np.argmax(logits))
        z = logits / self.temperature
        p = np.exp(z - z.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        cumulative = np.cumsum(p[order])
        keep = order[:int(np.searchsorted(cumulative, self.top_p) + 1)]
        q = p[keep] / p[keep].sum()
        return int(keep[self.rng.choice(len(keep), p=q)])


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    new_tokens: int = 0
    time_to_first_token: float = 0.0  # seconds: prefill plus the first sample
    decode_seconds: float = 0.0       # time for the tokens after the first

    @property
    def tokens_per_second(self) -> float:
        after_first = self.new_tokens - 1
        return after_first / self.decode_seconds if after_first > 0 and self.decode_seconds else 0.0


def generate(session: CausalLMSession, prompt_ids, max_new_tokens: int = 32,
             sampler: Sampler | None = None, eos_token_ids=(),
             stats: GenerationStats | None = None):
    """Yields new token ids one by one: a prefill of ``prompt_ids`` then KV-cache decode
    steps, until ``max_new_tokens`` or an end-of-sequence token (which is yielded too).
    Fills ``stats`` as it goes. Holds the session's runtime until the generator ends (or is
    closed): other threads' calls on it wait, so their steps do not interleave with its
    caches."""
    with session.runtime.sequence():
        yield from _generate(session, prompt_ids, max_new_tokens, sampler, eos_token_ids,
                             stats)


def _generate(session, prompt_ids, max_new_tokens, sampler, eos_token_ids, stats):
    sampler = sampler or Sampler()
    stats = stats if stats is not None else GenerationStats()
    prompt = [int(t) for t in prompt_ids]
    if not prompt:
        raise ShapeError("generate: the prompt is empty")
    session.reset()
    stats.prompt_tokens = len(prompt)
    chunk = prompt
    for i in range(max_new_tokens):
        start = time.perf_counter()  # the consumer's time between tokens is not counted
        logits = session.step(np.array([chunk], np.int32))
        token = sampler(logits[0, -1])
        elapsed = time.perf_counter() - start
        if i == 0:
            stats.time_to_first_token = elapsed
        else:
            stats.decode_seconds += elapsed
        stats.new_tokens = i + 1
        yield token
        if token in eos_token_ids:
            return
        chunk = [token]
