"""Core ATen operators (what torch.compile's AOT autograd hands a backend, after the core ATen
decompositions) in luminal terms: ATEN maps each OpOverload to a function of the converted
arguments (GraphTensors, Python scalars, Exprs for symbolic sizes) returning a GraphTensor, a
tuple of them (None where an output is one luminal does not compute, such as max_pool's
indices), or an Expr. An operator missing here, or a call whose arguments it refuses
(Unsupported), makes the converter hand the graph back to PyTorch. Not here: walking the FX
graph (convert.py) or running it (backend.py)."""

from __future__ import annotations

import operator

import torch

from .. import dtype as dt
from ..hl_ops.joining import cat
from ..nn import functional as F
from . import aten_backward
from .unsupported import Unsupported

aten = torch.ops.aten


def to_dtype(torch_dtype):
    """The luminal dtype holding a torch dtype's values (64-bit ints as 32-bit ones)."""
    table = {torch.float32: dt.float32, torch.float16: dt.float16, torch.bfloat16: dt.bfloat16,
             torch.int32: dt.int32, torch.int64: dt.int32, torch.int16: dt.int32,
             torch.int8: dt.int32, torch.uint8: dt.int32, torch.bool: dt.bool_,
             torch.float64: dt.float32}
    if torch_dtype not in table:
        raise Unsupported(f"dtype {torch_dtype}")
    return table[torch_dtype]


def _dim(d, ndim):
    return d + ndim if d < 0 else d


def _axis_slice(x, dim, index):
    """x[..., index, ...] with ``index`` (an int or a slice) at axis ``dim``."""
    return x[(slice(None),) * _dim(dim, x.ndim) + (index,)]


def _slice(x, dim=0, start=None, end=None, step=1):
    n = x.shape[_dim(dim, x.ndim)]
    start = 0 if start is None else start
    end = n if end is None or (isinstance(end, int) and isinstance(n, int) and end > n) else end
    return _axis_slice(x, dim, slice(start, end, step))


def _reduce(method):
    def reduce(x, dim=None, keepdim=False, dtype=None):
        out = getattr(x, method)(dim=list(dim) if dim else None, keepdim=keepdim)
        return out if dtype is None else out.to(to_dtype(dtype))
    return reduce


def _var(x, dim=None, correction=1, keepdim=False):
    correction = 1 if correction is None else correction
    return x.var(dim=list(dim) if dim else None, correction=correction, keepdim=keepdim)


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
    if divisor_override is not None:
        raise Unsupported("avg_pool2d with divisor_override")
    return F.avg_pool2d(x, tuple(kernel), tuple(stride) or None, padding, ceil_mode,
                        count_include_pad)


def _creation(cx_method):
    def create(graph, *args, dtype=None, **_):
        return getattr(graph, cx_method)(*args, dtype=None if dtype is None else to_dtype(dtype))
    return create


def _addmm(bias, a, b, beta=1, alpha=1):
    prod = a @ b
    prod = prod if alpha == 1 else prod * alpha
    return prod + (bias if beta == 1 else bias * beta)


def _split(x, sizes, dim=0):
    out, start = [], 0
    for size in sizes:
        out.append(_axis_slice(x, dim, slice(start, start + size)))
        start = start + size
    return tuple(out)


def _split_even(x, size, dim=0):
    n = x.shape[_dim(dim, x.ndim)]
    if not isinstance(n, int):
        raise Unsupported("split of a symbolic axis")
    return _split(x, [min(size, n - i) for i in range(0, n, size)], dim)


def _index(x, indices):
    """x[indices]: one index tensor, at the first axis or after full slices (None)."""
    given = [(i, t) for i, t in enumerate(indices) if t is not None]
    if len(given) != 1:
        raise Unsupported("index with more than one index tensor")
    axis, index = given[0]
    if index.dtype == dt.bool_:
        raise Unsupported("index with a boolean mask (its result's shape depends on values)")
    flat = index.reshape(-1)
    picked = x.index_select(axis, flat)
    shape = list(x.shape[:axis]) + list(index.shape) + list(x.shape[axis + 1:])
    return picked.reshape(*shape)


def _to_copy(x, dtype=None, **_):
    return x if dtype is None else x.to(to_dtype(dtype))


def _scalar(graph, value, dtype=None, **_):
    return graph.full((), value, None if dtype is None else to_dtype(dtype))


def _cat(tensors, dim=0):
    """torch.cat, which skips 1-d empty tensors beside tensors of more dims (a KV cache's
    initial state)."""
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    return cat(kept or list(tensors), dim) if len(kept) != 1 else kept[0]


def _like(x, value, dtype):
    return x.graph.full_like(x, value, None if dtype is None else to_dtype(dtype))


def _where(cond, a, b):
    """torch.where(cond, a, b); a scalar ``a`` as b where not cond."""
    if hasattr(a, "where"):
        return a.where(cond, b)
    if hasattr(b, "where"):
        return b.where(cond.logical_not(), a)
    raise Unsupported("where of two scalars")


