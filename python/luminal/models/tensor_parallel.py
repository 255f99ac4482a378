"""Tensor parallelism (Megatron-style) for decoder-only LMs over a luminal.distributed
Communicator: each rank holds 1/tp of every layer's heads (q, k, v by heads, their KV caches
too) and of its MLP (gate and up by rows), o_proj and down_proj by their input columns, so each
block's output is a partial sum all-reduced across the ranks; the LM head by vocabulary rows,
its logits all-gathered. A rank runs each half-layer as its own program (the all-reduce falls
between them; identical layers compile once, from the caches) and adds the residuals on the
host. Each rank reads only its slices of the weights."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from .. import dtype as dt
from ..errors import ShapeError
from ..graph import Graph
from ..nn.kv_cache import KVCacheBuffers
from ..nn.layers import Linear
from ..runtime import NativeRuntime, Runtime
from ..weights.pages import release_pages
from .generation import check_step_ids, search_dims_of
from .pipeline import agree_on_the_model

# Parameters split by their output rows (heads, MLP features), and by their input columns.
_ROWS = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
_COLUMNS = ("o_proj", "down_proj")


def shard_config(c, tp: int):
    """Config ``c`` of one rank of ``tp``: 1/tp of the heads, KV heads and MLP features (a
    ShapeError where they do not divide, or for what the split does not cover yet)."""
    for what, n in (("attention heads", c.num_attention_heads),
                    ("key/value heads", c.num_key_value_heads),
                    ("MLP features", c.intermediate_size), ("vocabulary", c.vocab_size)):
        if n % tp:
            raise ShapeError(f"tensor parallel: tp={tp} does not divide the model's {n} {what}")
    unsupported = [n for n, on in (("fused projections", c.fused_projections),
                                   ("an o_proj bias", c.o_bias), ("MLP biases", c.mlp_bias),
                                   ("sandwich norms", c.sandwich_norms)) if on]
    if unsupported:
        raise ShapeError(f"tensor parallel: a model with {', '.join(unsupported)} is not split "
                         f"yet")
    return dataclasses.replace(c, num_attention_heads=c.num_attention_heads // tp,
                               num_key_value_heads=c.num_key_value_heads // tp,
                               intermediate_size=c.intermediate_size // tp)


class ShardedWeights(Mapping):
    """A checkpoint's tensors as rank ``rank`` of ``tp`` holds them: the row-split projections'
    rows (views of the file) and the column-split ones' columns (copies) of this rank, every
    other tensor whole."""

    def __init__(self, weights, rank: int, tp: int):
        self.weights, self.rank, self.tp = weights, rank, tp
        self.source = getattr(weights, "source", "")

    def rows(self, array):
        """This rank's 1/tp of ``array``'s rows."""
        n = array.shape[0] // self.tp
        return array[self.rank * n:(self.rank + 1) * n]

    def _slice(self, name: str, array):
        parts = name.split(".")
        kind = parts[-2] if len(parts) >= 2 else ""
        if kind in _ROWS:
            return self.rows(array)
        if kind in _COLUMNS and parts[-1] == "weight":
            n = array.shape[1] // self.tp
            return array[:, self.rank * n:(self.rank + 1) * n]
        return array

    def __getitem__(self, name):
        return self._slice(name, np.asarray(self.weights[name]))

    def storage(self, name):
        """(this rank's part of the stored tensor, its dtype). A column split is copied out and
        the file's pages of the whole tensor let go (it was read once, for the copy)."""
        storage = getattr(self.weights, "storage", None)
        raw = storage(name) if storage is not None else None
        if raw is None:
            return None
        part = self._slice(name, raw[0])
        if not part.flags.c_contiguous:
            part = np.ascontiguousarray(part)
            release_pages(raw[0])
        return part, raw[1]

    def locate(self, name):
        locate = getattr(self.weights, "locate", None)
        return locate(name) if locate is not None else (self.source, name)

    def __iter__(self):
        return iter(self.weights.keys())

    def __len__(self) -> int:
        return len(self.weights.keys())

    def __contains__(self, name) -> bool:
        return name in self.weights


class TensorParallelSession:
    """``model`` (a LlamaForCausalLM) split by heads and features over ``comm``'s ranks, each
    half-layer compiled on a runtime from ``runtime`` (a class or a callable making one;
    searched with budget ``search``). ``step(ids)``, called on every rank with the same ids,
    returns the last position's logits (batch, 1, vocab) on every rank; a CausalLMSession's
    stand-in for generate()."""

    def __init__(self, model, comm, runtime=None, search: int = 1, batch: int = 1):
        from .llama import LlamaForCausalLM

        c = model.config
        tp, rank = comm.world_size, comm.rank
        agree_on_the_model(comm, model, batch)
        self.model, self.comm, self.batch = model, comm, batch
        self.vocab, self.hidden = c.vocab_size, c.hidden_size
        self.limit = getattr(model, "max_context", None)
        shard = LlamaForCausalLM(shard_config(c, tp), model.max_context, model.dtype)
        shard._set_activations(model.activations, "TensorParallelSession")
        weights = ShardedWeights(model.weights, rank, tp)
        if isinstance(runtime, Runtime):
            raise ShapeError("TensorParallelSession: give a runtime class or a function making "
                             "one (each half-layer's program holds a runtime of its own), not a "
                             "runtime")
        make = runtime or NativeRuntime
        dims = search_dims_of(model)
        inner = shard.model

        def program(build, *inputs_shapes):
            cx = Graph()
            inputs = [cx.tensor(shape, dtype, name) for name, shape, dtype in inputs_shapes]
            outputs, caches = build(cx, *inputs)
            for name, value in dims.items():
                cx.set_dim(name, value)
            rt = cx.search(make(), search)
            shard.load_state_dict(rt, weights, strict=False)  # what this program reads
            return rt, inputs, outputs, caches

        hidden = ("hidden", (batch, "s", c.hidden_size), dt.float32)
        self.embed = program(lambda cx, ids: ([inner.embed(ids).output()], []),
                             ("input_ids", (batch, "s"), dt.int32))
        self.attention, self.mlp = [], []
        for i, layer in enumerate(inner.layers):
            def attend(cx, x, i=i, layer=layer):
                caches = shard.make_caches(cx, batch, "p", range(i, i + 1))
                partial = layer.self_attn(layer.input_layernorm(x), rope=inner.rope_for(i),
                                          cache=caches[0], causal=True)
                return [partial.output()], caches
            self.attention.append(program(attend, hidden))
            self.mlp.append(program(
                lambda cx, h, layer=layer: ([layer.mlp(layer.post_attention_layernorm(h))
                                             .output()], []), hidden))
        head = Linear(c.hidden_size, c.vocab_size // tp, False, model.dtype)
        self.head = program(
            lambda cx, x: ([shard.head(x, last_only=True, lm_head=head).output()], []), hidden)
        self._set_head_rows(head, weights)
        self.layer_caches = [KVCacheBuffers(p[3], self.limit) for p in self.attention]
        self.runtime = self.embed[0]  # whose sequence() generate holds

    def _set_head_rows(self, head, weights: ShardedWeights) -> None:
        """This rank's rows of the LM head (of the embedding table where they are tied): a
        view of the file where it stores them in the head's dtype."""
        tied = self.model.config.tie_word_embeddings
        name = "model.embed_tokens.weight" if tied else "lm_head.weight"
        rt = self.head[0]
        storage = getattr(weights.weights, "storage", None)
        raw = storage(name) if storage is not None else None
        tensor = head.weight.bound_in(rt._graph)
        if raw is not None and raw[1] == head.weight.dtype:
            rt.set_storage(tensor, weights.rows(raw[0]))
        else:
            rt.set_data(tensor, weights.rows(np.asarray(weights.weights[name])))

    def runtimes(self) -> list:
        """Every program's runtime: the embedding's, each half-layer's, the head's."""
        return [p[0] for p in (self.embed, *self.attention, *self.mlp, self.head)]

    @property
    def past(self) -> int:
        return self.layer_caches[0].length

    def reset(self) -> None:
        for cache in self.layer_caches:
            cache.reset()

    def _run(self, program, values, dims, cache=None):
        rt, inputs, outputs, _ = program
        for t, v in zip(inputs, values):
            rt.set_data(t, v)
        if cache is not None:
            cache.bind(rt)
        rt.execute(dims)
        return np.asarray(rt.get(outputs[0]), np.float32)

    def step(self, ids) -> np.ndarray:
        ids = check_step_ids(ids, self.batch, self.vocab, self.past, self.limit)
        s = int(ids.shape[1])
        dims = {"s": s, "p": self.past}
        comm = self.comm
        x = self._run(self.embed, [ids], dims)
        for attn, mlp, cache in zip(self.attention, self.mlp, self.layer_caches):
            h = x + comm.all_reduce(self._run(attn, [x], dims, cache))
            cache.append(attn[0], s)
            x = h + comm.all_reduce(self._run(mlp, [h], dims))
        return comm.all_gather(self._run(self.head, [x], dims), axis=-1)
