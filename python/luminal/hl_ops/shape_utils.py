"""Small helpers on dims shared by the movement, indexing and creation ops: Python ints and
symbolic Exprs as one kind of dim, products, and PyTorch's argument spellings (``f(2, 3)`` or
``f((2, 3))``). No ops are emitted here."""

from __future__ import annotations

from .._core import Expr
from ..errors import ShapeError


def dims_tuple(args) -> tuple:
    """``(2, 3)`` from either ``f(2, 3)`` or ``f((2, 3))``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def as_expr(d) -> Expr:
    return d if isinstance(d, Expr) else Expr(d)


def same(a, b) -> bool:
    """True when two dims are provably equal."""
    return as_expr(a) == as_expr(b)


def const(d):
    """The int value of a dim, or None when it is symbolic."""
    e = as_expr(d)
    return e.as_const() if e.is_const() else None


def py_dim(e):
    """An Expr as a Python int when constant, else the Expr itself."""
    e = as_expr(e)
    return e.as_const() if e.is_const() else e


def product(dims) -> Expr:
    out = Expr(1)
    for d in dims:
        out = out * as_expr(d)
    return out


def check_int(value, op: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(f"{op}: {what} must be an int, got {value!r}")
    return value


def check_dim_arg(d, op: str, what: str = "size"):
    """A user-given size: an int >= 0, a symbol name or an Expr."""
    if isinstance(d, str):
        return Expr(d)
    if isinstance(d, Expr):
        return d
    if isinstance(d, bool) or not isinstance(d, int):
        raise ShapeError(f"{op}: {what} {d!r} must be an int or an Expr")
    if d < 0:
        raise ShapeError(f"{op}: {what} {d} is negative")
    return Expr(d)


def clamp_index(i, n: Expr) -> Expr:
    """Python's slice-bound rule: negatives count from the end, then clamp to [0, n]."""
    if isinstance(i, Expr):
        return i
    if isinstance(i, bool) or not isinstance(i, int):
        raise ShapeError(f"slice bounds must be ints, got {i!r}")
    if i < 0:
        return (n + i).max(0)
    return Expr(i).min(n)
