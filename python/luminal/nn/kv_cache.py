"""A layer's KV cache as the compiled program sees it (KVCache), and the host memory that holds
every layer's cache across steps (KVCacheBuffers).

The cache is position-major, (past, batch, kv_heads, head_dim) with ``past`` a symbol, so the
cached rows are a prefix of one preallocated buffer and that prefix is C-contiguous: the CPU
runtime reads it in place. A step's program reads the ``past`` cached rows and outputs only the
rows it adds (``k_new``, ``v_new``); the host writes those after the cached ones. Nothing copies
the whole cache per token, and one compiled program serves the prefill and every decode step.
Not here: the attention that reads the cache (attention.py), the generation loop
(models/generation.py)."""

from __future__ import annotations

import numpy as np

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError


class KVCache:
    """One layer's cache: inputs ``k``, ``v`` of shape (past, batch, kv_heads, head_dim) and,
    after the forward pass, outputs ``k_new``, ``v_new`` (s, batch, kv_heads, head_dim): the
    keys and values of this step's s positions."""

    def __init__(self, graph, batch, kv_heads: int, head_dim: int, past="p", name: str = "kv"):
        shape = (past, batch, kv_heads, head_dim)
        self.k = graph.tensor(shape, dt.float32, f"{name}.k_cache")
        self.v = graph.tensor(shape, dt.float32, f"{name}.v_cache")
        self.k_new = None
        self.v_new = None

    @property
    def past(self) -> Expr:
        return self.k.st.dims[0]

    def cached(self):
        """The cached keys and values as attention reads them, (batch, kv_heads, past,
        head_dim) views of the inputs."""
        return self.k.permute(1, 2, 0, 3), self.v.permute(1, 2, 0, 3)

    def add(self, k, v) -> None:
        """Marks this step's keys and values ``k``, ``v`` (batch, kv_heads, s, head_dim) as the
        outputs ``k_new``, ``v_new``."""
        self.k_new = k.permute(2, 0, 1, 3).output()
        self.v_new = v.permute(2, 0, 1, 3).output()


class KVCacheBuffers:
    """Every layer's cache in host memory: per layer two f32 arrays (capacity, batch,
    kv_heads, head_dim) whose first ``length`` rows are the cached positions. ``bind`` gives a
    runtime those rows (in place where it can read them so), ``append`` writes a step's new
    rows after them. The capacity doubles when a step needs more rows, up to ``limit``."""

    def __init__(self, caches, limit: int | None = None):
        self.caches = list(caches)
        self.limit = limit
        self.length = 0
        self._k = [self._empty(c, 0) for c in self.caches]
        self._v = [self._empty(c, 0) for c in self.caches]

    @staticmethod
    def _empty(cache, rows: int) -> np.ndarray:
        _, batch, kv_heads, head_dim = cache.k.shape
        return np.zeros((rows, batch, kv_heads, head_dim), np.float32)

    @property
    def capacity(self) -> int:
        return self._k[0].shape[0] if self._k else 0

    def reset(self) -> None:
        """Empties the caches (a new conversation); the memory is kept."""
        self.length = 0

    def bind(self, runtime) -> None:
        """Sets every cache input of ``runtime`` to the cached rows."""
        n = self.length
        for cache, k, v in zip(self.caches, self._k, self._v):
            runtime.set_data(cache.k, k[:n])
            runtime.set_data(cache.v, v[:n])

    def append(self, runtime, rows: int) -> None:
        """Writes the ``rows`` new positions ``runtime`` just computed after the cached ones."""
        n = self.length
        self._reserve(n + rows)
        for cache, k, v in zip(self.caches, self._k, self._v):
            k[n:n + rows] = runtime.get(cache.k_new)
            v[n:n + rows] = runtime.get(cache.v_new)
        self.length = n + rows

    def _reserve(self, rows: int) -> None:
        if rows <= self.capacity:
            return
        if self.limit is not None and rows > self.limit:
            raise ShapeError(f"KV cache: {rows} positions exceed the context of {self.limit}")
        capacity = max(rows, 2 * self.capacity, 16)
        if self.limit is not None:
            capacity = min(capacity, self.limit)
        n = self.length
        for buffers in (self._k, self._v):
            for i, (cache, old) in enumerate(zip(self.caches, buffers)):
                grown = self._empty(cache, capacity)
                grown[:n] = old[:n]
                buffers[i] = grown
