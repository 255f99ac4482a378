"""A weights mapping seen through a renaming function: how a model whose module names differ
from a checkpoint's (BERT's encoder.layer.N.attention.self.query -> our self_attn.q_proj)
loads it without copying. Keys the function maps to None are dropped. An unknown name is a
KeyError, as in a dict."""

from __future__ import annotations

from .mapping import WeightsMapping


class RenamedWeights(WeightsMapping):
    def __init__(self, weights, rename):
        self._weights = weights
        self.source = getattr(weights, "source", "")
        self._entries = {}  # our name -> the name in ``weights``
        for key in weights.keys():
            new = rename(key)
            if new is not None:
                self._entries[new] = key

    def file_key(self, name: str) -> str:
        """The name in the underlying weights of tensor ``name`` (KeyError: none)."""
        return self._entries[name]

    def locate(self, name: str):
        """(file, key in that file) of tensor ``name``, for error messages."""
        key = self.file_key(name)
        locate = getattr(self._weights, "locate", None)
        return locate(key) if locate is not None else (self.source, key)

    def __getitem__(self, name):
        return self._weights[self.file_key(name)]

    def dtype_name(self, name):
        return self._weights.dtype_name(self.file_key(name))

    def storage(self, name):
        storage = getattr(self._weights, "storage", None)
        if storage is None:
            return None
        return storage(self.file_key(name))
