"""The basic layers: Linear, Embedding, LayerNorm, RMSNorm, BatchNorm2d, Conv1d, Conv2d. Weight
names and
layouts are PyTorch's (Linear.weight is (out, in)), so torch state dicts load unchanged.
Not here: blocks built from these (mlp.py, attention.py, transformer.py)."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from . import functional as F
from .module import Module, Parameter


def weight_for(param: Parameter, x):
    """``param``'s graph input in ``x``'s graph, cast to ``x``'s float dtype."""
    w = param.tensor(x.graph)
    return w.to(x.dtype) if dt.is_float(x.dtype) and w.dtype != x.dtype else w


ACTIVATIONS = ("f32", "q8_0", "bf16")


def check_activations(activations: str, where: str) -> str:
    if activations not in ACTIVATIONS:
        raise DTypeError(f"{where}: activations must be one of {', '.join(ACTIVATIONS)}, got "
                         f"{activations!r}")
    return activations


def activations_for(x, weight: Parameter, activations: str):
    """``x`` as a matmul with ``weight`` reads it: with ``activations`` 'q8_0', a quantized
    weight and an f32 x whose last dim is whole blocks of 32, its Q8_0 round trip
    (F.quantize_activations: llama.cpp's way, which the CPU runs as int8 dot products); with
    'bf16', a bf16 weight and an f32 x, x rounded to bf16 (as a bf16 model computes it, which
    the CPU multiplies as bf16 pairs where the machine can); otherwise x as is."""
    if activations == "bf16" and weight.dtype == dt.bfloat16 and x.dtype == dt.float32:
        return x.to(dt.bfloat16).to(dt.float32)
    if activations != "q8_0" or not dt.is_quantized(weight.dtype) or x.dtype != dt.float32:
        return x
    k = x.shape[-1]
    return F.quantize_activations(x) if isinstance(k, int) and k % 32 == 0 else x


class Linear(Module):
    """y = x @ weight.T + bias, on the last dim. ``activations`` 'q8_0' multiplies a quantized
    weight with x's Q8_0 round trip instead of x (activations_for; llama.cpp's way); 'bf16' a
    bf16 weight with x rounded to bf16 (a bf16 model's way); 'f32' (the default) with x."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=dt.float32, activations: str = "f32"):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype) if bias else None
        self.activations = check_activations(activations, "Linear")

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise ShapeError(f"Linear({self.weight.name}): input shape {x.shape} does not end "
                             f"in in_features={self.in_features}")
        y = activations_for(x, self.weight, self.activations) @ weight_for(self.weight, x).t()
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
        if dt.is_quantized(w.dtype):  # storage only: rows are gathered from the dequantized view
            w = w.to(dt.float32)
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
        return F.layer_norm(x, (x.shape[-1],), w, b, self.eps)


class RMSNorm(Module):
    """x / rms(x) * (offset + weight): ``offset`` 0 as Llama, 1 as Gemma (weights stored as
    their difference from 1)."""

    def __init__(self, dim: int, eps: float = 1e-6, dtype=dt.float32, offset: float = 0.0):
        super().__init__()
        self.eps = eps
        self.offset = offset
        self.weight = Parameter((dim,), dtype)

    def forward(self, x):
        weight = weight_for(self.weight, x)
        if self.offset:
            weight = weight + self.offset
        return F.rms_norm(x, (x.shape[-1],), weight, self.eps)


class BatchNorm2d(Module):
    """Inference batch norm of (batch, C, h, w) with running statistics, as torch.nn.BatchNorm2d
    in eval mode (a static graph never updates the statistics). The state-dict key
    ``num_batches_tracked`` is a training counter: loaders pass it in ``ignore``."""

    def __init__(self, num_features: int, eps: float = 1e-5, dtype=dt.float32):
        super().__init__()
        self.eps = eps
        self.weight = Parameter((num_features,), dtype)
        self.bias = Parameter((num_features,), dtype)
        self.running_mean = Parameter((num_features,), dtype)
        self.running_var = Parameter((num_features,), dtype)

    def forward(self, x):
        if x.ndim != 4:
            raise ShapeError(f"BatchNorm2d({self.weight.name}): expected a 4-D (batch, C, h, w) "
                             f"input, got shape {x.shape}")
        return F.batch_norm(x, weight_for(self.running_mean, x), weight_for(self.running_var, x),
                            weight_for(self.weight, x), weight_for(self.bias, x), eps=self.eps)


class _ConvNd(Module):
    """Holds a torch-layout conv weight (out, in / groups, *kernel) and bias; the op is
    luminal.nn.functional's conv."""

    n = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, dtype=dt.float32):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ShapeError(f"Conv{self.n}d: channels {in_channels} -> {out_channels} are not "
                             f"divisible by groups={groups}")
        kernel = (kernel_size,) * self.n if isinstance(kernel_size, int) else tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.weight = Parameter((out_channels, in_channels // groups) + kernel, dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x):
        conv = F.conv1d if self.n == 1 else F.conv2d
        b = weight_for(self.bias, x) if self.bias is not None else None
        return conv(x, weight_for(self.weight, x), b, self.stride, self.padding, self.dilation,
                    self.groups)


class Conv1d(_ConvNd):
    """(batch, in, length) -> (batch, out, length_out), as torch.nn.Conv1d."""

    n = 1


class Conv2d(_ConvNd):
    """(batch, in, h, w) -> (batch, out, h_out, w_out), as torch.nn.Conv2d."""

    n = 2
