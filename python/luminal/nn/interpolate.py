"""interpolate (torch.nn.functional.interpolate): modes nearest, nearest-exact, linear,
bilinear, trilinear (align_corners either way) and area. One spatial axis at a time: source
indices and weights are computed in the graph in f32 exactly as PyTorch's CPU kernels do
(same float scale, same rounding), then the input is gathered along that axis."""

from __future__ import annotations

import math

import numpy as np

from .. import dtype as dt
from .._core import Expr
from ..errors import ShapeError
from ..hl_ops.shape_utils import const_int
from .pooling import _adaptive_avg_pool

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _output_sizes(lengths, size, scale_factor, recompute_scale_factor, op: str):
    """Output sizes and the scales torch hands its kernels (None: use in/out)."""
    nd = len(lengths)
    if (size is None) == (scale_factor is None):
        raise ShapeError(f"{op}: give exactly one of size and scale_factor")
    if size is not None:
        sizes = (size,) * nd if isinstance(size, int) else tuple(size)
        if len(sizes) != nd:
            raise ShapeError(f"{op}: size {sizes} must have {nd} entries for an input with "
                             f"{nd} spatial dims")
        return list(sizes), [None] * nd
    factors = (scale_factor,) * nd if isinstance(scale_factor, (int, float)) \
        else tuple(scale_factor)
    if len(factors) != nd:
        raise ShapeError(f"{op}: scale_factor {factors} must have {nd} entries")
    sizes = [math.floor(float(n) * f) for n, f in zip(lengths, factors)]
    scales = [None] * nd if recompute_scale_factor else [float(f) for f in factors]
    return sizes, scales


def _scale(length: int, out: int, scale, align_corners: bool) -> np.float32:
    """PyTorch's area_pixel_compute_scale, in f32."""
    if align_corners:
        return np.float32(length - 1) / np.float32(out - 1) if out > 1 else np.float32(0)
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(length) / np.float32(out)


def _nearest_axis(x, axis: int, length: int, out: int, scale, exact: bool):
    g = x.graph
    if not exact and out == length:
        return x
    if not exact and out == 2 * length:
        return x.index_select_tensor(axis, g.iota(Expr("z") // 2, out))
    s = float(_scale(length, out, scale, False))
    pos = g.iota("z", out).to(dt.float32)
    if exact:
        pos = pos + 0.5
    src = (pos * s).to(dt.int32)  # non-negative, so truncation is floor
    return x.index_select_tensor(axis, src.minimum(length - 1))


def _linear_axis(x, axis: int, length: int, out: int, scale, align_corners: bool):
    g = x.graph
    s = float(_scale(length, out, scale, align_corners))
    pos = g.iota("z", out).to(dt.float32)
    if align_corners:
        src = pos * s
    else:
        src = (pos + 0.5) * s - 0.5
        src = src * (src > 0).to(dt.float32)  # negative positions clamp to 0
    i0 = src.to(dt.int32)
    i1 = (i0 + 1).minimum(length - 1)
    lam1 = src - i0.to(dt.float32)
    lam0 = 1.0 - lam1
    shape = [1] * x.ndim
    shape[axis] = out
    lo = x.index_select_tensor(axis, i0)
    hi = x.index_select_tensor(axis, i1)
    return lo * lam0.reshape(shape) + hi * lam1.reshape(shape)


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest",
                align_corners=None, recompute_scale_factor=None, antialias: bool = False):
    op = "interpolate"
    nd = input.ndim - 2
    if nd < 1:
        raise ShapeError(f"{op}: expected an input of shape (N, C, *spatial), got "
                         f"{input.shape}")
    if antialias:
        raise NotImplementedError(f"{op}: antialias=True is not supported")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != nd:
        raise ShapeError(f"{op}: mode '{mode}' needs {_LINEAR_MODES[mode]} spatial dims, input "
                         f"of shape {input.shape} has {nd}")
    if align_corners is not None and mode not in _LINEAR_MODES:
        raise ShapeError(f"{op}: align_corners only applies to linear modes, not '{mode}'")
    lengths = [const_int(d, op, "spatial dims") for d in input.st.dims[2:]]
    sizes, scales = _output_sizes(lengths, size, scale_factor, recompute_scale_factor, op)
    if min(sizes) < 1:
        raise ShapeError(f"{op}: output size {tuple(sizes)} must be positive")
    if mode == "area":
        return _adaptive_avg_pool(input, sizes, nd, op)
    nearest = mode in ("nearest", "nearest-exact")
    out_dtype = input.dtype if dt.is_float(input.dtype) or nearest else dt.float32
    x = input.to(out_dtype)
    # Last axis first: the weights then combine in PyTorch's order.
    for j in reversed(range(nd)):
        axis = 2 + j
        if mode in ("nearest", "nearest-exact"):
            x = _nearest_axis(x, axis, lengths[j], sizes[j], scales[j], mode == "nearest-exact")
        elif mode in _LINEAR_MODES:
            x = _linear_axis(x, axis, lengths[j], sizes[j], scales[j], bool(align_corners))
        else:
            raise ShapeError(f"{op}: mode '{mode}' is not supported (nearest, nearest-exact, "
                             f"linear, bilinear, trilinear, area)")
    return x
