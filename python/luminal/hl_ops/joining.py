"""Ops that join pieces of tensors: cat, stack, pad (constant, reflect, replicate, circular),
repeat, tile and roll. A join is each piece zero-padded into place (a view) and the pieces
summed with Add, which keeps every value exact (x + 0 == x, also for inf and NaN) and leaves
fusion to the search. Pure view edits live in movement.py."""

from __future__ import annotations

from .._core import Expr, OpKind
from .. import dtype as dt
from ..errors import ShapeError
from .shape_utils import as_expr, check_int, const, dims_tuple, same

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _check_tensors(tensors, op: str) -> list:
    if hasattr(tensors, "graph"):
        raise ShapeError(f"{op}: expects a list or tuple of tensors, got a single tensor")
    tensors = list(tensors)
    if not tensors:
        raise ShapeError(f"{op}: expects a non-empty list of tensors")
    first = tensors[0]
    if not hasattr(first, "graph"):
        raise ShapeError(f"{op}: expects GraphTensors, got {type(first).__name__}")
    for t in tensors[1:]:
        first.graph._check_owns(t)
    return tensors


def cat(tensors, dim: int = 0):
    """torch.cat: ``tensors`` joined along ``dim`` (their dtypes promote)."""
    tensors = _check_tensors(tensors, "cat")
    first = tensors[0]
    shapes = ", ".join(str(t.shape) for t in tensors)
    if any(t.ndim == 0 for t in tensors):
        raise ShapeError(f"cat: zero-dimensional tensors cannot be joined (shapes {shapes})")
    if any(t.ndim != first.ndim for t in tensors):
        raise ShapeError(f"cat: tensors must have the same number of dims, got shapes {shapes}")
    axis = first._axis(dim, "cat")
    for t in tensors[1:]:
        for k in range(first.ndim):
            if k != axis and not same(t.st.dims[k], first.st.dims[k]):
                raise ShapeError(f"cat: shapes {shapes} differ in dim {k}, not only in the "
                                 f"joined dim {dim}")
    dtype = first.dtype
    for t in tensors[1:]:
        dtype = dt.promote(dtype, t.dtype)
    return _join([t.to(dtype) for t in tensors], axis)


def _join(tensors, axis: int, total=None):
    """Pieces of one dtype, zero-padded into place along ``axis`` and added. ``total`` is the
    joined size when the caller knows a simpler expression for it than the sum."""
    if len(tensors) == 1:
        return tensors[0]
    if total is None:
        total = sum((t.st.dims[axis] for t in tensors), Expr(0))
    out, offset = None, Expr(0)
    for t in tensors:
        n = t.st.dims[axis]
        if n == Expr(0):
            continue
        piece = t._with_view(t.st.pad(axis, offset, total - offset - n))
        out = piece if out is None else out._binary(OpKind.Add, piece)
        offset = offset + n
    return tensors[0] if out is None else out


def stack(tensors, dim: int = 0):
    """torch.stack: ``tensors`` (all of one shape) joined along a new dim ``dim``."""
    tensors = _check_tensors(tensors, "stack")
    first = tensors[0]
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(not same(a, b) for a, b in zip(t.st.dims,
                                                                       first.st.dims)):
            shapes = ", ".join(str(t.shape) for t in tensors)
            raise ShapeError(f"stack: expects tensors of one shape, got {shapes}")
    check_int(dim, "stack", "dim")
    n = first.ndim + 1
    if not -n <= dim < n:
        raise ShapeError(f"stack: dim {dim} is out of range for {n - 1}-dim tensors of shape "
                         f"{first.shape}")
    return cat([t.unsqueeze(dim % n) for t in tensors], dim % n)


