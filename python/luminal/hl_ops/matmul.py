"""Matrix products as a broadcast Mul followed by a SumReduce; the search is what turns this
back into a fast matmul kernel. PyTorch's 1-D, 2-D and batched-broadcast rules."""

from __future__ import annotations

from ..errors import ShapeError
from .. import dtype as dt


class MatmulOps:
    def matmul(self, other):
        self.graph._check_owns(other)
        if self.ndim == 0 or other.ndim == 0:
            raise ShapeError(f"matmul: both operands need at least 1 dim, got shapes "
                             f"{self.shape} and {other.shape}")
        a = self.unsqueeze(0) if self.ndim == 1 else self
        b = other.unsqueeze(-1) if other.ndim == 1 else other
        if a.view.dims[-1] != b.view.dims[-2]:
            raise ShapeError(f"matmul: shapes {self.shape} and {other.shape} are not aligned "
                             f"({a.shape[-1]} != {b.shape[-2]})")
        dtype = dt.promote(a.dtype, b.dtype)
        a, b = a.to(dtype), b.to(dtype)
        # (..., m, k, 1) * (..., 1, k, n) summed over k.
        product = a.unsqueeze(-1) * b.unsqueeze(-3)
        out = product.sum(-2)
        if self.ndim == 1:
            out = out.squeeze(-2)
        if other.ndim == 1:
            out = out.squeeze(-1)
        return out

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        return other.matmul(self)
