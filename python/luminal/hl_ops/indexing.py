"""Indexing: Python ``x[...]`` (ints, slices, None, ..., int tensors and int lists with
PyTorch's advanced-indexing rules), index_select, gather, take_along_dim, diagonal,
diag_embed, tril/triu and unfold. Reads by integer tensors are one Gather over flat logical
indices built from Iota. Not here: writes by index (scatter.py), views (movement.py) and
joins (joining.py)."""

from __future__ import annotations

from typing import NamedTuple

from .._core import Expr
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from .shape_utils import broadcast_shapes, const, product
from .tensor_utils import where


class AxesLayout(NamedTuple):
    """What autograd reads of a gather_axes Gather: x as (pre, indexed block, post), the
    block's dims, and the index tensors into them, which broadcast to ``shape``."""
    pre: list
    block_dims: list
    post: list
    indices: list
    shape: list


class AlongAxisLayout(NamedTuple):
    """What autograd reads of a torch-style ``gather(dim, index)``: out[s] is x at s with
    s[axis] replaced by index[s]."""
    axis: int
    index: object


def contiguous_strides(dims) -> list:
    strides, s = [], Expr(1)
    for d in reversed(list(dims)):
        strides.insert(0, s)
        s = s * d
    return strides


def check_index(x, index, op: str):
    if not hasattr(index, "graph"):
        raise DTypeError(f"{op}: index must be an int tensor, got {type(index).__name__}")
    x.graph._check_owns(index)
    if index.dtype == dt.bool_:
        raise DTypeError(f"{op}: bool mask indices are not supported (the result's shape "
                         f"would depend on the data); index shape {index.shape}")
    if index.dtype != dt.int32:
        raise DTypeError(f"{op}: indices must be int32, got {dt.name(index.dtype)} tensor of "
                         f"shape {index.shape} (use .int())")
    return index


def _list_index(graph, values, op: str):
    """A nested list of Python ints as an int tensor: one Iota whose expression in z picks
    each value (meant for the short lists people write in ``x[[0, 2]]``)."""
    shape, flat = [], list(values)
    while flat and isinstance(flat[0], (list, tuple)):
        shape.append(len(flat))
        if any(not isinstance(v, (list, tuple)) or len(v) != len(flat[0]) for v in flat):
            raise ShapeError(f"{op}: index list {values!r} is not rectangular")
        flat = [v for row in flat for v in row]
    shape.append(len(flat))
    for v in flat:
        if isinstance(v, bool) or not isinstance(v, int):
            raise DTypeError(f"{op}: index lists must hold ints, got {v!r}")
    z = Expr("z")
    expr = Expr(0)
    for i, v in enumerate(flat):
        if v:
            expr = expr + Expr(v) * z.eq(Expr(i))
    return graph.iota(expr, len(flat)).reshape(shape)


def _select_index(x, axis: int, i: Expr):
    """``x`` at position ``i`` of ``axis``, which goes away. A view, unless the dim is
    symbolic and the slice's validity range cannot be proven whole (then a copy)."""
    view = x.st.slice(axis, i, i + 1, 1)
    part = x._with_view(view)
    if view.mask_lo[axis] != Expr(0) or view.mask_hi[axis] != Expr(1):
        part = part.contiguous()
    return part._with_view(part.st.remove_axis(axis))


def wrap_negative(index, n: Expr):
    """Negative indices count from the end, as in PyTorch's ``x[idx]``."""
    return index + (index < 0).to(dt.int32) * index.graph.constant(n, dt.int32)


def gather_axes(x, axes: list, indices: list):
    """PyTorch advanced indexing of ``x`` at the sorted positions ``axes`` by int tensors
    ``indices`` (which broadcast together): their dims replace the indexed axes in place when
    the axes are adjacent, else they come first."""
    if axes != list(range(axes[0], axes[0] + len(axes))):
        rest = [a for a in range(x.ndim) if a not in axes]
        x = x.permute(axes + rest)
        axes = list(range(len(axes)))
    dims = list(x.st.dims)
    shape = broadcast_shapes([i.st.dims for i in indices], "index",
                             [i.shape for i in indices])
    p, k, nb = axes[0], len(axes), len(shape)
    pre, post = dims[:p], dims[p + k:]
    strides = contiguous_strides(dims)
    g = x.graph
    flat = None
    for j, idx in enumerate(indices):
        term = (idx * g.constant(strides[p + j], dt.int32)).expand(shape)
        flat = term if flat is None else flat + term
    flat = flat.reshape([Expr(1)] * p + shape + [Expr(1)] * len(post))
    if pre:
        outer = g.iota(Expr("z") * product(dims[p:]), product(pre))
        flat = flat + outer.reshape(pre + [Expr(1)] * (nb + len(post)))
    if post:
        inner = g.iota(Expr("z"), product(post))
        flat = flat + inner.reshape([Expr(1)] * (p + nb) + post)
    out = x._gather(flat)
    # what the gradient reads (autograd): x as (pre, indexed block, post), the block's
    # dims and the index tensors into them, broadcast to shape
    g._gather_layouts[out.id] = AxesLayout(pre, dims[p:p + k], post, indices, shape)
    return out


