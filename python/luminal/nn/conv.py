"""Convolutions with torch.nn.functional's names and arguments: conv1d/2d/3d and
conv_transpose1d/2d/3d (stride, padding incl. 'same'/'valid', output_padding, dilation,
groups). The input's windows are gathered in one Iota+Gather (im2col, no copy of the input
beyond the columns; every image's beside each other), then one matmul per group with the
weight gives the output; a pointwise conv (kernel 1, stride 1, no padding) is a batched matmul
on the input itself."""

from __future__ import annotations

from .._core import Expr
from ..errors import ShapeError
from ..hl_ops.shape_utils import as_expr, const_int, int_tuple, product
from ._grid import gather_grid, gather_linear, grid_coords


def _batched(input, nd: int, op: str):
    """``input`` as (N, C, *spatial), and whether it came without a batch dim."""
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    if input.ndim != nd + 2:
        raise ShapeError(f"{op}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) "
                         f"input, got shape {input.shape}")
    return input, False


def _check_weight(weight, nd: int, op: str):
    if weight.ndim != nd + 2:
        raise ShapeError(f"{op}: weight must have {nd + 2} dims, got shape {weight.shape}")
    return [const_int(d, op, "weight dims") for d in weight.st.dims]


def _finish(cols, wmat, bias, n, groups, out_per_group, out_sizes, unbatched, op):
    """cols (N, G, Cg*K, P) and wmat (G, Og, Cg*K) to the output (N, G*Og, *out_sizes)."""
    out = wmat.matmul(cols)  # (N, G, Og, P), contiguous
    out = out.reshape([n, Expr(groups * out_per_group)] + list(out_sizes))
    return _finish_bias(out, bias, groups * out_per_group, len(out_sizes), unbatched, op)


def _finish_bias(out, bias, channels, nd, unbatched, op):
    """out (N, channels, *spatial) plus the bias per channel, unbatched again."""
    if bias is not None:
        if bias.ndim != 1 or as_expr(bias.st.dims[0]) != Expr(channels):
            raise ShapeError(f"{op}: bias has shape {bias.shape}, expected ({channels},)")
        out = out + bias.reshape([channels] + [1] * nd)
    return out.squeeze(0) if unbatched else out


