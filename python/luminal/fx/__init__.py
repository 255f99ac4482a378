"""PyTorch programs through luminal: torch.compile's "luminal" backend (backend.py) over an
ATen-to-luminal converter (convert.py, aten.py)."""

from .backend import BackendReport, CompiledGraph, luminal_backend, report

__all__ = ["BackendReport", "CompiledGraph", "luminal_backend", "report"]
