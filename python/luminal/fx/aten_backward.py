"""The ATen backward ops that AOT autograd leaves in a backward graph after the core ATen
decompositions, as luminal ops: convolution_backward (the input's gradient a transposed
convolution, the weight's a convolution of the input by the output gradient, per group),
max_pool2d_with_indices_backward (each window's gradient placed at its argmax, window by
window offset) and the CPU flash attention's backward (the softmax recomputed from the
forward's logsumexp). Not here: the forward ops (aten.py)."""

from __future__ import annotations

import itertools
import math

from .. import dtype as dt
from ..hl_ops.shape_utils import int_tuple
from ..nn import functional as F
from ..nn._grid import grid_coords, iota_grid
from ..nn.conv import conv_windows
from ..nn.sdpa import attention_scores
from .unsupported import Unsupported


def _input_grad(grad, weight, in_size, stride, padding, dilation, groups):
    """d(conv)/d(input): the transposed convolution of ``grad`` by the same weight, with the
    output padding that gives back the input's size."""
    nd = len(in_size)
    kernel = weight.shape[2:]
    out = grad.shape[2:]
    extra = tuple(in_size[j] - ((out[j] - 1) * stride[j] - 2 * padding[j] +
                                dilation[j] * (kernel[j] - 1) + 1) for j in range(nd))
    if any(e < 0 or e >= max(stride[j], dilation[j]) for j, e in enumerate(extra)):
        raise Unsupported(f"convolution_backward: input size {in_size} is not reachable")
    conv_t = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    return conv_t(grad, weight, None, stride, padding, extra, groups, dilation)


