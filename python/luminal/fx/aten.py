"""Core ATen operators (what torch.compile's AOT autograd hands a backend, after the core ATen
decompositions) in luminal terms: ATEN maps each OpOverload to a function of the converted
arguments (GraphTensors, Python scalars, Exprs for symbolic sizes) returning a GraphTensor, a
tuple of them (None where an output is one luminal does not compute, such as max_pool's
indices), or an Expr. An operator missing here, or a call whose arguments it refuses
(Unsupported), makes the converter hand the graph back to PyTorch. The indexing, scatter and
sorting entries (aten_indexing.py) and the layer ops' (aten_nn.py) are merged in. Not here:
walking the FX graph, in-place calls and as_strided (convert.py), or running it (backend.py)."""

from __future__ import annotations

import operator

import torch

from .. import dtype as dt
from .. import linalg
from ..hl_ops.joining import cat
from ..nn import functional as F
from .aten_indexing import INDEXING
from .aten_nn import NN
from .unsupported import Unsupported

aten = torch.ops.aten


def to_dtype(torch_dtype):
    """The luminal dtype holding a torch dtype's values (64-bit ints as 32-bit ones)."""
    table = {torch.float32: dt.float32, torch.float16: dt.float16, torch.bfloat16: dt.bfloat16,
             torch.int32: dt.int32, torch.int64: dt.int32, torch.int16: dt.int32,
             torch.int8: dt.int32, torch.uint8: dt.int32, torch.bool: dt.bool_,
             torch.float64: dt.float32}
    if torch_dtype not in table:
        why = ": luminal has no complex numbers" if torch_dtype.is_complex else ""
        raise Unsupported(f"dtype {torch_dtype}{why}")
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


def _empty(graph, size, dtype=None, **_):
    """torch.empty: uninitialized memory, which zeros are a valid value of."""
    return graph.full(list(size), 0, to_dtype(dtype or torch.float32))


def _elu(x, alpha=1, scale=1, input_scale=1):
    negative = (x * input_scale).minimum(0.0).expm1() * (alpha * scale)
    return x.relu() * scale + negative


def _round_decimals(x, decimals=0):
    return x.round(decimals)


def _extreme_dim(method):
    def extreme(x, dim, keepdim=False):
        return tuple(getattr(x, method)(dim, keepdim))
    return extreme


def _max_finite(a, b, largest):
    """torch.fmax / fmin: the larger (smaller) of a and b, NaN only where both are."""
    picked = a.maximum(b) if largest else a.minimum(b)
    return _where(a.isnan(), b, _where(b.isnan(), a, picked))


def _addmv(bias, mat, vec, beta=1, alpha=1):
    prod = mat @ vec
    return (prod if alpha == 1 else prod * alpha) + (bias if beta == 1 else bias * beta)


def _addbmm(bias, a, b, beta=1, alpha=1):
    prod = (a @ b).sum(0)
    return (prod if alpha == 1 else prod * alpha) + (bias if beta == 1 else bias * beta)


def _cdist(x1, x2, p, compute_mode=None):
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return diff.norm(p, -1)




def _safe_softmax(x, dim, dtype=None):
    from ..nn.sdpa import safe_softmax

    out = safe_softmax(x.to(dt.float32) if dt.is_float(x.dtype) else x, dim)
    return out.to(to_dtype(dtype) if dtype is not None else x.dtype)