def _padding(padding, nd, kernel, dilation, stride, op: str):
    """(before, after) per spatial axis, from ints or 'valid' / 'same'."""
    if padding == "valid":
        return [(0, 0)] * nd
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ShapeError(f"{op}: padding='same' needs stride 1, got stride {stride}")
        pads = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            pads.append((total // 2, total - total // 2))
        return pads
    if isinstance(padding, str):
        raise ShapeError(f"{op}: padding must be ints, 'valid' or 'same', got {padding!r}")
    return [(p, p) for p in int_tuple(padding, nd, "padding", op)]


def conv_windows(x, kernel, stride, pads, dilation, groups: int, op: str, weight_shape=None):
    """The windows of x (N, C, *spatial) a convolution reads, as (G, Cg*K, N*P) with the
    batch beside the positions (so each group's matmul runs over every image's positions at
    once: one pass over the weight; few positions, as in a late layer's 7x7, fill the GEMM's
    blocks), and the output's spatial sizes; `pads` (before, after) per spatial axis."""
    nd = len(kernel)
    n = x.st.dims[0]
    per_group = const_int(x.st.dims[1], op, "input channels") // groups
    flat_pads = []
    for before, after in reversed(pads):
        flat_pads += [before, after]
    xp = x.pad_zeros(flat_pads)
    out_sizes = []
    for j in range(nd):
        span = dilation[j] * (kernel[j] - 1) + 1
        length = xp.st.dims[2 + j]
        if length.is_const() and length.as_const() < span:
            raise ShapeError(f"{op}: padded input size {length} along spatial dim {j} is "
                             f"smaller than the kernel span {span} (input shape {x.shape}, "
                             f"weight shape {weight_shape})")
        out_sizes.append((length - span) // stride[j] + 1)
    sizes = [groups, per_group] + list(kernel) + [n] + out_sizes
    # Source coordinates: n; group * per_group + channel; out * stride + tap * dilation.
    src = [[(2 + nd, 1)], [(0, per_group), (1, 1)]]
    for j in range(nd):
        src.append([(3 + nd + j, stride[j]), (2 + j, dilation[j])])
    cols = gather_linear(xp, sizes, src)
    cols = cols.reshape([Expr(groups), Expr(per_group) * product(kernel),
                         as_expr(n) * product(out_sizes)])
    return cols, out_sizes


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, nd: int, op: str):
    x, unbatched = _batched(input, nd, op)
    w_dims = _check_weight(weight, nd, op)
    out_channels, per_group, kernel = w_dims[0], w_dims[1], w_dims[2:]
    stride = int_tuple(stride, nd, "stride", op)
    dilation = int_tuple(dilation, nd, "dilation", op)
    if groups < 1 or out_channels % groups:
        raise ShapeError(f"{op}: {out_channels} output channels (weight shape {weight.shape}) "
                         f"do not split into groups={groups}")
    dims = x.st.dims
    if as_expr(dims[1]) != Expr(per_group * groups):
        raise ShapeError(f"{op}: input of shape {input.shape} has {dims[1]} channels, but weight "
                         f"of shape {weight.shape} with groups={groups} expects "
                         f"{per_group * groups}")
    if min(stride) < 1 or min(dilation) < 1:
        raise ShapeError(f"{op}: stride {stride} and dilation {dilation} must be positive")
    pads = _padding(padding, nd, kernel, dilation, stride, op)
    n, g = dims[0], groups
    if all(k == 1 for k in kernel) and all(s == 1 for s in stride) and \
            all(p == (0, 0) for p in pads):
        # A pointwise conv: the input already is its columns, no window to gather.
        cols = x.reshape([n, Expr(g), Expr(per_group), product(dims[2:])])
        wmat = weight.reshape([g, out_channels // g, per_group])
        return _finish(cols, wmat, bias, n, g, out_channels // g, list(dims[2:]), unbatched, op)
    cols, out_sizes = conv_windows(x, kernel, stride, pads, dilation, g, op, weight.shape)
    wmat = weight.reshape([g, out_channels // g, per_group * product(kernel).as_const()])
    out = wmat.matmul(cols).reshape([Expr(g), Expr(out_channels // g), n] + list(out_sizes))
    out = out.permute([2, 0, 1] + list(range(3, 3 + nd)))
    out = out.reshape([n, Expr(out_channels)] + list(out_sizes))
    return _finish_bias(out, bias, out_channels, nd, unbatched, op)


def _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation,
                       nd: int, op: str):
    """y[o] = sum over (i, k) with i * stride - padding + k * dilation = o of x[i] * w[k]."""
    x, unbatched = _batched(input, nd, op)
    w_dims = _check_weight(weight, nd, op)
    in_channels, out_per_group, kernel = w_dims[0], w_dims[1], w_dims[2:]
    stride = int_tuple(stride, nd, "stride", op)
    dilation = int_tuple(dilation, nd, "dilation", op)
    padding = int_tuple(padding, nd, "padding", op)
    output_padding = int_tuple(output_padding, nd, "output_padding", op)
    dims = x.st.dims
    if as_expr(dims[1]) != Expr(in_channels):
        raise ShapeError(f"{op}: input of shape {input.shape} has {dims[1]} channels, but weight "
                         f"of shape {weight.shape} expects {in_channels}")
    if groups < 1 or in_channels % groups:
        raise ShapeError(f"{op}: {in_channels} input channels do not split into groups={groups}")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise ShapeError(f"{op}: stride {stride}, dilation {dilation} must be positive and "
                         f"padding {padding} non-negative")
    for op_, s, d in zip(output_padding, stride, dilation):
        if not 0 <= op_ < max(s, d):
            raise ShapeError(f"{op}: output_padding {output_padding} must be smaller than "
                             f"stride {stride} or dilation {dilation}")
    n, g = dims[0], groups
    per_group = in_channels // g
    if all(st == 1 for st in stride) and \
            all(d * (k - 1) >= p for d, k, p in zip(dilation, kernel, padding)):
        return _conv_transpose_as_conv(input, weight, bias, padding, output_padding, g,
                                       dilation, kernel, op)
    # A zero in front of each spatial axis: positions with no input element read it.
    flat_pads = []
    for _ in range(nd):
        flat_pads += [1, 0]
    xp = x.pad_zeros(flat_pads)
    out_sizes = []
    for j in range(nd):
        length = dims[2 + j]
        size = (length - 1) * stride[j] + dilation[j] * (kernel[j] - 1) + output_padding[j] + 1
        size = size - 2 * padding[j]
        if size.is_const() and size.as_const() < 1:
            raise ShapeError(f"{op}: output size {size} along spatial dim {j} is not positive "
                             f"(input shape {input.shape}, weight shape {weight.shape})")
        out_sizes.append(size)
    sizes = [n, g, per_group] + kernel + out_sizes
    c = grid_coords(sizes)
    src = [c[0], c[1] * per_group + c[2]]
    for j in range(nd):
        r = c[3 + nd + j] + padding[j] - c[3 + j] * dilation[j]  # = i * stride when it hits
        hit = r.ge(0).logical_and(r.lt(as_expr(dims[2 + j]) * stride[j]))
        if stride[j] > 1:
            hit = hit.logical_and((r % stride[j]).eq(0))
        src.append(hit * (r // stride[j] + 1))
    cols = gather_grid(xp, sizes, src)
    cols = cols.reshape([n, Expr(g), Expr(per_group) * product(kernel), product(out_sizes)])
    # w (G*Cg, Og, *K) -> (G, Og, Cg * K)
    w = weight.reshape([g, per_group, out_per_group] + kernel)
    w = w.permute([0, 2, 1] + list(range(3, 3 + nd)))
    wmat = w.reshape([g, out_per_group, per_group * product(kernel).as_const()])
    return _finish(cols, wmat, bias, n, g, out_per_group, out_sizes, unbatched, op)


def _conv_transpose_as_conv(input, weight, bias, padding, output_padding, groups, dilation,
                            kernel, op: str):
    """A transposed convolution of stride 1 as the convolution it is: y[o] = sum_k x[o + p -
    k * d] w[k] reads x padded by d * (K - 1) - p (and the output padding after) with the
    kernel flipped and its channels swapped per group, so it takes the convolutions' kernels
    (a window matmul, Winograd) instead of a gather of its own. A backward's input gradient."""
    nd = len(kernel)
    in_channels, out_per_group = weight.st.dims[0], weight.st.dims[1]
    per_group = const_int(in_channels, op, "weight dims") // groups
    w = weight.reshape([groups, per_group, out_per_group] + kernel)
    w = w.permute([0, 2, 1] + list(range(3, 3 + nd)))
    w = w.reshape([groups * const_int(out_per_group, op, "weight dims"), per_group] + kernel)
    w = w.flip(*range(2, 2 + nd))
    flat_pads = []
    for j in reversed(range(nd)):
        before = dilation[j] * (kernel[j] - 1) - padding[j]
        flat_pads += [before, before + output_padding[j]]
    return _conv_nd(input.pad_zeros(flat_pads), weight=w, bias=bias, stride=1, padding=0,
                    dilation=dilation, groups=groups, nd=nd, op=op)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 3, "conv_transpose3d")
