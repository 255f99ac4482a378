"""Pipeline parallelism for decoder-only LMs: a model's layer stack split over the ranks of a
luminal.distributed Communicator, each rank compiling and holding only its stage (the first
also the embedding, the last the final norm and LM head), its hidden states passed to the next
rank and the last rank's logits broadcast to all, so every rank's decode loop (generate) sees
the same tokens. A long chunk (a prompt) runs in micro-batches of positions: while a stage
runs micro-batch i + 1 the next runs micro-batch i. Each rank loads only its stage's weights:
about 1/pp of the model's memory."""

from __future__ import annotations

import numpy as np

from .. import dtype as dt
from ..errors import ShapeError
from ..graph import Graph
from ..nn.kv_cache import KVCacheBuffers
from ..runtime import NativeRuntime
from .generation import CachedSession, check_step_ids, search_dims_of


def agree_on_the_model(comm, model, batch: int) -> None:
    """Every rank of ``comm`` split the same model for the same batch (else a ShapeError on
    all of them)."""
    c = model.config
    comm.agree((c.num_hidden_layers, c.hidden_size, c.vocab_size, batch),
               "the model (layers, hidden size, vocabulary) and the batch")


def stage_layers(layers: int, rank: int, world: int) -> range:
    """The layers stage ``rank`` of ``world`` runs: consecutive, as even as they split (the
    first stages take one more where they do not)."""
    if world > layers:
        raise ShapeError(f"pipeline: {world} stages exceed the model's {layers} layers")
    per, extra = divmod(layers, world)
    start = rank * per + min(rank, extra)
    return range(start, start + per + (1 if rank < extra else 0))


class PipelineSession(CachedSession):
    """``model`` (a LlamaForCausalLM) split over ``comm``'s ranks, this rank's stage compiled on
    ``runtime`` (searched with budget ``search``) and its weights set. ``step(ids)`` runs a
    chunk through every stage (called on every rank with the same ids) and returns the last
    position's logits (batch, 1, vocab) on every rank; a CausalLMSession's stand-in for
    generate()."""

    def __init__(self, model, comm, runtime=None, search: int = 1, batch: int = 1,
                 micro_batch: int = 128):
        c = model.config
        self.model, self.comm, self.batch = model, comm, batch
        if micro_batch < 1:
            raise ShapeError(f"PipelineSession: micro_batch must be >= 1, got {micro_batch}")
        self.micro_batch = micro_batch  # positions a stage runs before passing them on
        self.vocab, self.hidden = c.vocab_size, c.hidden_size
        agree_on_the_model(comm, model, batch)
        self.layers = stage_layers(c.num_hidden_layers, comm.rank, comm.world_size)
        self.first, self.last = comm.rank == 0, comm.rank == comm.world_size - 1
        cx = Graph()
        self.graph = cx
        if self.first:
            self.ids = cx.tensor((batch, "s"), dt.int32, "input_ids")
            x = model.model.embed(self.ids)
        else:
            self.hidden_in = cx.tensor((batch, "s", c.hidden_size), dt.float32, "hidden_in")
            x = self.hidden_in
        self.caches = model.make_caches(cx, batch, "p", self.layers)
        x = model.model.run_layers(x, self.caches, self.layers)
        self.out = (model.head(x, last_only=True) if self.last else x).output()
        for name, value in search_dims_of(model).items():
            cx.set_dim(name, value)
        self.runtime = cx.search(runtime if runtime is not None else NativeRuntime(), search)
        model.load_weights(self.runtime)  # binds only this stage's parameters
        self.cache_buffers = KVCacheBuffers(self.caches, getattr(model, "max_context", None))

    def step(self, ids) -> np.ndarray:
        ids = check_step_ids(ids, self.batch, self.vocab, self.past,
                             getattr(self.model, "max_context", None))
        comm, pending, out = self.comm, [], None
        with self.runtime.sequence():
            for start in range(0, ids.shape[1], self.micro_batch):
                out = self._run_stage(ids[:, start:start + self.micro_batch])
                if not self.last:  # on to the next stage while this one goes on
                    pending.append(comm.isend(out, comm.rank + 1))
        for request in pending:
            request.wait()
        return comm.broadcast(out if self.last else None, comm.world_size - 1,
                              (self.batch, 1, self.vocab))

    def _run_stage(self, ids) -> np.ndarray:
        """This stage on micro-batch ``ids`` (its hidden states from the stage before): its
        output, the caches extended."""
        s, rt = int(ids.shape[1]), self.runtime
        if self.first:
            rt.set_data(self.ids, ids)
        else:
            rt.set_data(self.hidden_in,
                        self.comm.recv((self.batch, s, self.hidden), self.comm.rank - 1))
        self.cache_buffers.bind(rt)
        rt.execute({"s": s, "p": self.past})
        self.cache_buffers.append(rt, s)
        return np.asarray(rt.get(self.out), np.float32)