def _pad_pairs(x, pad, op: str) -> list:
    """PyTorch's flat pad list as [(axis, before, after)], last dim first."""
    if not isinstance(pad, (tuple, list)) or len(pad) % 2:
        raise ShapeError(f"{op}: pad must be a tuple of even length, got {pad!r}")
    if len(pad) // 2 > x.ndim:
        raise ShapeError(f"{op}: pad {tuple(pad)} covers {len(pad) // 2} dims but shape "
                         f"{x.shape} has {x.ndim}")
    pairs = []
    for i in range(len(pad) // 2):
        before, after = pad[2 * i], pad[2 * i + 1]
        for p in (before, after):
            if isinstance(p, bool) or not isinstance(p, (int, Expr)):
                raise ShapeError(f"{op}: pad amounts must be ints, got {tuple(pad)}")
        pairs.append((x.ndim - 1 - i, before, after))
    return pairs


def _part(x, axis: int, start, stop):
    return x._with_view(x.st.slice(axis, as_expr(start), as_expr(stop), 1))


def _with_size(shape, axis: int, size) -> list:
    out = list(shape)
    out[axis] = as_expr(size)
    return out


class JoinOps:
    def pad(self, pad, mode: str = "constant", value=None):
        """F.pad: ``pad`` is (last_before, last_after, second_last_before, ...)."""
        if mode not in PAD_MODES:
            raise ShapeError(f"pad: unknown mode {mode!r}; use one of {', '.join(PAD_MODES)}")
        if mode != "constant" and value is not None and value != 0:
            raise ShapeError(f"pad: mode {mode!r} takes no value (got {value!r})")
        pairs = _pad_pairs(self, pad, "pad")
        if mode == "constant":
            return self._pad_constant(pairs, 0 if value is None else value)
        x = self
        for axis, before, after in pairs:
            x = x._pad_axis(axis, before, after, mode)
        return x

    def _pad_constant(self, pairs, value):
        x = self
        for axis, before, after in pairs:
            # Negative amounts crop, as in PyTorch.
            n = x.st.dims[axis]
            lo = -before if isinstance(before, int) and before < 0 else 0
            crop_hi = isinstance(after, int) and after < 0
            if lo or crop_hi:
                x = _part(x, axis, lo, n + after if crop_hi else n)
        grow = [(a, max(b, 0) if isinstance(b, int) else b, max(e, 0) if isinstance(e, int)
                 else e) for a, b, e in pairs]
        if value == 0 and not isinstance(value, bool):
            view = x.st
            for axis, before, after in grow:
                view = view.pad(axis, as_expr(before), as_expr(after))
            return x._with_view(view)
        fill = x.graph.constant(value, x.dtype)
        for axis, before, after in grow:
            pieces = [x]
            if as_expr(before) != Expr(0):
                pieces.insert(0, fill.expand(_with_size(x.st.dims, axis, before)))
            if as_expr(after) != Expr(0):
                pieces.append(fill.expand(_with_size(x.st.dims, axis, after)))
            x = cat(pieces, axis)
        return x

    def _pad_axis(self, axis: int, before, after, mode: str):
        n = self.st.dims[axis]
        for p in (before, after):
            if isinstance(p, int) and p < 0:
                raise ShapeError(f"pad: mode {mode!r} needs non-negative padding, got {p} for "
                                 f"shape {self.shape}")
            if mode == "reflect" and const(n) is not None and const(p) is not None and \
                    const(p) >= const(n):
                raise ShapeError(f"pad: reflect padding {p} must be smaller than dim {axis} "
                                 f"of shape {self.shape}")
            if mode == "circular" and const(n) is not None and const(p) is not None and \
                    const(p) > const(n):
                raise ShapeError(f"pad: circular padding {p} must not exceed dim {axis} of "
                                 f"shape {self.shape}")
        if const(n) == 0:
            raise ShapeError(f"pad: mode {mode!r} cannot pad the empty dim {axis} of shape "
                             f"{self.shape}")
        before, after = as_expr(before), as_expr(after)
        if mode == "reflect":
            left = _part(self, axis, 1, before + 1).flip(axis)
            right = _part(self, axis, n - after - 1, n - 1).flip(axis)
        elif mode == "replicate":
            left = _part(self, axis, 0, 1).expand(_with_size(self.st.dims, axis, before))
            right = _part(self, axis, n - 1, n).expand(_with_size(self.st.dims, axis, after))
        else:
            left = _part(self, axis, n - before, n)
            right = _part(self, axis, 0, after)
        pieces = [p for p in (left, self, right) if p is self or p.st.dims[axis] != Expr(0)]
        return cat(pieces, axis)

    def repeat(self, *sizes):
        sizes = dims_tuple(sizes)
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: {len(sizes)} repeat counts for shape {self.shape}; "
                             f"need at least {self.ndim}")
        for r in sizes:
            if isinstance(r, bool) or not isinstance(r, (int, Expr)) or \
                    (isinstance(r, int) and r < 0):
                raise ShapeError(f"repeat: counts must be non-negative ints, got {sizes}")
        dims = [Expr(1)] * (len(sizes) - self.ndim) + list(self.st.dims)
        x = self.reshape(dims)
        view = x.st
        for axis in reversed(range(len(sizes))):
            view = view.insert_axis(axis, 1)
            if as_expr(sizes[axis]) != Expr(1):
                view = view.expand_axis(axis, as_expr(sizes[axis]))
        return x._with_view(view).reshape([as_expr(r) * d for r, d in zip(sizes, dims)])

    def tile(self, *dims):
        dims = dims_tuple(dims)
        dims = (1,) * (self.ndim - len(dims)) + tuple(dims)
        return self.repeat(dims)

    def roll(self, shifts, dims=None):
        if dims is None:
            if isinstance(shifts, (tuple, list)) and len(shifts) != 1:
                raise ShapeError(f"roll: {len(shifts)} shifts need as many dims")
            shift = shifts[0] if isinstance(shifts, (tuple, list)) else shifts
            return self.flatten().roll(shift, 0).reshape(self.st.dims)
        shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
        dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
        if len(shifts) != len(dims):
            raise ShapeError(f"roll: shifts {shifts} and dims {dims} differ in length")
        x = self
        for shift, dim in zip(shifts, dims):
            check_int(shift, "roll", "shift")
            axis = x._axis(dim, "roll")
            n = x.st.dims[axis]
            if const(n) == 0:
                continue
            s = Expr(shift) % n
            if s == Expr(0):
                continue
            x = _join([_part(x, axis, n - s, n), _part(x, axis, 0, n - s)], axis, n)
        return x
