"""Dropout as torch.nn.Dropout: active while the module is in training mode (``train()``, the
default, as in torch), the identity after ``eval()``. The mask comes from the graph's random
state (functional.dropout)."""

from __future__ import annotations

from . import functional as F
from ..errors import ShapeError
from .module import Module


class Dropout(Module):
    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ShapeError(f"Dropout: probability p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)