def _weight_grad(grad, x, kernel, stride, padding, dilation, groups):
    """d(conv)/d(weight): per group, the output gradient (Og, N*P) times the transposed
    windows of the input the convolution read (N*P, Cg*K): the forward's window gather
    (nn.conv.conv_windows), so it takes the window matmul's kernels instead of a gather of its
    own, as the forward does."""
    nd = len(kernel)
    n, cout = grad.shape[0], grad.shape[1]
    cin = x.shape[1] // groups
    cols, _ = conv_windows(x, list(kernel), stride, [(p, p) for p in padding], dilation,
                           groups, "convolution_backward")          # (G, Cg*K, N*P)
    g = grad.reshape([n, groups, cout // groups, -1]).permute([1, 2, 0, 3])
    g = g.reshape([groups, cout // groups, -1])                      # (G, Og, N*P)
    w = g.matmul(cols.transpose(1, 2))                               # (G, Og, Cg*K)
    return w.reshape([cout, cin] + list(kernel))


def convolution_backward(grad, x, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    if transposed:
        raise Unsupported("convolution_backward of a transposed convolution")
    nd = weight.ndim - 2
    op = "convolution_backward"
    stride, padding, dilation = (int_tuple(v, nd, name, op, one_for_all=True) for v, name in
                                 ((stride, "stride"), (padding, "padding"),
                                  (dilation, "dilation")))
    want_input, want_weight, want_bias = output_mask
    gi = _input_grad(grad, weight, x.shape[2:], stride, padding, dilation, groups) \
        if want_input else None
    gw = _weight_grad(grad, x, weight.shape[2:], stride, padding, dilation, groups) \
        if want_weight else None
    gb = grad.sum([0] + list(range(2, grad.ndim))) if want_bias else None
    return gi, gw, gb


def _place(t, axis: int, stride: int, offset: int, length: int):
    """A tensor of ``length`` along ``axis`` whose element o * stride + offset is t's o and
    whose others are 0 (places outside [0, length) dropped)."""
    n = t.shape[axis]
    if stride > 1:
        t = t.unsqueeze(axis + 1)
        pads = [0, 0] * (t.ndim - axis - 2) + [0, stride - 1]
        t = t.pad_zeros(pads)
        dims = list(t.shape)
        t = t.reshape(*dims[:axis], n * stride, *dims[axis + 2:])
    span = t.shape[axis]
    lo, hi = offset, length - offset - span  # zeros to add before and after
    index = [slice(None)] * t.ndim
    index[axis] = slice(max(0, -lo), span - max(0, -hi))
    t = t[tuple(index)]
    after = [0, 0] * (t.ndim - axis - 1) + [max(0, lo), max(0, hi)]
    return t.pad_zeros(after)


def max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, dilation, ceil_mode,
                                     indices):
    """The gradient of each output goes to the input place its index names: for each window
    offset k, the outputs whose index is that offset's place, placed at o * stride + k *
    dilation - padding and summed over k."""
    op = "max_pool2d_with_indices_backward"
    kernel = int_tuple(kernel, 2, "kernel_size", op, one_for_all=True)
    stride = int_tuple(stride, 2, "stride", op, one_for_all=True) if len(stride) else kernel
    padding = int_tuple(padding, 2, "padding", op, one_for_all=True)
    dilation = int_tuple(dilation, 2, "dilation", op, one_for_all=True)
    height, width = x.shape[-2:]
    oh, ow = grad.shape[-2:]
    graph = grad.graph
    if stride == kernel and padding == (0, 0) and dilation == (1, 1) and \
            oh * stride[0] <= height and ow * stride[1] <= width:
        return _tiled_max_pool_backward(grad, indices, kernel, height, width)
    total = None
    for ky, kx in itertools.product(range(kernel[0]), range(kernel[1])):
        c = grid_coords([oh, ow])
        place = iota_grid(graph, [oh, ow],  # (oh, ow): the input place of offset (ky, kx)
                          (c[0] * stride[0] + (ky * dilation[0] - padding[0])) * width +
                          c[1] * stride[1] + (kx * dilation[1] - padding[1]))
        hit = (indices == place.to(indices.dtype)).to(grad.dtype)
        term = _place(grad * hit, grad.ndim - 2, stride[0], ky * dilation[0] - padding[0],
                      height)
        term = _place(term, grad.ndim - 1, stride[1], kx * dilation[1] - padding[1], width)
        total = term if total is None else total + term
    return total


def _tiled_max_pool_backward(grad, indices, kernel, height, width):
    """Windows that tile the input (stride = kernel, no padding): each input place is in one
    window, so its gradient is its window's where the window's index names it, else 0; one
    elementwise pass over (..., oh, ky, ow, kx), the rows and columns no window covers 0."""
    (sy, sx), (oh, ow) = kernel, grad.shape[-2:]
    tiles = list(grad.shape[:-2]) + [oh, sy, ow, sx]

    def spread(t):
        return t.unsqueeze(-1).unsqueeze(-3).expand(*tiles)

    c = grid_coords([oh, sy, ow, sx])
    place = iota_grid(grad.graph, [oh, sy, ow, sx],
                      (c[0] * sy + c[1]) * width + c[2] * sx + c[3]).to(indices.dtype)
    hit = (spread(indices) == place).to(grad.dtype)
    out = (spread(grad) * hit).reshape(list(grad.shape[:-2]) + [oh * sy, ow * sx])
    return out.pad_zeros([0, width - ow * sx, 0, height - oh * sy])


def flash_attention_for_cpu_backward(grad, q, k, v, out, logsumexp, dropout_p, is_causal,
                                     attn_mask=None, scale=None):
    """(dq, dk, dv) of aten._scaled_dot_product_flash_attention_for_cpu: the weights P
    recomputed as exp(scores - logsumexp) (0 on a fully masked row, whose logsumexp is 0),
    dv = P^T g, dS = P * (g v^T - rowsum(g * out)), dq = dS k * scale, dk = dS^T q * scale."""
    if dropout_p:
        raise Unsupported("scaled_dot_product_attention's backward with dropout_p > 0")
    if q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        raise Unsupported("scaled_dot_product_attention's backward over grouped-query heads")
    scores, _ = attention_scores(q, k, attn_mask, is_causal, scale,
                                 op="scaled_dot_product_attention backward")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    g, o = grad.to(dt.float32), out.to(dt.float32)
    p = (scores - logsumexp.to(dt.float32).unsqueeze(-1)).exp()
    dv = p.transpose(-2, -1).matmul(g)
    ds = p * (g.matmul(v.to(dt.float32).transpose(-2, -1)) - (g * o).sum(-1, keepdim=True))
    dq = ds.matmul(k.to(dt.float32)) * float(scale)
    dk = ds.transpose(-2, -1).matmul(q.to(dt.float32)) * float(scale)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)
