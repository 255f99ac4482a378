"""Pooling with torch.nn.functional's names and arguments: max_pool1d/2d/3d, avg_pool1d/2d/3d
(padding, ceil_mode, count_include_pad, divisor_override; max pooling's return_indices: the
flat place of each window's first maximum in its input plane) and adaptive_avg_pool1d/2d/3d.
Windows come from one Iota+Gather over the padded input; adaptive pooling is one small
averaging matrix per spatial axis."""

from __future__ import annotations

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError
from ..hl_ops.shape_utils import const_int, int_tuple
from ._grid import gather_linear, grid_coords, iota_grid
from .masks import neg_inf_where_false


def _out_size(length: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size; with ceil_mode the last window must start inside the
    input or its left padding."""
    span = length + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    return out


def _windows(input, nd: int, kernel_size, stride, padding, dilation, ceil_mode, op: str):
    """The pooling windows of ``input`` (..., *L) as (..., *O, *K) with padded places reading
    0, the window geometry, and the spatial sizes."""
    if input.ndim < nd + 1:
        raise ShapeError(f"{op}: expected an input with at least {nd + 1} dims, got shape "
                         f"{input.shape}")
    kernel = int_tuple(kernel_size, nd, "kernel_size", op, one_for_all=True)
    stride = kernel if stride is None or stride == [] or stride == () else \
        int_tuple(stride, nd, "stride", op, one_for_all=True)
    padding = int_tuple(padding, nd, "padding", op, one_for_all=True)
    dilation = int_tuple(dilation, nd, "dilation", op, one_for_all=True)
    lead = list(input.st.dims[:input.ndim - nd])
    lengths = [const_int(d, op, "spatial dims") for d in input.st.dims[input.ndim - nd:]]
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1:
        raise ShapeError(f"{op}: kernel_size {kernel}, stride {stride} and dilation {dilation} "
                         f"must be positive")
    if any(p < 0 or 2 * p > k for p, k in zip(padding, kernel)):
        raise ShapeError(f"{op}: padding {padding} must be at most half of kernel_size {kernel}")
    outs = [_out_size(n, k, s, p, d, ceil_mode)
            for n, k, s, p, d in zip(lengths, kernel, stride, padding, dilation)]
    if min(outs) < 1:
        raise ShapeError(f"{op}: input of shape {input.shape} is too small for kernel_size "
                         f"{kernel} with padding {padding} and dilation {dilation}")
    flat_pads = []
    for n, o, k, s, p, d in reversed(list(zip(lengths, outs, kernel, stride, padding,
                                              dilation))):
        flat_pads += [p, max(0, (o - 1) * s + (k - 1) * d + 1 - n - p)]
    xp = input.pad_zeros(flat_pads)
    sizes = lead + outs + list(kernel)
    m = len(lead)
    src = [[(i, 1)] for i in range(m)] + [[(m + j, stride[j]), (m + nd + j, dilation[j])]
                                          for j in range(nd)]
    geometry = (kernel, stride, padding, dilation, lengths, outs)
    return gather_linear(xp, sizes, src), geometry


def _inside(graph, geometry, nd: int, lo_pad: bool):
    """Int (*K, *O) tensor: 1 where the window place lies in the input (lo_pad=False) or in
    the input plus its explicit padding (lo_pad=True), else 0. Window place first, so that what
    is computed from it is stored in that order, and a kernel that reads it along an output row
    (viewed as (*O, *K) by _windows_view) reads it contiguously and vectorizes."""
    kernel, stride, padding, dilation, lengths, outs = geometry
    sizes = list(kernel) + list(outs)
    c = grid_coords(sizes)
    inside = Expr(1)
    for j in range(nd):
        pos = c[nd + j] * stride[j] + c[j] * dilation[j]  # in padded coordinates
        lo, hi = (0, lengths[j] + 2 * padding[j]) if lo_pad else \
            (padding[j], lengths[j] + padding[j])
        inside = inside.logical_and(pos.ge(lo).logical_and(pos.lt(hi)))
    return iota_grid(graph, sizes, inside)


def _windows_view(t, nd: int):
    """A (*K, *O) tensor viewed as (*O, *K)."""
    return t.permute(*range(nd, 2 * nd), *range(nd))


def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode, return_indices, op):
    # Ints go through f32 (exact below 2**24) so that padding can hold -inf.
    x = input if dt.is_float(input.dtype) else input.to(dt.float32)
    windows, geometry = _windows(x, nd, kernel_size, stride, padding, dilation, ceil_mode, op)
    # Places outside the input must lose to every real value: add -inf there.
    outside = neg_inf_where_false(_inside(input.graph, geometry, nd, lo_pad=False))
    windows = windows + _windows_view(outside.to(windows.dtype), nd)
    axes = tuple(range(windows.ndim - nd, windows.ndim))
    out = windows.amax(axes).to(input.dtype)
    if not return_indices:
        return out
    return out, _argmax_places(windows, geometry, nd)


def _argmax_places(windows, geometry, nd: int):
    """Int (..., *O): the flat index, within its input plane, of each window's first
    maximum (torch's return_indices)."""
    kernel, stride, padding, dilation, lengths, outs = geometry
    area = 1
    for k in kernel:
        area *= k
    lead = list(windows.st.dims[:windows.ndim - 2 * nd])
    local = windows.reshape(*(lead + list(outs) + [area])).argmax(-1)  # (..., *O)
    sizes = list(outs) + [area]
    c = grid_coords(sizes)
    place, inner = Expr(0), Expr(1)
    for j in reversed(range(nd)):  # window offset j of the flat one, then its input place
        offset = (c[nd] // inner) % kernel[j] if j else c[nd] // inner
        inner = inner * kernel[j]
        pos = c[j] * stride[j] + offset * dilation[j] - padding[j]
        plane = 1
        for n in lengths[j + 1:]:
            plane *= n
        place = place + pos * plane
    table = iota_grid(windows.graph, sizes, place)  # (*O, area)
    picks = windows.graph.iota("z", area).eq(local.unsqueeze(-1))
    return (picks.to(dt.int32) * table).sum(-1)


def _avg_pool(input, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, op):
    windows, geometry = _windows(input, nd, kernel_size, stride, padding, 1, ceil_mode, op)
    axes = tuple(range(windows.ndim - nd, windows.ndim))
    x = windows if dt.is_float(windows.dtype) else windows.to(dt.float32)
    total = x.sum(axes)
    if divisor_override:
        return total / float(divisor_override)
    count = _inside(input.graph, geometry, nd, lo_pad=count_include_pad).sum(tuple(range(nd)))
    return total / count.to(x.dtype)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool3d")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool3d")


def _averaging_matrix(graph, length: int, out: int):
    """(out, length) matrix: row i averages input places [floor(i*L/O), ceil((i+1)*L/O))."""
    c = grid_coords([out, length])
    start = (c[0] * length) // out
    end = ((c[0] + 1) * length + out - 1) // out
    inside = iota_grid(graph, [out, length], c[1].ge(start).logical_and(c[1].lt(end)))
    z = Expr("z")
    count = graph.iota(((z + 1) * length + out - 1) // out - (z * length) // out, out)
    return inside.to(dt.float32) / count.to(dt.float32).unsqueeze(1)


def _adaptive_avg_pool(input, output_size, nd: int, op: str):
    if input.ndim < nd + 1:
        raise ShapeError(f"{op}: expected an input with at least {nd + 1} dims, got shape "
                         f"{input.shape}")
    lengths = [const_int(d, op, "spatial dims") for d in input.st.dims[input.ndim - nd:]]
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nd
    output_size = tuple(output_size)
    if len(output_size) != nd:
        raise ShapeError(f"{op}: output_size {output_size} must have {nd} entries")
    outs = [n if o is None else o for n, o in zip(lengths, output_size)]
    if min(outs) < 1 or min(lengths) < 1:
        raise ShapeError(f"{op}: output_size {output_size} and input shape {input.shape} must "
                         f"be positive")
    x = input if dt.is_float(input.dtype) else input.to(dt.float32)
    out_dtype = x.dtype
    x = x.to(dt.float32)
    for j in range(nd):
        axis = input.ndim - nd + j
        if outs[j] == lengths[j]:
            continue
        mat = _averaging_matrix(input.graph, lengths[j], outs[j])
        # Move axis last, contract it with the matrix, move the result back.
        moved = x.transpose(axis, -1)
        x = moved.matmul(mat.transpose(0, 1)).transpose(axis, -1)
    return x.to(out_dtype)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 3, "adaptive_avg_pool3d")
