"""The basic layers: Linear, Embedding, LayerNorm, RMSNorm, Conv1d, Conv2d. Weight names and
layouts are PyTorch's (Linear.weight is (out, in)), so torch state dicts load unchanged.
Not here: blocks built from these (mlp.py, attention.py, transformer.py)."""

from __future__ import annotations

import itertools

from .. import dtype as dt
from ..errors import ShapeError
from . import _ops
from .module import Module, Parameter


def weight_for(param: Parameter, x):
    """``param``'s graph input in ``x``'s graph, cast to ``x``'s float dtype."""
    w = param.tensor(x.graph)
    return w.to(x.dtype) if dt.is_float(x.dtype) and w.dtype != x.dtype else w


class Linear(Module):
    """y = x @ weight.T + bias, on the last dim."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=dt.float32):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype) if bias else None

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise ShapeError(f"Linear({self.weight.name}): input shape {x.shape} does not end "
                             f"in in_features={self.in_features}")
        y = x @ weight_for(self.weight, x).t()
        if self.bias is not None:
            y = y + weight_for(self.bias, x)
        return y


class Embedding(Module):
    """Rows of ``weight`` picked by an int tensor of ids: (...,) -> (..., dim)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype=dt.float32):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = Parameter((num_embeddings, embedding_dim), dtype)

    def forward(self, ids):
        if ids.dtype != dt.int32:
            raise ShapeError(f"Embedding({self.weight.name}): ids must be int32, got "
                             f"{dt.name(ids.dtype)}")
        w = self.weight.tensor(ids.graph)
        out = w.index_select_tensor(0, ids)
        return out if w.dtype == dt.float32 else out.to(dt.float32)


class LayerNorm(Module):
    def __init__(self, dim: int, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype=dt.float32):
        super().__init__()
        self.eps = eps
        self.weight = Parameter((dim,), dtype) if elementwise_affine else None
        self.bias = Parameter((dim,), dtype) if elementwise_affine and bias else None

    def forward(self, x):
        w = weight_for(self.weight, x) if self.weight is not None else None
        b = weight_for(self.bias, x) if self.bias is not None else None
        return _ops.layer_norm(x, w, b, self.eps)


class RMSNorm(Module):
    def __init__(self, dim: int, eps: float = 1e-6, dtype=dt.float32):
        super().__init__()
        self.eps = eps
        self.weight = Parameter((dim,), dtype)

    def forward(self, x):
        return _ops.rms_norm(x, weight_for(self.weight, x), self.eps)


class _ConvNd(Module):
    """Convolution over the last ``n`` dims as a sum, over kernel offsets, of strided views
    of the (zero-padded) input times one (out, in) slice of the weight."""

    n = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, dtype=dt.float32):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ShapeError(f"Conv{self.n}d: channels {in_channels} -> {out_channels} are not "
                             f"divisible by groups={groups}")
        self.kernel_size = self._tuple(kernel_size, "kernel_size")
        self.stride = self._tuple(stride, "stride")
        self.padding = self._tuple(padding, "padding")
        self.dilation = self._tuple(dilation, "dilation")
        self.groups = groups
        self.in_channels = in_channels
        self.out_channels = out_channels
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(shape, dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def _tuple(self, v, what):
        v = (v,) * self.n if isinstance(v, int) else tuple(v)
        if len(v) != self.n or not all(isinstance(d, int) and d >= 0 for d in v):
            raise ShapeError(f"Conv{self.n}d: {what} must be {self.n} non-negative ints, got {v}")
        return v

    def forward(self, x):
        n = self.n
        if x.ndim != n + 2 or x.shape[1] != self.in_channels:
            raise ShapeError(f"Conv{n}d({self.weight.name}): expects input (batch, "
                             f"{self.in_channels}, {n} spatial dims), got {x.shape}")
        spatial = x.shape[2:]
        if not all(isinstance(d, int) for d in spatial):
            raise ShapeError(f"Conv{n}d: spatial dims must be static, got {x.shape}")
        pads = []
        for p in reversed(self.padding):
            pads += [p, p]
        xp = x.pad_zeros(pads) if any(self.padding) else x
        out_sizes = []
        for size, p, k, s, d in zip(spatial, self.padding, self.kernel_size, self.stride,
                                    self.dilation):
            o = (size + 2 * p - d * (k - 1) - 1) // s + 1
            if o <= 0:
                raise ShapeError(f"Conv{n}d: input {x.shape} is too small for kernel "
                                 f"{self.kernel_size}")
            out_sizes.append(o)
        w = weight_for(self.weight, x)
        cin_g = self.in_channels // self.groups
        cout_g = self.out_channels // self.groups
        outs = []
        for g in range(self.groups):
            xg = xp[:, g * cin_g:(g + 1) * cin_g]
            wg = w[g * cout_g:(g + 1) * cout_g]
            acc = None
            for offsets in itertools.product(*[range(k) for k in self.kernel_size]):
                patch = xg
                for axis, (o, k_off, s, d) in enumerate(zip(out_sizes, offsets, self.stride,
                                                             self.dilation)):
                    start = k_off * d
                    patch = patch.slice_axis(2 + axis, start, start + s * (o - 1) + 1, s)
                    # (batch, cin, *out) -> channels last for the matmul
                w_off = wg[(slice(None), slice(None)) + offsets]  # (cout_g, cin_g)
                term = patch.permute(0, *range(2, n + 2), 1) @ w_off.t()
                acc = term if acc is None else acc + term
            outs.append(acc)
        y = outs[0]
        for extra in outs[1:]:
            y = _ops.cat2(y, extra, -1)
        if self.bias is not None:
            y = y + weight_for(self.bias, x)
        return y.permute(0, n + 1, *range(1, n + 1))


class Conv1d(_ConvNd):
    """(batch, in, length) -> (batch, out, length_out), as torch.nn.Conv1d."""

    n = 1


class Conv2d(_ConvNd):
    """(batch, in, h, w) -> (batch, out, h_out, w_out), as torch.nn.Conv2d."""

    n = 2
