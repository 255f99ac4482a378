"""luminal.linalg: torch.linalg's functions that luminal expresses, by the same names and
signatures (vector_norm, matrix_norm's Frobenius and entrywise forms). Built on the GraphTensor
reductions; decompositions and solvers (which need data-dependent loops) are not here."""

from __future__ import annotations

import math

from .errors import ShapeError


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):
    """torch.linalg.vector_norm: ``ord`` = 2, 1, inf, -inf, 0 or any other number, over
    ``dim`` (all dims by default)."""
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ShapeError(f"linalg.vector_norm: ord must be a number, got {ord!r} (input shape "
                         f"{x.shape})")
    return x.norm(ord, dim, keepdim, dtype)


def matrix_norm(x, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """torch.linalg.matrix_norm for ord 'fro', 1, -1, inf and -inf (the max or min of the
    column or row sums of absolute values); 'nuc' and 2 need singular values."""
    if ord == "fro":
        return vector_norm(x, 2, dim, keepdim, dtype=dtype)
    if ord not in (1, -1, math.inf, -math.inf):
        raise ShapeError(f"linalg.matrix_norm: ord {ord!r} is not supported (singular values); "
                         f"use 'fro', 1, -1, inf or -inf (input shape {x.shape})")
    rows, cols = (x._axis(d, "linalg.matrix_norm") for d in dim)
    summed, kept = (rows, cols) if ord in (1, -1) else (cols, rows)
    sums = x.abs().sum(summed, keepdim=True) if dtype is None else \
        x.to(dtype).abs().sum(summed, keepdim=True)
    out = sums.amax(kept, keepdim=True) if ord > 0 else sums.amin(kept, keepdim=True)
    return out if keepdim else out.squeeze(sorted((rows, cols)))
