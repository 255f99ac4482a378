"""Tensor methods PyTorch has for neural-network math: softmax and log_softmax, numerically
stable (the max along ``dim`` is subtracted first). Built from amax, sum, exp and log; the
functional forms (``luminal.nn.functional``) call these."""

from __future__ import annotations

from .. import dtype as dt


def _softmax_input(x, dim, dtype, op: str):
    if dim is None:
        # PyTorch's legacy implicit dim (it warns; we follow its choice).
        dim = 0 if x.ndim in (0, 1, 3) else 1
    x._axis(dim, op)
    if dtype is not None:
        x = x.to(dtype)
    elif not dt.is_float(x.dtype):
        x = x.to(dt.float32)
    # Half types are computed in f32 and rounded once at the end, as PyTorch does.
    return x.to(dt.float32), dim, x.dtype


class NNOps:
    def softmax(self, dim=None, dtype=None):
        """exp(x - max) / sum(exp(x - max)) along ``dim``."""
        x, dim, out_dtype = _softmax_input(self, dim, dtype, "softmax")
        if x.ndim == 0:
            return (x - x).exp().to(out_dtype)
        e = (x - x.amax(dim, keepdim=True)).exp()
        return (e / e.sum(dim, keepdim=True)).to(out_dtype)

    def log_softmax(self, dim=None, dtype=None):
        """(x - max) - log(sum(exp(x - max))) along ``dim``."""
        x, dim, out_dtype = _softmax_input(self, dim, dtype, "log_softmax")
        if x.ndim == 0:
            return (x - x).to(out_dtype)
        shifted = x - x.amax(dim, keepdim=True)
        return (shifted - shifted.exp().sum(dim, keepdim=True).log()).to(out_dtype)
