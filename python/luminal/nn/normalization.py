"""Normalization layers as functions (torch.nn.functional names and arguments): layer_norm,
rms_norm, group_norm, batch_norm. Statistics in f32 (half inputs are upcast and the result is
rounded once), variance biased, as PyTorch computes them. No parameters live here."""

from __future__ import annotations

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError
from ..hl_ops.shape_utils import as_expr


def _shape_tuple(normalized_shape):
    if isinstance(normalized_shape, (int, str, Expr)):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _check_param(p, name: str, want, op: str, input_shape):
    if p is None:
        return
    got = tuple(p.st.dims)
    if len(got) != len(want) or any(as_expr(a) != as_expr(b) for a, b in zip(got, want)):
        raise ShapeError(f"{op}: {name} has shape {p.shape}, expected {tuple(want)} for input "
                         f"of shape {input_shape}")


def _float_stats(x):
    """x in f32 for the statistics, and the dtype to round the result to."""
    out_dtype = x.dtype if dt.is_float(x.dtype) else dt.float32
    return x.to(dt.float32), out_dtype


def _normalized_axes(x, normalized_shape, op: str):
    shape = _shape_tuple(normalized_shape)
    dims = x.st.dims
    k = len(shape)
    ok = 0 < k <= len(dims) and all(as_expr(a) == as_expr(b)
                                    for a, b in zip(dims[len(dims) - k:], shape))
    if not ok:
        raise ShapeError(f"{op}: normalized_shape {shape} does not match the trailing dims of "
                         f"input shape {x.shape}")
    return shape, tuple(range(len(dims) - k, len(dims)))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing ``normalized_shape``."""
    shape, axes = _normalized_axes(input, normalized_shape, "layer_norm")
    _check_param(weight, "weight", shape, "layer_norm", input.shape)
    _check_param(bias, "bias", shape, "layer_norm", input.shape)
    x, out_dtype = _float_stats(input)
    centered = x - x.mean(axes, keepdim=True)
    var = (centered * centered).mean(axes, keepdim=True)
    out = centered * (var + eps).sqrt().reciprocal()
    if weight is not None:
        out = out * weight.to(dt.float32)
    if bias is not None:
        out = out + bias.to(dt.float32)
    return out.to(out_dtype)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight; eps defaults to the input dtype's machine epsilon,
    as in torch."""
    shape, axes = _normalized_axes(input, normalized_shape, "rms_norm")
    _check_param(weight, "weight", shape, "rms_norm", input.shape)
    x, out_dtype = _float_stats(input)
    if eps is None:
        eps = {dt.float16: 2.0 ** -10, dt.bfloat16: 2.0 ** -7}.get(out_dtype, 2.0 ** -23)
    out = x * ((x * x).mean(axes, keepdim=True) + eps).sqrt().reciprocal()
    if weight is not None:
        out = out * weight.to(dt.float32)
    return out.to(out_dtype)


def _channel_view(p, ndim: int):
    """A per-channel (C,) parameter as (C, 1, ..., 1) to broadcast against (N, C, ...)."""
    return p.reshape([p.st.dims[0]] + [1] * (ndim - 2))


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalizes each of ``num_groups`` channel groups of an (N, C, *) input."""
    if input.ndim < 2:
        raise ShapeError(f"group_norm: input needs at least 2 dims (N, C, ...), got shape "
                         f"{input.shape}")
    dims = input.st.dims
    channels = dims[1]
    if not channels.is_const() or num_groups <= 0 or channels.as_const() % num_groups:
        raise ShapeError(f"group_norm: {channels} channels of input shape {input.shape} do not "
                         f"split into {num_groups} groups")
    _check_param(weight, "weight", (channels,), "group_norm", input.shape)
    _check_param(bias, "bias", (channels,), "group_norm", input.shape)
    x, out_dtype = _float_stats(input)
    per_group = Expr(channels.as_const() // num_groups)
    for d in dims[2:]:
        per_group = per_group * d
    grouped = x.reshape([dims[0], Expr(num_groups), per_group])
    centered = grouped - grouped.mean(2, keepdim=True)
    var = (centered * centered).mean(2, keepdim=True)
    out = (centered * (var + eps).sqrt().reciprocal()).reshape(list(dims))
    if weight is not None:
        out = out * _channel_view(weight.to(dt.float32), input.ndim)
    if bias is not None:
        out = out + _channel_view(bias.to(dt.float32), input.ndim)
    return out.to(out_dtype)


def batch_norm(input, running_mean, running_var, weight=None, bias=None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5):
    """Per-channel normalization of an (N, C, *) input. Inference (``training=False``) uses
    the running statistics; ``training=True`` uses the batch's own (biased) statistics, as
    torch does for the output. The running statistics are never updated: a graph is static."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: input needs at least 2 dims (N, C, ...), got shape "
                         f"{input.shape}")
    channels = input.st.dims[1]
    for p, name in ((running_mean, "running_mean"), (running_var, "running_var"),
                    (weight, "weight"), (bias, "bias")):
        _check_param(p, name, (channels,), "batch_norm", input.shape)
    x, out_dtype = _float_stats(input)
    axes = (0,) + tuple(range(2, input.ndim))
    if training or running_mean is None or running_var is None:
        mean = x.mean(axes, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(axes, keepdim=True)
    else:
        centered = x - _channel_view(running_mean.to(dt.float32), input.ndim)
        var = _channel_view(running_var.to(dt.float32), input.ndim)
    out = centered * (var + eps).sqrt().reciprocal()
    if weight is not None:
        out = out * _channel_view(weight.to(dt.float32), input.ndim)
    if bias is not None:
        out = out + _channel_view(bias.to(dt.float32), input.ndim)
    return out.to(out_dtype)