def decompositions() -> dict:
    """The core ATen decompositions the backend and torch.export run before converting, less
    two, kept whole so that a model's SDPA reaches the same fused attention kernel as
    luminal.nn's: aten._scaled_dot_product_flash_attention_for_cpu (what SDPA dispatches to
    on the CPU; aten_nn: luminal.nn's attention, and the logsumexp its backward reads, which
    the decomposition got wrong) and aten._safe_softmax (SDPA's math path elsewhere, which
    decomposes into a softmax and a where over an any of its -inf test; here the softmax our
    own attention builds)."""
    from torch._decomp import core_aten_decompositions

    table = core_aten_decompositions()
    for op in (aten._scaled_dot_product_flash_attention_for_cpu.default,
               aten._safe_softmax.default):
        table.pop(op, None)
    return table


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
    aten.clamp_min.default: lambda x, lo: x.clamp(min=lo),
    aten.clamp_min.Tensor: lambda x, lo: x.clamp(min=lo),
    aten.clamp_max.default: lambda x, hi: x.clamp(max=hi),
    aten.clamp_max.Tensor: lambda x, hi: x.clamp(max=hi),
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
    # Kept whole by decompositions(): the softmax our own attention builds, which its fused
    # kernel reads (an all -inf row gives 0s, as torch's).
    aten._safe_softmax.default: _safe_softmax,
    aten._log_softmax.default: lambda x, dim, half_to_float=False: x.log_softmax(dim),
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
    aten.empty.memory_format: _empty,
    aten.empty_permuted.default: lambda graph, size, layout, dtype=None, **_: _empty(
        graph, size, dtype),
    aten.empty_strided.default: lambda graph, size, stride, dtype=None, **_: _empty(
        graph, size, dtype),
    aten.new_empty.default: lambda x, size, dtype=None, **_: x.graph.full(
        list(size), 0, to_dtype(dtype) if dtype else x.dtype),
    aten.new_empty_strided.default: lambda x, size, stride, dtype=None, **_: x.graph.full(
        list(size), 0, to_dtype(dtype) if dtype else x.dtype),
    aten.new_zeros.default: lambda x, size, dtype=None, **_: x.graph.full(
        list(size), 0, to_dtype(dtype) if dtype else x.dtype),
    aten.new_ones.default: lambda x, size, dtype=None, **_: x.graph.full(
        list(size), 1, to_dtype(dtype) if dtype else x.dtype),
    aten.linalg_vector_norm.default: lambda x, ord=2, dim=None, keepdim=False, dtype=None:
        linalg.vector_norm(x, ord, list(dim) if dim else None, keepdim,
                           dtype=None if dtype is None else to_dtype(dtype)),
    aten.var_mean.correction: lambda x, dim=None, correction=None, keepdim=False:
        tuple(x.var_mean(list(dim) if dim else None, keepdim=keepdim,
                         correction=1 if correction is None else correction)),
    aten.repeat.default: lambda x, repeats: x.repeat(*repeats),
    aten.cumprod.default: lambda x, dim, dtype=None: x.cumprod(dim),
    aten.cummax.default: lambda x, dim: tuple(x.cummax(dim)),
    aten.cummin.default: lambda x, dim: tuple(x.cummin(dim)),
    aten.unfold.default: lambda x, dim, size, step: x.unfold(dim, size, step),
    aten.any.dims: lambda x, dim=None, keepdim=False: x.any(list(dim) if dim else None,
                                                           keepdim),
    aten.prod.default: lambda x, dtype=None: _reduce("prod")(x, None, False, dtype),
    aten.max.dim: _extreme_dim("max"),
    aten.min.dim: _extreme_dim("min"),
    aten.max.default: lambda x: x.amax(),
    aten.min.default: lambda x: x.amin(),
    aten.leaky_relu.default: lambda x, negative_slope=0.01: x.leaky_relu(negative_slope),
    aten.hardtanh.default: lambda x, min_val=-1, max_val=1: x.hardtanh(min_val, max_val),
    aten.elu.default: _elu,
    aten.log10.default: lambda x: x.log10(),
    aten.erfc.default: lambda x: x.erfc(),
    aten.tan.default: lambda x: x.tan(),
    aten.sinh.default: lambda x: (x.exp() - (-x).exp()) * 0.5,
    aten.cosh.default: lambda x: (x.exp() + (-x).exp()) * 0.5,
    aten.atan.default: lambda x: x.atan(),
    aten.atan2.default: lambda a, b: a.atan2(b),
    aten.asin.default: lambda x: x.asin(),
    aten.acos.default: lambda x: x.acos(),
    aten.asinh.default: lambda x: x.asinh(),
    aten.acosh.default: lambda x: x.acosh(),
    aten.atanh.default: lambda x: x.atanh(),
    aten.round.decimals: _round_decimals,
    aten.pow.Scalar: lambda base, exponent: base ** exponent,
    aten.fmax.default: lambda a, b: _max_finite(a, b, True),
    aten.fmin.default: lambda a, b: _max_finite(a, b, False),
    aten.hypot.default: lambda a, b: (a * a + b * b).sqrt(),
    aten.ldexp.Tensor: lambda a, b: a * b.to(dt.float32).exp2(),
    aten.addmv.default: _addmv,
    aten.addbmm.default: _addbmm,
    aten.dist.default: lambda a, b, p=2: (a - b).norm(p),
    aten._cdist_forward.default: _cdist,
    aten.view_copy.default: lambda x, size: x.reshape(*size),
    aten.permute_copy.default: lambda x, dims: x.permute(*dims),
    aten.narrow_copy.default: lambda x, dim, start, length: x.narrow(dim, start, length),
    aten.unbind_copy.int: lambda x, dim=0: tuple(x.unbind(dim)),
    operator.getitem: lambda seq, i: seq[i],
    operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
    operator.floordiv: operator.floordiv, operator.mod: operator.mod,
    operator.truediv: operator.truediv, operator.neg: operator.neg,
    **INDEXING,
    **NN,
}
# Entries whose size argument is replaced by the call's own output shape (FX records it, with
# -1 resolved, also where sizes are symbolic).
SIZED_BY_OUTPUT = {aten.view.default, aten._unsafe_view.default, aten.reshape.default,
                   aten.expand.default, aten.view_copy.default}
NEEDS_GRAPH = {aten.full.default, aten.arange.start_step, aten.arange.start,
               aten.arange.default, aten.scalar_tensor.default, aten.empty.memory_format,
               aten.empty_permuted.default, aten.empty_strided.default}


def _unsupported(reason):
    raise Unsupported(reason)
