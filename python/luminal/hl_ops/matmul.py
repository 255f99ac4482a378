"""Matrix products as a broadcast Mul followed by a SumReduce; the search is what turns this
back into a fast matmul kernel. PyTorch's matmul (1-D, 2-D, batched with broadcasting), mm,
bmm, dot, outer, and the functional ``linear``. einsum lives in einsum.py."""

from __future__ import annotations

from ..errors import ShapeError
from .. import dtype as dt
from .shape_utils import broadcast_shapes


def _check_rank(op: str, a, b, ranks) -> None:
    if a.ndim not in ranks or b.ndim not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ShapeError(f"{op}: expects {want} operands, got shapes {a.shape} and {b.shape}")


class MatmulOps:
    def matmul(self, other):
        if not hasattr(other, "graph"):
            raise ShapeError(f"matmul: expects a GraphTensor, got {type(other).__name__}")
        self.graph._check_owns(other)
        if self.ndim == 0 or other.ndim == 0:
            raise ShapeError(f"matmul: both operands need at least 1 dim, got shapes "
                             f"{self.shape} and {other.shape}")
        a = self.unsqueeze(0) if self.ndim == 1 else self
        b = other.unsqueeze(-1) if other.ndim == 1 else other
        if a.st.dims[-1] != b.st.dims[-2]:
            raise ShapeError(f"matmul: shapes {self.shape} and {other.shape} are not aligned "
                             f"({a.shape[-1]} != {b.shape[-2]})")
        batch = broadcast_shapes([a.st.dims[:-2], b.st.dims[:-2]], "matmul",
                                 [self.shape, other.shape])
        a = a.expand(batch + list(a.st.dims[-2:]))
        b = b.expand(batch + list(b.st.dims[-2:]))
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

    def mm(self, mat2):
        _check_rank("mm", self, mat2, (2,))
        return self.matmul(mat2)

    def bmm(self, mat2):
        _check_rank("bmm", self, mat2, (3,))
        if self.st.dims[0] != mat2.st.dims[0]:
            raise ShapeError(f"bmm: batch sizes differ: shapes {self.shape} and {mat2.shape}")
        return self.matmul(mat2)

    def dot(self, other):
        _check_rank("dot", self, other, (1,))
        if self.st.dims[0] != other.st.dims[0]:
            raise ShapeError(f"dot: lengths differ: shapes {self.shape} and {other.shape}")
        return self.matmul(other)

    inner = dot

    def outer(self, vec2):
        _check_rank("outer", self, vec2, (1,))
        return self.unsqueeze(1) * vec2.unsqueeze(0)

    ger = outer


def linear(input, weight, bias=None):
    """torch.nn.functional.linear: ``input @ weight.T + bias``, weight (out_features,
    in_features) or (in_features,)."""
    if not hasattr(input, "graph") or not hasattr(weight, "graph"):
        raise ShapeError("linear: input and weight must be GraphTensors")
    if weight.ndim not in (1, 2):
        raise ShapeError(f"linear: weight must be 1-D or 2-D, got shape {weight.shape}")
    if input.ndim == 0 or input.st.dims[-1] != weight.st.dims[-1]:
        raise ShapeError(f"linear: input of shape {input.shape} does not match weight of shape "
                         f"{weight.shape} (in_features {weight.shape[-1]})")
    out = input.matmul(weight.t())
    return out if bias is None else out + bias
