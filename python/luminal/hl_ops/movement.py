"""Movement ops: view edits of the ShapeTracker, free until a view cannot express them (then
the tensor is materialized with ``contiguous()`` first). PyTorch names and conventions."""

from __future__ import annotations

from .._core import Expr
from ..errors import ShapeError


def _dims_tuple(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _as_expr(d):
    return d if isinstance(d, Expr) else Expr(d)


def _same(a, b) -> bool:
    return _as_expr(a) == _as_expr(b)


class MovementOps:
    def reshape(self, *shape):
        shape = list(_dims_tuple(shape))
        unknown = [i for i, d in enumerate(shape) if isinstance(d, int) and d == -1]
        if len(unknown) > 1:
            raise ShapeError(f"reshape: only one dim may be -1, got {tuple(shape)}")
        if unknown:
            known = Expr(1)
            for i, d in enumerate(shape):
                if i != unknown[0]:
                    known = known * _as_expr(d)
            total = self.view.numel()
            inferred = total // known
            if inferred * known != total:
                raise ShapeError(f"reshape: shape {self.shape} cannot be viewed as {tuple(shape)}")
            shape[unknown[0]] = inferred
        for d in shape:
            if isinstance(d, int) and d < 0:
                raise ShapeError(f"reshape: invalid dim {d} in {tuple(shape)}")
        dims = [_as_expr(d) for d in shape]
        view = self.view.reshape(dims)
        if view is None:
            view = self.contiguous().view.reshape(dims)
            return self.contiguous()._with_view(view)
        return self._with_view(view)

    view = reshape

    def permute(self, *dims):
        dims = [self._axis(d, "permute") for d in _dims_tuple(dims)]
        return self._with_view(self.view.permute(dims))

    def transpose(self, dim0: int, dim1: int):
        a, b = self._axis(dim0, "transpose"), self._axis(dim1, "transpose")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self._with_view(self.view.permute(order))

    swapaxes = transpose

    def t(self):
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor of at most 2 dims, got shape {self.shape}")
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self):
        return self.permute(list(reversed(range(self.ndim))))

    def unsqueeze(self, dim: int):
        n = self.ndim + 1
        if not -n <= dim < n:
            raise ShapeError(f"unsqueeze: dim {dim} is out of range for shape {self.shape}")
        return self._with_view(self.view.insert_axis(dim % n, 1))

    def squeeze(self, dim=None):
        if dim is None:
            axes = [i for i, d in enumerate(self.shape) if isinstance(d, int) and d == 1]
        else:
            dims = dim if isinstance(dim, (tuple, list)) else (dim,)
            axes = [self._axis(d, "squeeze") for d in dims]
            axes = [a for a in axes if _same(self.view.dims[a], 1)]
        view = self.view
        for a in sorted(axes, reverse=True):
            view = view.remove_axis(a)
        return self._with_view(view)

    def expand(self, *sizes):
        sizes = _dims_tuple(sizes)
        if len(sizes) < self.ndim:
            raise ShapeError(f"expand: {sizes} has fewer dims than shape {self.shape}")
        view = self.view
        for _ in range(len(sizes) - self.ndim):
            view = view.insert_axis(0, 1)
        for axis, size in enumerate(sizes):
            if isinstance(size, int) and size == -1:
                continue
            if _same(view.dims[axis], size):
                continue
            if not _same(view.dims[axis], 1):
                raise ShapeError(f"expand: cannot expand shape {self.shape} to {sizes}: dim "
                                 f"{axis} has size {view.dims[axis]}, not 1")
            view = view.expand_axis(axis, _as_expr(size))
        return self._with_view(view)

    broadcast_to = expand

    def expand_as(self, other):
        return self.expand(other.shape)

    def broadcast_together(self, other, op: str = "broadcast"):
        """Both tensors expanded to their common broadcast shape (PyTorch rules)."""
        a, b = self.view.dims, other.view.dims
        n = max(len(a), len(b))
        a = [Expr(1)] * (n - len(a)) + list(a)
        b = [Expr(1)] * (n - len(b)) + list(b)
        shape = []
        for x, y in zip(a, b):
            if x == y or y == Expr(1):
                shape.append(x)
            elif x == Expr(1):
                shape.append(y)
            else:
                raise ShapeError(f"{op}: shapes {self.shape} and {other.shape} do not broadcast "
                                 f"(dims {x} and {y})")
        return self.expand(shape), other.expand(shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        if self.ndim == 0:
            return self.reshape(1)
        s, e = self._axis(start_dim, "flatten"), self._axis(end_dim, "flatten")
        dims = list(self.view.dims)
        merged = Expr(1)
        for d in dims[s:e + 1]:
            merged = merged * d
        return self.reshape(dims[:s] + [merged] + dims[e + 1:])

    def flip(self, dims):
        dims = dims if isinstance(dims, (tuple, list)) else (dims,)
        view = self.view
        for d in dims:
            view = view.flip(self._axis(d, "flip"))
        return self._with_view(view)

    def pad_zeros(self, padding):
        """Zero padding; ``padding`` is PyTorch's (last_before, last_after, ...) list."""
        if len(padding) % 2 or len(padding) // 2 > self.ndim:
            raise ShapeError(f"pad: padding {tuple(padding)} does not fit shape {self.shape}")
        view = self.view
        for i in range(len(padding) // 2):
            axis = self.ndim - 1 - i
            before, after = padding[2 * i], padding[2 * i + 1]
            if (isinstance(before, int) and before < 0) or (isinstance(after, int) and after < 0):
                raise ShapeError("pad: negative padding is not supported; slice instead")
            view = view.pad(axis, _as_expr(before), _as_expr(after))
        return self._with_view(view)

    def slice_axis(self, axis: int, start=None, stop=None, step: int = 1):
        """Python-style slice of one axis (negative and out-of-range bounds clamp)."""
        axis = self._axis(axis, "slice")
        n = self.view.dims[axis]
        if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
            raise ShapeError(f"slice: step must be a positive int, got {step!r}")
        start = Expr(0) if start is None else _clamp_index(start, n)
        stop = n if stop is None else _clamp_index(stop, n)
        return self._with_view(self.view.slice(axis, start, stop, step))

    def narrow(self, dim: int, start: int, length: int):
        return self.slice_axis(dim, start, _as_expr(start) + length)

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise ShapeError("an index can only have a single ellipsis")
        consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
        if consumed > self.ndim:
            raise ShapeError(f"too many indices ({consumed}) for shape {self.shape}")
        if not any(k is Ellipsis for k in key):
            key = key + (Ellipsis,)
        expanded = []
        for k in key:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (self.ndim - consumed))
            else:
                expanded.append(k)
        out, axis = self, 0
        for k in expanded:
            if k is None:
                out = out.unsqueeze(axis)
                axis += 1
            elif isinstance(k, slice):
                out = out.slice_axis(axis, k.start, k.stop, 1 if k.step is None else k.step)
                axis += 1
            elif isinstance(k, int) and not isinstance(k, bool):
                n = out.view.dims[axis]
                if n.is_const() and not -n.as_const() <= k < n.as_const():
                    raise ShapeError(f"index {k} is out of range for dim {axis} of size {n} "
                                     f"(shape {self.shape})")
                idx = _clamp_index(k, n)
                out = out.slice_axis(axis, idx, idx + 1)
                out = out._with_view(out.view.remove_axis(axis))
            elif hasattr(k, "graph"):
                out = out.index_select_tensor(axis, k)
                axis += k.ndim
            else:
                raise ShapeError(f"unsupported index {k!r}")
        return out


def _clamp_index(i, n: Expr) -> Expr:
    """Python's slice-bound rule: negatives count from the end, then clamp to [0, n]."""
    if isinstance(i, Expr):
        return i
    if isinstance(i, bool) or not isinstance(i, int):
        raise ShapeError(f"slice bounds must be ints, got {i!r}")
    if i < 0:
        return (n + i).max(0)
    return Expr(i).min(n)


class IndexOps:
    """Indexing by integer tensors, built on Gather over flat logical indices."""

    def index_select_tensor(self, axis: int, index):
        """``self`` with axis ``axis`` replaced by the dims of int tensor ``index``."""
        from .. import dtype as dt

        self.graph._check_owns(index)
        if index.dtype not in (dt.int32, dt.bool_) or index.dtype == dt.bool_:
            raise ShapeError(f"index tensors must be int, got {dt.name(index.dtype)}")
        axis = self._axis(axis, "index")
        dims = list(self.view.dims)
        n = dims[axis]
        outer = Expr(1)
        for d in dims[:axis]:
            outer = outer * d
        inner = Expr(1)
        for d in dims[axis + 1:]:
            inner = inner * d
        flat_index = index.reshape(-1)
        # Negative indices count from the end, as in PyTorch.
        flat_index = flat_index + (flat_index < 0).to(dt.int32) * self.graph.constant(n, dt.int32)
        count = flat_index.view.dims[0]
        g = self.graph
        outer_part = g.iota(Expr("z") * n * inner, outer).reshape(outer, 1, 1)
        index_part = (flat_index * g.constant(inner, dt.int32)).reshape(1, count, 1)
        inner_part = g.iota(Expr("z"), inner).reshape(1, 1, inner)
        flat = outer_part + index_part + inner_part
        gathered = self._gather(flat)
        return gathered.reshape(dims[:axis] + list(index.view.dims) + dims[axis + 1:])

    def index_select(self, dim: int, index):
        if index.ndim != 1:
            raise ShapeError(f"index_select: index must be 1-D, got shape {index.shape}")
        return self.index_select_tensor(dim, index)
