"""Vectors compared and scaled along a dim, as torch.nn.functional defines them: normalize
(x / max(||x||_p, eps)) and cosine_similarity (each side divided by its own L2 norm clamped to
eps, then summed products, after broadcasting the two), and the CosineSimilarity module.
Built from GraphTensor norms and arithmetic. Not here: distances (pairwise_distance, cdist)."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError
from ..hl_ops.shape_utils import shape_str
from ..hl_ops.tensor_utils import as_tensors
from .module import Module


def _norm_along(x, p, axis):
    """``||x||_p`` along ``axis``, kept as a dim of 1 (a 0-d ``x``: its absolute value)."""
    if x.ndim == 0:
        return x.unsqueeze(0).norm(p, 0)
    return x.norm(p, axis, keepdim=True)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """torch.nn.functional.normalize: ``input`` divided by its ``p``-norm along ``dim``,
    clamped below at ``eps`` (so a zero vector stays zero)."""
    if out is not None:
        raise NotImplementedError("normalize: out= writes into an existing tensor, which a "
                                  "static graph cannot do")
    if not dt.is_float(input.dtype):
        raise DTypeError(f"normalize: input must be a float tensor, got "
                         f"{dt.name(input.dtype)} of shape {input.shape}")
    axis = input._axis(dim, "normalize")
    return input / _norm_along(input, p, axis).clamp_min(eps)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """torch.nn.functional.cosine_similarity: x1 and x2 broadcast to one shape, each divided
    by its L2 norm along ``dim`` clamped below at ``eps``, then the sum of their products
    along ``dim`` (which is dropped). Zero vectors give 0; the result stays in [-1, 1]."""
    a, b = as_tensors(x1, x2, op="cosine_similarity")
    if not dt.is_float(a.dtype):
        raise DTypeError(f"cosine_similarity: the common dtype of x1 and x2 must be float, got "
                         f"{dt.name(a.dtype)} (broadcast shape {shape_str(a.st.dims)})")
    axis = a._axis(dim, "cosine_similarity")
    products = (a / _norm_along(a, 2, axis).clamp_min(eps)) * \
        (b / _norm_along(b, 2, axis).clamp_min(eps))
    return products if a.ndim == 0 else products.sum(axis)


class CosineSimilarity(Module):
    """torch.nn.CosineSimilarity: ``cosine_similarity(x1, x2, dim, eps)``; no parameters."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)
