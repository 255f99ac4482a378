"""The adjoint of a view and of a scatter: how a gradient read through a ShapeTracker flows back
onto the source buffer's elements. A view's adjoint is more views (slices for masks, sums for
broadcast axes, flips, a permute, then zero-pads that put each element at its stride); a view
whose strides overlap, and a Gather's indices, fall back to a one-hot scatter-add (O(gradient
elements x source elements): see ``scatter_add``). Not here: the per-op rules (autograd.py).
"""

from __future__ import annotations

from .._core import Expr
from ..hl_ops.shape_utils import product
from ..hl_ops.tensor_utils import where

_ORDER_SYMBOL_VALUE = 1009  # symbols stand for this when ordering strides (symbolic dims)


def _order_key(e: Expr) -> int:
    """A stride's size for sorting: its value with every symbol standing for a large dim."""
    return e.eval({s: _ORDER_SYMBOL_VALUE for s in e.symbols()})


def scatter_add(values, indices, size):
    """A float vector of ``size`` whose element j is the sum of ``values`` where ``indices``
    is j (indices outside [0, size) are dropped). Built from primitives as a one-hot compare
    and a sum: O(values x size) work. (A ScatterAdd primitive would make this O(values).)"""
    g = values.graph
    flat_values = values.reshape(1, -1)
    flat_indices = indices.reshape(1, -1)
    rows = g.iota(Expr("z"), size).reshape(size, 1)
    hits = rows.eq(flat_indices)
    zero = g.constant(0.0, values.dtype)
    return where(hits, flat_values, zero).sum(1)


def view_adjoint(grad, view, source_dims):
    """The gradient of the contiguous buffer of ``source_dims`` that ``view`` reads, given the
    gradient ``grad`` of the view's elements (shape ``view.dims``)."""
    if view.is_contiguous() and view.numel() == product(source_dims):  # not a prefix of it
        return grad.reshape(source_dims)
    dims = list(view.dims)
    strides = list(view.strides)
    offset = view.offset
    # masked-out elements read zeros: their gradient goes nowhere
    for k in range(len(dims)):
        lo, hi = view.mask_lo[k], view.mask_hi[k]
        if lo != Expr(0) or hi != dims[k]:
            grad = grad._with_view(grad.st.slice(k, lo, hi, 1))
            offset = offset + lo * strides[k]
            dims[k] = hi - lo
    # broadcast axes read one element many times: sum over them; size-1 axes carry nothing
    for k in reversed(range(len(dims))):
        if dims[k] == Expr(1):
            grad = grad.squeeze(k)
            del dims[k], strides[k]
    k = len(dims)
    while k > 0:
        k -= 1
        if strides[k] != Expr(0):
            continue
        first = k
        while first > 0 and strides[first - 1] == Expr(0):
            first -= 1
        grad = _sum_axes(grad, first, k + 1)
        del dims[first:k + 1], strides[first:k + 1]
        k = first
    # flipped axes
    for k in range(len(dims)):
        if _order_key(strides[k]) < 0:
            grad = grad._with_view(grad.st.flip(k))
            offset = offset + (dims[k] - 1) * strides[k]
            strides[k] = -strides[k]
    order = sorted(range(len(dims)), key=lambda k: -_order_key(strides[k]))
    grad = grad.permute(order) if order != list(range(len(dims))) else grad
    dims = [dims[k] for k in order]
    strides = [strides[k] for k in order]
    placed = _place_strided(grad, dims, strides)
    if placed is None:
        return _dense_adjoint(grad, dims, strides, offset, source_dims)
    block, length = placed
    total = product(source_dims)
    after = total - offset - length
    view_out = block.st.pad(0, offset, after)
    return block._with_view(view_out).reshape(source_dims)


def _sum_axes(grad, first: int, stop: int):
    """``grad`` summed over its axes [first, stop): one reduction over them merged into one
    axis where a view can merge them (a weight's gradient over batch and sequence is then one
    GEMM of K = batch x sequence: the lowering reads the merged axis as digits of one index,
    kernel/view_index.h), else one reduction each, innermost first. Measured on CpuRuntime,
    the (16, 128, 64) -> 256 Linear's weight gradient: 0.36 ms merged, 0.68 ms as a batched
    GEMM over the sequence and a sum over the batch after it."""
    if stop - first > 1:
        dims = list(grad.st.dims)
        merged = grad.st.reshape(dims[:first] + [product(dims[first:stop])] + dims[stop:])
        if merged is not None:
            return grad._with_view(merged).sum(first)
    for axis in reversed(range(first, stop)):
        grad = grad.sum(axis)
    return grad


def _place_strided(grad, dims, strides):
    """``grad`` (shape ``dims``, strides descending and positive) laid out as a 1-d block
    where element i sits at sum(i_k * strides_k); (block, its length), or None when the strides
    overlap (two elements at one place). Lengths are read back from the views, which clamp a
    slice of a symbolic length at 0 (max(s*4 - 2, 0)): pads computed from them then add up to
    the source's size exactly, and the final reshape can prove it."""
    if not dims:
        return grad.reshape(1), Expr(1)
    t = grad.reshape(list(dims) + [Expr(1)])
    for k in reversed(range(len(dims))):
        length = t.st.dims[k + 1]  # the block one index of axis k places
        gap = strides[k] - length
        if _order_key(gap) < 0:
            return None
        if gap != Expr(0):
            t = t._with_view(t.st.pad(k + 1, Expr(0), gap))
        t = t.reshape(list(dims[:k]) + [dims[k] * strides[k]])
        new_length = (dims[k] - 1) * strides[k] + length
        if new_length != dims[k] * strides[k]:
            t = t._with_view(t.st.slice(k, Expr(0), new_length, 1))
    return t, t.st.dims[0]


def _dense_adjoint(grad, dims, strides, offset, source_dims):
    """The adjoint of a strided read whose strides overlap: each element of ``grad`` (shape
    ``dims``) scatter-added onto the source element offset + sum(i_k * strides_k)."""
    z = Expr("z")
    index = offset
    inner = Expr(1)
    for k in reversed(range(len(dims))):
        coord = z // inner % dims[k] if k else z // inner
        index = index + coord * strides[k]
        inner = inner * dims[k]
    count = product(dims)
    indices = grad.graph.iota(index, count)
    return scatter_add(grad.reshape(count), indices, product(source_dims)).reshape(source_dims)
