"""Movement ops that are pure view edits of the ShapeTracker: reshape, permute, squeeze,
expand, flip, slices, split. They emit no node unless a reshape cannot be expressed as a view
(then the tensor is copied first). Ops that combine tensors (cat, pad with values, repeat,
roll) live in joining.py; indexing by tensors in indexing.py."""

from __future__ import annotations

from .._core import Expr
from ..errors import ShapeError
from .joining import JoinOps
from .shape_utils import (as_expr, broadcast_shapes, check_int, clamp_index, const, dims_tuple,
                          product, same)


class MovementOps(JoinOps):
    def _shape_args(self, shape, op: str) -> list:
        """A target shape with at most one -1 resolved against this tensor's size."""
        shape = list(dims_tuple(shape))
        unknown = [i for i, d in enumerate(shape) if isinstance(d, int) and d == -1]
        if len(unknown) > 1:
            raise ShapeError(f"{op}: only one dim may be -1, got {tuple(shape)}")
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, (int, str, Expr)):
                raise ShapeError(f"{op}: dims must be ints or Exprs, got {tuple(shape)}")
            if isinstance(d, int) and d < -1:
                raise ShapeError(f"{op}: invalid dim {d} in {tuple(shape)}")
        if unknown:
            known = product(d for i, d in enumerate(shape) if i != unknown[0])
            total = self.st.numel()
            if known == Expr(0):
                raise ShapeError(f"{op}: cannot infer -1 in {tuple(shape)} for shape "
                                 f"{self.shape}: the other dims hold 0 elements")
            inferred = total // known
            if inferred * known != total:
                raise ShapeError(f"{op}: shape {self.shape} cannot be viewed as {tuple(shape)}")
            shape[unknown[0]] = inferred
        return [as_expr(d) for d in shape]

    def reshape(self, *shape):
        dims = self._shape_args(shape, "reshape")
        view = self.st.reshape(dims)
        if view is None:
            copy = self.contiguous()
            return copy._with_view(copy.st.reshape(dims))
        return self._with_view(view)

    def view(self, *shape):
        """torch's Tensor.view: the same as reshape (a copy only where no view can express it)."""
        return self.reshape(*shape)

    def reshape_as(self, other):
        return self.reshape(other.st.dims)

    view_as = reshape_as

    def permute(self, *dims):
        dims = [self._axis(d, "permute") for d in dims_tuple(dims)]
        if sorted(dims) != list(range(self.ndim)):
            raise ShapeError(f"permute: dims {dims_tuple(dims)} are not a permutation of the "
                             f"{self.ndim} dims of shape {self.shape}")
        return self._with_view(self.st.permute(dims))

    def transpose(self, dim0: int, dim1: int):
        a, b = self._axis(dim0, "transpose"), self._axis(dim1, "transpose")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self._with_view(self.st.permute(order))

    swapaxes = transpose
    swapdims = transpose

    def movedim(self, source: int, destination: int):
        src, dst = self._axis(source, "movedim"), self._axis(destination, "movedim")
        order = [i for i in range(self.ndim) if i != src]
        order.insert(dst, src)
        return self.permute(order)

    moveaxis = movedim

    def t(self):
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor of at most 2 dims, got shape {self.shape}")
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self):
        return self.permute(list(reversed(range(self.ndim))))

    @property
    def mT(self):
        if self.ndim < 2:
            raise ShapeError(f"mT: needs at least 2 dims, got shape {self.shape}")
        return self.transpose(-2, -1)

    def unsqueeze(self, dim: int):
        n = self.ndim + 1
        check_int(dim, "unsqueeze", "dim")
        if not -n <= dim < n:
            raise ShapeError(f"unsqueeze: dim {dim} is out of range for shape {self.shape}")
        return self._with_view(self.st.insert_axis(dim % n, 1))

    def squeeze(self, dim=None):
        if dim is None:
            axes = [i for i, d in enumerate(self.st.dims) if d == Expr(1)]
        else:
            dims = dim if isinstance(dim, (tuple, list)) else (dim,)
            axes = [self._axis(d, "squeeze") for d in dims] if self.ndim else []
            axes = [a for a in set(axes) if self.st.dims[a] == Expr(1)]
        view = self.st
        for a in sorted(axes, reverse=True):
            view = view.remove_axis(a)
        return self._with_view(view)

    def expand(self, *sizes):
        sizes = dims_tuple(sizes)
        if len(sizes) < self.ndim:
            raise ShapeError(f"expand: {sizes} has fewer dims than shape {self.shape}")
        view = self.st
        lead = len(sizes) - self.ndim
        for _ in range(lead):
            view = view.insert_axis(0, 1)
        for axis, size in enumerate(sizes):
            if isinstance(size, int) and not isinstance(size, bool) and size == -1:
                if axis < lead:
                    raise ShapeError(f"expand: -1 is not allowed for the new leading dim {axis} "
                                     f"in {sizes}")
                continue
            if isinstance(size, bool) or not isinstance(size, (int, str, Expr)) or \
                    (isinstance(size, int) and size < 0):
                raise ShapeError(f"expand: invalid size {size!r} in {sizes}")
            if same(view.dims[axis], size):
                continue
            if view.dims[axis] != Expr(1):
                raise ShapeError(f"expand: cannot expand shape {self.shape} to {sizes}: dim "
                                 f"{axis} has size {view.dims[axis]}, not 1")
            view = view.expand_axis(axis, as_expr(size))
        return self._with_view(view)

    def broadcast_to(self, *sizes):
        return self.expand(*sizes)

    def expand_as(self, other):
        return self.expand(other.st.dims)

    def broadcast_together(self, other, op: str = "broadcast"):
        """Both tensors expanded to their common broadcast shape (PyTorch rules)."""
        shape = broadcast_shapes([self.st.dims, other.st.dims], op,
                                 [self.shape, other.shape])
        return self.expand(shape), other.expand(shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        if self.ndim == 0:
            return self.reshape(1)
        s, e = self._axis(start_dim, "flatten"), self._axis(end_dim, "flatten")
        if s > e:
            raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} "
                             f"for shape {self.shape}")
        dims = list(self.st.dims)
        return self.reshape(dims[:s] + [product(dims[s:e + 1])] + dims[e + 1:])

    def unflatten(self, dim: int, sizes):
        axis = self._axis(dim, "unflatten")
        if not isinstance(sizes, (tuple, list)) or not sizes:
            raise ShapeError(f"unflatten: sizes must be a non-empty tuple, got {sizes!r}")
        dims = list(self.st.dims)
        inner = _resolve(sizes, dims[axis], "unflatten", self.shape)
        return self.reshape(dims[:axis] + inner + dims[axis + 1:])

    def flip(self, *dims):
        dims = dims_tuple(dims)
        view = self.st
        for d in {self._axis(d, "flip") for d in dims}:
            view = view.flip(d)
        return self._with_view(view)

    def fliplr(self):
        return self.flip(1)

    def flipud(self):
        return self.flip(0)

    def pad_zeros(self, padding):
        """Zero padding as a view; ``padding`` is PyTorch's (last_before, last_after, ...)."""
        if len(padding) % 2 or len(padding) // 2 > self.ndim:
            raise ShapeError(f"pad: padding {tuple(padding)} does not fit shape {self.shape}")
        view = self.st
        for i in range(len(padding) // 2):
            axis = self.ndim - 1 - i
            before, after = padding[2 * i], padding[2 * i + 1]
            if (isinstance(before, int) and before < 0) or (isinstance(after, int) and after < 0):
                raise ShapeError("pad: negative padding is not supported; slice instead")
            view = view.pad(axis, as_expr(before), as_expr(after))
        return self._with_view(view)

    def slice_axis(self, axis: int, start=None, stop=None, step: int = 1):
        """Python-style slice of one axis (negative and out-of-range bounds clamp)."""
        axis = self._axis(axis, "slice")
        n = self.st.dims[axis]
        if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
            raise ShapeError(f"slice: step must be a positive int, got {step!r} (shape "
                             f"{self.shape})")
        start = Expr(0) if start is None else clamp_index(start, n)
        stop = n if stop is None else clamp_index(stop, n)
        return self._with_view(self.st.slice(axis, start, stop, step))

    def narrow(self, dim: int, start, length):
        axis = self._axis(dim, "narrow")
        n = self.st.dims[axis]
        if isinstance(start, int) and not isinstance(start, bool):
            if const(n) is not None and not -const(n) <= start <= const(n):
                raise ShapeError(f"narrow: start {start} is out of range for dim {dim} of "
                                 f"shape {self.shape}")
            start = Expr(start) if start >= 0 else n + start
        elif not isinstance(start, Expr):
            raise ShapeError(f"narrow: start must be an int, got {start!r}")
        if isinstance(length, bool) or not isinstance(length, (int, Expr)) or \
                (isinstance(length, int) and length < 0):
            raise ShapeError(f"narrow: length must be a non-negative int, got {length!r}")
        end = start + as_expr(length)
        if const(end) is not None and const(n) is not None and const(end) > const(n):
            raise ShapeError(f"narrow: start {start} + length {length} exceeds dim {dim} of "
                             f"shape {self.shape}")
        return self._with_view(self.st.slice(axis, start, end, 1))

    def split(self, split_size_or_sections, dim: int = 0):
        axis = self._axis(dim, "split")
        n = self.st.dims[axis]
        if isinstance(split_size_or_sections, (tuple, list)):
            sizes = [as_expr(check_int(s, "split", "section size")) for s in
                     split_size_or_sections]
            if any(const(s) < 0 for s in sizes):
                raise ShapeError(f"split: negative section in {split_size_or_sections}")
            if sum(sizes, Expr(0)) != n:
                raise ShapeError(f"split: sections {tuple(split_size_or_sections)} do not sum "
                                 f"to dim {dim} of shape {self.shape}")
        else:
            size = check_int(split_size_or_sections, "split", "split_size")
            if size <= 0:
                raise ShapeError(f"split: split_size must be positive, got {size}")
            total = const(n)
            if total is None:
                raise ShapeError(f"split: dim {dim} of shape {self.shape} is symbolic, so the "
                                 f"number of pieces is unknown; pass explicit sections")
            sizes = [Expr(min(size, total - i)) for i in range(0, total, size)] or [Expr(0)]
        out, start = [], Expr(0)
        for s in sizes:
            out.append(self._with_view(self.st.slice(axis, start, start + s, 1)))
            start = start + s
        return tuple(out)

    def chunk(self, chunks: int, dim: int = 0):
        check_int(chunks, "chunk", "chunks")
        if chunks <= 0:
            raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
        axis = self._axis(dim, "chunk")
        total = const(self.st.dims[axis])
        if total is None:
            raise ShapeError(f"chunk: dim {dim} of shape {self.shape} is symbolic, so the "
                             f"chunk sizes are unknown")
        return self.split(max(-(-total // chunks), 1), axis)

    def unbind(self, dim: int = 0):
        axis = self._axis(dim, "unbind")
        return tuple(p.squeeze(axis) for p in self.split(1, axis))


def _resolve(sizes, total: Expr, op: str, shape) -> list:
    """``sizes`` (with at most one -1) as Exprs whose product is ``total``."""
    sizes = list(sizes)
    unknown = [i for i, s in enumerate(sizes) if isinstance(s, int) and s == -1]
    if len(unknown) > 1:
        raise ShapeError(f"{op}: only one size may be -1, got {tuple(sizes)}")
    if unknown:
        known = product(s for i, s in enumerate(sizes) if i != unknown[0])
        sizes[unknown[0]] = total // known
    dims = [as_expr(s) for s in sizes]
    if product(dims) != total:
        raise ShapeError(f"{op}: sizes {tuple(sizes)} do not multiply to {total} (shape "
                         f"{shape})")
    return dims