class IndexOps:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        key = tuple(_list_index(self.graph, k, "index") if isinstance(k, list) else k
                    for k in key)
        if sum(k is Ellipsis for k in key) > 1:
            raise ShapeError(f"index: an index can only have a single ellipsis (shape "
                             f"{self.shape})")
        consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
        if consumed > self.ndim:
            raise ShapeError(f"index: too many indices ({consumed}) for shape {self.shape}")
        if not any(k is Ellipsis for k in key):
            key = key + (Ellipsis,)
        expanded = []
        for k in key:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (self.ndim - consumed))
            else:
                expanded.append(k)
        out, axis = self, 0
        adv_axes, adv_indices = [], []
        for k in expanded:
            if k is None:
                out = out.unsqueeze(axis)
                axis += 1
            elif isinstance(k, slice):
                step = 1 if k.step is None else k.step
                if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
                    raise ShapeError(f"index: slice step must be a positive int, got {step!r} "
                                     f"(shape {self.shape})")
                for bound in (k.start, k.stop):
                    if bound is not None and (isinstance(bound, bool) or
                                              not isinstance(bound, (int, Expr))):
                        raise DTypeError(f"index: slice bounds must be ints, got {bound!r}")
                out = out.slice_axis(axis, k.start, k.stop, step)
                axis += 1
            elif isinstance(k, int) and not isinstance(k, bool):
                n = out.st.dims[axis]
                if const(n) is not None and not -const(n) <= k < const(n):
                    raise ShapeError(f"index: {k} is out of range for dim {axis} of size {n} "
                                     f"(shape {self.shape})")
                out = _select_index(out, axis, Expr(k) if k >= 0 else n + k)
            elif hasattr(k, "graph"):
                index = check_index(out, k, "index")
                adv_axes.append(axis)
                adv_indices.append(wrap_negative(index, out.st.dims[axis]))
                axis += 1
            else:
                raise DTypeError(f"index: unsupported index {k!r} of type {type(k).__name__} "
                                 f"(shape {self.shape})")
        if adv_axes:
            out = gather_axes(out, adv_axes, adv_indices)
        return out

    def index_select(self, dim: int, index):
        index = check_index(self, index, "index_select")
        if index.ndim > 1:
            raise ShapeError(f"index_select: index must be 1-D, got shape {index.shape}")
        axis = self._axis(dim, "index_select")
        return gather_axes(self, [axis], [index.reshape(-1)])

    def index_select_tensor(self, axis: int, index):
        """``self`` with axis ``axis`` replaced by the dims of int tensor ``index``."""
        index = check_index(self, index, "index")
        return gather_axes(self, [self._axis(axis, "index")], [index])

    def gather(self, dim: int, index):
        index = check_index(self, index, "gather")
        axis = self._axis(dim, "gather")
        if index.ndim != self.ndim:
            raise ShapeError(f"gather: index of shape {index.shape} must have as many dims as "
                             f"input of shape {self.shape}")
        for e in range(self.ndim):
            a, b = const(index.st.dims[e]), const(self.st.dims[e])
            if e != axis and a is not None and b is not None and a > b:
                raise ShapeError(f"gather: index shape {index.shape} is larger than input "
                                 f"shape {self.shape} in dim {e}")
        g = self.graph
        strides = contiguous_strides(self.st.dims)
        flat = index * g.constant(strides[axis], dt.int32)
        for e in range(self.ndim):
            if e == axis:
                continue
            n = index.st.dims[e]
            coord = g.iota(Expr("z") * strides[e], n)
            flat = flat + coord.reshape([Expr(1)] * e + [n] + [Expr(1)] * (self.ndim - e - 1))
        out = self._gather(flat)
        g._gather_layouts[out.id] = AlongAxisLayout(axis, index)
        return out

    def take_along_dim(self, indices, dim=None):
        indices = check_index(self, indices, "take_along_dim")
        if dim is None:
            return self.reshape(-1).gather(0, indices.reshape(-1))
        axis = self._axis(dim, "take_along_dim")
        if indices.ndim != self.ndim:
            raise ShapeError(f"take_along_dim: indices of shape {indices.shape} must have as "
                             f"many dims as input of shape {self.shape}")
        a, b = list(self.st.dims), list(indices.st.dims)
        a[axis], b[axis] = Expr(1), Expr(1)
        shape = broadcast_shapes([a, b], "take_along_dim", [self.shape, indices.shape])
        x_shape, i_shape = list(shape), list(shape)
        x_shape[axis], i_shape[axis] = self.st.dims[axis], indices.st.dims[axis]
        return self.expand(x_shape).gather(axis, indices.expand(i_shape))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1):
        a, b = self._axis(dim1, "diagonal"), self._axis(dim2, "diagonal")
        if a == b:
            raise ShapeError(f"diagonal: dim1 and dim2 are both {a} (shape {self.shape})")
        rest = [d for d in range(self.ndim) if d not in (a, b)]
        x = self.permute(rest + [a, b])
        rows, cols = x.st.dims[-2], x.st.dims[-1]
        length = (rows - max(-offset, 0)).min(cols - max(offset, 0)).max(0)
        g = self.graph
        r = g.iota(Expr("z") + max(-offset, 0), length)
        c = g.iota(Expr("z") + max(offset, 0), length)
        return gather_axes(x, [x.ndim - 2, x.ndim - 1], [r, c])

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1):
        """torch.diag_embed: the last dim of ``self`` as the ``offset`` diagonal of new dims
        ``dim1`` and ``dim2`` (of the result), zeros elsewhere."""
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ShapeError(f"diag_embed: offset must be an int, got {offset!r}")
        ndim = self.ndim + 1
        a, b = (d + ndim if isinstance(d, int) and d < 0 else d for d in (dim1, dim2))
        for d, name in ((a, dim1), (b, dim2)):
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < ndim:
                raise ShapeError(f"diag_embed: dim {name!r} is out of range for a result of "
                                 f"{ndim} dims (input shape {self.shape})")
        if a == b:
            raise ShapeError(f"diag_embed: dim1 and dim2 are both {a} (input shape "
                             f"{self.shape})")
        x = self.unsqueeze(0) if self.ndim == 0 else self
        m = x.st.dims[-1] + abs(offset)
        g = self.graph
        rows = g.iota(Expr("z"), m).reshape(m, 1)
        cols = g.iota(Expr("z"), m).reshape(1, m)
        on = (cols - rows) == g.constant(offset, dt.int32)
        source = (cols - max(offset, 0)).clamp(min=0).minimum(
            g.constant(x.st.dims[-1] - 1, dt.int32))
        picked = gather_axes(x, [x.ndim - 1], [source])  # (..., 1, m)
        out = where(on, picked, g.constant(0, self.dtype))  # (..., m, m)
        order, batch = [], 0
        for d in range(ndim):
            if d == a:
                order.append(ndim - 2)
            elif d == b:
                order.append(ndim - 1)
            else:
                order.append(batch)
                batch += 1
        return out.permute(order)

    def _triangle(self, diagonal: int, lower: bool, op: str):
        if self.ndim < 2:
            raise ShapeError(f"{op}: needs at least 2 dims, got shape {self.shape}")
        if isinstance(diagonal, bool) or not isinstance(diagonal, int):
            raise ShapeError(f"{op}: diagonal must be an int, got {diagonal!r}")
        n, m = self.st.dims[-2], self.st.dims[-1]
        g = self.graph
        col = g.iota(Expr("z"), m).reshape(1, m)
        if lower:  # keep col - row <= diagonal, i.e. col < row + diagonal + 1
            keep = col < g.iota(Expr("z") + (diagonal + 1), n).reshape(n, 1)
        else:  # keep col - row >= diagonal, i.e. row + diagonal - 1 < col
            keep = g.iota(Expr("z") + (diagonal - 1), n).reshape(n, 1) < col
        return where(keep, self, g.constant(0, self.dtype))

    def tril(self, diagonal: int = 0):
        return self._triangle(diagonal, True, "tril")

    def triu(self, diagonal: int = 0):
        return self._triangle(diagonal, False, "triu")

    def unfold(self, dimension: int, size: int, step: int):
        if self.ndim == 0:  # torch: a scalar unfolds as a 1-element vector, without its axis
            return self.reshape(1).unfold(dimension, size, step)[0]
        axis = self._axis(dimension, "unfold")
        for name, v, low, kind in (("size", size, 0, "non-negative"),
                                   ("step", step, 1, "positive")):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ShapeError(f"unfold: {name} must be a {kind} int, got {v!r} (shape "
                                 f"{self.shape})")
        n = self.st.dims[axis]
        if const(n) is not None and size > const(n):
            raise ShapeError(f"unfold: size {size} exceeds dim {dimension} of shape "
                             f"{self.shape}")
        windows = (n - size) // step + 1
        g = self.graph
        idx = g.iota(Expr("z") * step, windows).reshape(windows, 1) + \
            g.iota(Expr("z"), size).reshape(1, size)
        out = gather_axes(self, [axis], [idx])
        return out.movedim(axis + 1, -1)
