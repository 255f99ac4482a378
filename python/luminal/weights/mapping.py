"""The Mapping protocol every weights reader shares: iteration, length and membership over one
table of tensor names, and the error for a name that is not there. A reader fills ``_entries``
and ``source`` and keeps only how it reads a tensor. Not here: any file format."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import WeightsError


class WeightsMapping(Mapping):
    """name -> numpy array. ``_entries``: name -> what the reader keeps about that tensor
    (its insertion order is the iteration order); ``source``: the file or directory errors name."""

    source = ""

    def _entry(self, name: str):
        if name not in self._entries:
            raise WeightsError(f"{self.source}: no tensor named '{name}'")
        return self._entries[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name) -> bool:
        return name in self._entries
