"""A weights mapping seen through a renaming function: how a model whose module names differ
from a checkpoint's (BERT's encoder.layer.N.attention.self.query -> our self_attn.q_proj)
loads it without copying. Keys the function maps to None are dropped."""

from __future__ import annotations

from collections.abc import Mapping


class RenamedWeights(Mapping):
    def __init__(self, weights, rename):
        self._weights = weights
        self.source = getattr(weights, "source", "")
        self._to_file = {}
        for key in weights.keys():
            new = rename(key)
            if new is not None:
                self._to_file[new] = key

    def locate(self, name: str):
        """(file, key in that file) of tensor ``name``, for error messages."""
        key = self._to_file[name]
        locate = getattr(self._weights, "locate", None)
        return locate(key) if locate is not None else (self.source, key)

    def __getitem__(self, name):
        return self._weights[self._to_file[name]]

    def dtype_name(self, name):
        return self._weights.dtype_name(self._to_file[name])

    def storage(self, name):
        storage = getattr(self._weights, "storage", None)
        if storage is None:
            return None
        return storage(self._to_file[name])

    def __iter__(self):
        return iter(self._to_file)

    def __len__(self):
        return len(self._to_file)

    def __contains__(self, name):
        return name in self._to_file