def _same(x, *args, **kwargs):
    return x


# An entry taking the graph first (creation ops) is listed in NEEDS_GRAPH.
ATEN = {
    aten.add.Tensor: lambda a, b, alpha=1: a + (b if alpha == 1 else b * alpha),
    aten.add.Scalar: lambda a, b, alpha=1: a + b * alpha,
    aten.sub.Tensor: lambda a, b, alpha=1: a - (b if alpha == 1 else b * alpha),
    aten.sub.Scalar: lambda a, b, alpha=1: a - b * alpha,
    aten.rsub.Scalar: lambda a, b, alpha=1: b - a * alpha,
    aten.mul.Tensor: operator.mul,
    aten.mul.Scalar: operator.mul,
    aten.div.Tensor: operator.truediv,
    aten.div.Scalar: operator.truediv,
    aten.true_divide.Tensor: operator.truediv,
    aten.div.Tensor_mode: lambda a, b, rounding_mode=None: (
        a / b if rounding_mode is None else (a / b).floor() if rounding_mode == "floor"
        else (a / b).trunc()),
    aten.remainder.Tensor: lambda a, b: a.remainder(b),
    aten.remainder.Scalar: lambda a, b: a.remainder(b),
    aten.fmod.Tensor: lambda a, b: a.fmod(b),
    aten.fmod.Scalar: lambda a, b: a.fmod(b),
    aten.pow.Tensor_Scalar: lambda a, b: a.pow(b),
    aten.pow.Tensor_Tensor: lambda a, b: a.pow(b),
    aten.neg.default: operator.neg,
    aten.abs.default: lambda x: x.abs(),
    aten.exp.default: lambda x: x.exp(),
    aten.exp2.default: lambda x: x.exp2(),
    aten.expm1.default: lambda x: x.expm1(),
    aten.log.default: lambda x: x.log(),
    aten.log2.default: lambda x: x.log2(),
    aten.log1p.default: lambda x: x.log1p(),
    aten.sqrt.default: lambda x: x.sqrt(),
    aten.rsqrt.default: lambda x: x.rsqrt(),
    aten.reciprocal.default: lambda x: x.reciprocal(),
    aten.sin.default: lambda x: x.sin(),
    aten.cos.default: lambda x: x.cos(),
    aten.tanh.default: lambda x: x.tanh(),
    aten.erf.default: lambda x: x.erf(),
    aten.sigmoid.default: lambda x: x.sigmoid(),
    aten.relu.default: lambda x: x.relu(),
    aten.gelu.default: lambda x, approximate="none": x.gelu(approximate=approximate),
    aten.silu.default: lambda x: x.silu(),
    aten.floor.default: lambda x: x.floor(),
    aten.ceil.default: lambda x: x.ceil(),
    aten.round.default: lambda x: x.round(),
    aten.trunc.default: lambda x: x.trunc(),
    aten.sign.default: lambda x: x.sign(),
    aten.clamp.default: lambda x, lo=None, hi=None: x.clamp(lo, hi),
    aten.clamp.Tensor: lambda x, lo=None, hi=None: x.clamp(lo, hi),
    aten.minimum.default: lambda a, b: a.minimum(b),
    aten.maximum.default: lambda a, b: a.maximum(b),
    aten.where.self: _where,
    aten.eq.Tensor: operator.eq, aten.eq.Scalar: operator.eq,
    aten.ne.Tensor: operator.ne, aten.ne.Scalar: operator.ne,
    aten.lt.Tensor: operator.lt, aten.lt.Scalar: operator.lt,
    aten.le.Tensor: operator.le, aten.le.Scalar: operator.le,
    aten.gt.Tensor: operator.gt, aten.gt.Scalar: operator.gt,
    aten.ge.Tensor: operator.ge, aten.ge.Scalar: operator.ge,
    aten.logical_and.default: lambda a, b: a.logical_and(b),
    aten.logical_or.default: lambda a, b: a.logical_or(b),
    aten.logical_xor.default: lambda a, b: a.logical_xor(b),
    aten.logical_not.default: lambda a: a.logical_not(),
    aten.bitwise_not.default: lambda a: a.logical_not() if a.dtype == dt.bool_ else
    _unsupported("bitwise_not of integers"),
    aten.isnan.default: lambda x: x.isnan(),
    aten.isinf.default: lambda x: x.isinf(),
    aten.any.dim: lambda x, dim, keepdim=False: x.any(dim, keepdim=keepdim),
    aten.any.default: lambda x: x.any(),
    aten.all.dim: lambda x, dim, keepdim=False: x.all(dim, keepdim=keepdim),
    aten.sum.dim_IntList: _reduce("sum"),
    aten.sum.default: lambda x, dtype=None: _reduce("sum")(x, None, False, dtype),
    aten.mean.dim: _reduce("mean"),
    aten.mean.default: lambda x, dtype=None: _reduce("mean")(x, None, False, dtype),
    aten.amax.default: lambda x, dim=(), keepdim=False: x.amax(list(dim) or None, keepdim),
    aten.amin.default: lambda x, dim=(), keepdim=False: x.amin(list(dim) or None, keepdim),
    aten.prod.dim_int: lambda x, dim, keepdim=False, dtype=None: x.prod(dim, keepdim=keepdim),
    aten.argmax.default: lambda x, dim=None, keepdim=False: x.argmax(dim, keepdim=keepdim),
    aten.argmin.default: lambda x, dim=None, keepdim=False: x.argmin(dim, keepdim=keepdim),
    aten.var.correction: _var,
    aten.cumsum.default: lambda x, dim, dtype=None: x.cumsum(dim),
    aten._softmax.default: lambda x, dim, half_to_float=False: x.softmax(dim),
    aten._log_softmax.default: lambda x, dim, half_to_float=False: x.log_softmax(dim),
    aten.native_layer_norm.default: _layer_norm,
    aten._native_batch_norm_legit_no_training.default: _batch_norm,
    aten._native_batch_norm_legit_functional.default: _batch_norm_training,
    aten.convolution.default: _convolution,
    aten.convolution_backward.default: aten_backward.convolution_backward,
    aten.max_pool2d_with_indices_backward.default:
        aten_backward.max_pool2d_with_indices_backward,
    aten.max_pool2d_with_indices.default: _max_pool2d,
    aten.avg_pool2d.default: _avg_pool2d,
    aten.mm.default: operator.matmul,
    aten.bmm.default: operator.matmul,
    aten.addmm.default: _addmm,
    aten.view.default: lambda x, size: x.reshape(*size),
    aten._unsafe_view.default: lambda x, size: x.reshape(*size),
    aten.reshape.default: lambda x, size: x.reshape(*size),
    aten.permute.default: lambda x, dims: x.permute(*dims),
    aten.t.default: lambda x: x.t(),
    aten.transpose.int: lambda x, a, b: x.transpose(a, b),
    aten.expand.default: lambda x, size, implicit=False: x.expand(*size),
    aten.unsqueeze.default: lambda x, dim: x.unsqueeze(dim),
    aten.squeeze.dim: lambda x, dim: x.squeeze(dim),
    aten.squeeze.dims: lambda x, dims: x.squeeze(tuple(dims)),
    aten.squeeze.default: lambda x: x.squeeze(),
    aten.slice.Tensor: _slice,
    aten.select.int: lambda x, dim, index: _axis_slice(x, dim, index),
    aten.cat.default: lambda tensors, dim=0: _cat(tensors, dim),
    aten.split_with_sizes.default: _split,
    aten.split.Tensor: _split_even,
    aten.flip.default: lambda x, dims: x.flip(list(dims)),
    aten.embedding.default: lambda w, ids, padding_idx=-1, *rest: F.embedding(ids, w),
    aten.index_select.default: lambda x, dim, index: x.index_select(dim, index),
    aten.gather.default: lambda x, dim, index, sparse_grad=False: x.gather(dim, index),
    aten.index.Tensor: _index,
    aten.clone.default: _same,
    aten.alias.default: _same,
    aten.lift_fresh_copy.default: _same,
    aten.detach.default: _same,
    aten.contiguous.default: _same,
    aten._to_copy.default: _to_copy,
    torch.ops.prims.convert_element_type.default: lambda x, dtype: x.to(to_dtype(dtype)),
    aten.constant_pad_nd.default: lambda x, pad, value=0.0: x.pad(list(pad), value=value),
    aten.tril.default: lambda x, diagonal=0: x.tril(diagonal),
    aten.triu.default: lambda x, diagonal=0: x.triu(diagonal),
    aten.full.default: _creation("full"),
    aten.arange.start_step: _creation("arange"),
    aten.arange.start: _creation("arange"),
    aten.arange.default: _creation("arange"),
    aten.scalar_tensor.default: _scalar,
    aten.full_like.default: lambda x, value, dtype=None, **_: _like(x, value, dtype),
    aten.zeros_like.default: lambda x, dtype=None, **_: _like(x, 0, dtype),
    aten.ones_like.default: lambda x, dtype=None, **_: _like(x, 1, dtype),
    operator.getitem: lambda seq, i: seq[i],
    operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
    operator.floordiv: operator.floordiv, operator.mod: operator.mod,
    operator.truediv: operator.truediv, operator.neg: operator.neg,
}
# Entries whose size argument is replaced by the call's own output shape (FX records it, with
# -1 resolved, also where sizes are symbolic).
SIZED_BY_OUTPUT = {aten.view.default, aten._unsafe_view.default, aten.reshape.default,
                   aten.expand.default}
NEEDS_GRAPH = {aten.full.default, aten.arange.start_step, aten.arange.start,
               aten.arange.default, aten.scalar_tensor.default}


def _unsupported(reason):
    raise Unsupported(reason)
