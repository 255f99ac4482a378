"""The ATen operators of neural-network layers in luminal terms (entries of aten.ATEN, which
merges NN): normalizations with the statistics ATen returns, convolutions and pooling (and
their backward, aten_backward.py), adaptive pooling and upsampling. Not here: the table's
other entries (aten.py, aten_indexing.py)."""

from __future__ import annotations

import torch

from ..nn import functional as F
from ..nn.sdpa import attention_logsumexp
from . import aten_backward
from .unsupported import Unsupported

aten = torch.ops.aten


def _layer_norm(x, shape, weight, bias, eps):
    """(out, mean, rstd): the statistics keep the normalized dims as 1s, as ATen's, for the
    backward AOT autograd derives."""
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    rstd = ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def _batch_norm(x, weight, bias, mean, var, momentum, eps):
    return F.batch_norm(x, mean, var, weight, bias, False, momentum, eps), None, None


def _batch_norm_training(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, mean, rstd, new running mean, new running var) of a batch norm: with
    ``training``, normalized by the batch's statistics over every dim but the channels (1),
    the running ones moved by ``momentum`` towards them (the variance unbiased, as torch)."""
    if not training:
        out = _batch_norm(x, weight, bias, running_mean, running_var, momentum, eps)[0]
        rstd = (running_var + eps).rsqrt()
        return out, running_mean, rstd, running_mean, running_var
    axes = tuple(i for i in range(x.ndim) if i != 1)
    count = 1
    for i in axes:
        count *= x.shape[i]
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(axes, keepdim=True)
    rstd = (var + eps).rsqrt()
    channel = (1, -1) + (1,) * (x.ndim - 2)
    out = centered * rstd
    if weight is not None:
        out = out * weight.reshape(*channel)
    if bias is not None:
        out = out + bias.reshape(*channel)
    mean, var, rstd = (t.reshape(-1) for t in (mean, var, rstd))
    unbiased = var * (count / max(count - 1, 1))
    return (out, mean, rstd, running_mean * (1 - momentum) + mean * momentum,
            running_var * (1 - momentum) + unbiased * momentum)


def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    n = w.ndim - 2
    if transposed:
        conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
        return conv(x, w, b, tuple(stride), tuple(padding), tuple(output_padding), groups,
                    tuple(dilation))
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return conv(x, w, b, tuple(stride), tuple(padding), tuple(dilation), groups)


def _max_pool2d(x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(x, tuple(kernel), tuple(stride) or None, padding, dilation,
                        ceil_mode, return_indices=True)


def _avg_pool2d(x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    return F.avg_pool2d(x, tuple(kernel), tuple(stride) or None, padding, ceil_mode,
                        count_include_pad, divisor_override)

def _avg_pool3d(x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    padding = padding if isinstance(padding, int) else tuple(padding)
    return F.avg_pool3d(x, tuple(kernel), tuple(stride) or None, padding, ceil_mode,
                        count_include_pad, divisor_override)


def _native_group_norm(x, weight, bias, n, c, hw, group, eps):
    """(out, mean, rstd) with the statistics of shape (N, group), as ATen's."""
    grouped = x.reshape(n, group, -1)
    mean = grouped.mean(-1, keepdim=True)
    centered = grouped - mean
    rstd = ((centered * centered).mean(-1, keepdim=True) + eps).rsqrt()
    out = (centered * rstd).reshape(*x.shape)
    channel = (1, -1) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(*channel)
    if bias is not None:
        out = out + bias.reshape(*channel)
    return out, mean.reshape(n, group), rstd.reshape(n, group)


def _native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, save_mean, save_rstd) of a batch norm (the running statistics' update is not
    an output here)."""
    if not training:
        out = _batch_norm(x, weight, bias, running_mean, running_var, momentum, eps)[0]
        return out, None, None
    if running_mean is None:
        zeros = x.graph.zeros(x.shape[1])
        running_mean, running_var = zeros, zeros
    out, mean, rstd, _, _ = _batch_norm_training(x, weight, bias, running_mean, running_var,
                                                 True, momentum, eps)
    return out, mean, rstd


def _upsample(x, size, scales, mode, align_corners):
    """F.interpolate to ``size``; by the scale factors where ATen passes them (they, not the
    sizes' ratio, map output to input coordinates)."""
    if any(s is not None for s in scales):
        if any(s is None for s in scales):
            raise Unsupported(f"upsample with scales {scales}")
        return F.interpolate(x, scale_factor=tuple(scales), mode=mode,
                             align_corners=align_corners)
    return F.interpolate(x, size=tuple(size), mode=mode, align_corners=align_corners)


def _flash_attention_for_cpu(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None,
                             scale=None):
    """(output, logsumexp) of aten._scaled_dot_product_flash_attention_for_cpu, which
    aten.decompositions() keeps whole: its core ATen decomposition returns the attention
    weights where the op returns each row's logsumexp, and the op's backward (which AOT
    autograd leaves whole) reads them as that: a training step's gradients were wrong. The
    output is luminal.nn's attention (its fused kernel); the logsumexp is computed only where
    a graph returns it (a training forward, for the backward:
    aten_backward.flash_attention_for_cpu_backward)."""
    if dropout_p:
        raise Unsupported("scaled_dot_product_attention with dropout_p > 0 (luminal graphs "
                          "hold no random state)")
    gqa = q.ndim >= 3 and q.shape[-3] != k.shape[-3]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, is_causal, scale,
                                         enable_gqa=gqa)
    return out, attention_logsumexp(q, k, attn_mask, is_causal, scale, enable_gqa=gqa)


NN = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: _flash_attention_for_cpu,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default:
        aten_backward.flash_attention_for_cpu_backward,
    aten.native_layer_norm.default: _layer_norm,
    aten._native_batch_norm_legit_no_training.default: _batch_norm,
    aten._native_batch_norm_legit_functional.default: _batch_norm_training,
    aten.convolution.default: _convolution,
    aten.convolution_backward.default: aten_backward.convolution_backward,
    aten.max_pool2d_with_indices_backward.default:
        aten_backward.max_pool2d_with_indices_backward,
    aten.max_pool2d_with_indices.default: _max_pool2d,
    aten.avg_pool2d.default: _avg_pool2d,
    aten.native_group_norm.default: _native_group_norm,
    aten.native_batch_norm.default: _native_batch_norm,
    aten._native_batch_norm_legit.default: _native_batch_norm,
    aten.avg_pool3d.default: _avg_pool3d,
    aten.upsample_bilinear2d.default: lambda x, size, align_corners, scales_h=None,
        scales_w=None: _upsample(x, size, (scales_h, scales_w), "bilinear", align_corners),
    aten.upsample_nearest2d.default: lambda x, size, scales_h=None, scales_w=None: _upsample(
        x, size, (scales_h, scales_w), "nearest", None),
    aten.upsample_trilinear3d.default: lambda x, size, align_corners, *scales: _upsample(
        x, size, scales or (None,) * 3, "trilinear", align_corners),
    aten.upsample_linear1d.default: lambda x, size, align_corners, scales=None: _upsample(
        x, size, (scales,), "linear", align_corners),
    aten.upsample_nearest1d.default: lambda x, size, scales=None: _upsample(
        x, size, (scales,), "nearest", None),
    aten.upsample_nearest3d.default: lambda x, size, *scales: _upsample(
        x, size, scales or (None,) * 3, "nearest", None),
    aten._adaptive_avg_pool2d.default: lambda x, size: F.adaptive_avg_pool2d(x, tuple(size)),
    aten._adaptive_avg_pool3d.default: lambda x, size: F.adaptive_avg_pool3d(x, tuple(size)),
}
