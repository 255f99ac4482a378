"""PyTorch programs through luminal: torch.compile's "luminal" backend (backend.py) and
ahead-of-time export (export.py), over an ATen-to-luminal converter (convert.py, aten.py)."""

from .backend import BackendReport, CompiledGraph, luminal_backend, report
from .export import TorchProgram, from_torch

__all__ = ["BackendReport", "CompiledGraph", "TorchProgram", "from_torch", "luminal_backend",
           "report"]
