"""Small helpers on dims shared by the ops of hl_ops and luminal.nn: Python ints and symbolic
Exprs as one kind of dim, products, PyTorch's broadcasting of shapes, and PyTorch's argument
spellings (``f(2, 3)`` or ``f((2, 3))``, ``stride=2`` or ``stride=(2, 1)``). No ops are
emitted here: helpers on tensors live in tensor_utils.py."""

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


def const_int(d, op: str, what: str) -> int:
    """The int value of a dim that must be concrete; a symbolic one raises a ShapeError
    naming ``op`` and ``what`` the dim is."""
    e = as_expr(d)
    if not e.is_const():
        raise ShapeError(f"{op}: {what} must be a concrete size, got symbolic {e}")
    return e.as_const()


def py_dim(e):
    """An Expr as a Python int when constant, else the Expr itself."""
    e = as_expr(e)
    return e.as_const() if e.is_const() else e


def product(dims) -> Expr:
    out = Expr(1)
    for d in dims:
        out = out * as_expr(d)
    return out


def shape_str(dims) -> str:
    """A shape as PyTorch prints it: (3, 4), (s, 4), (5,)."""
    text = ", ".join(str(d) for d in dims)
    return f"({text},)" if len(dims) == 1 else f"({text})"


def broadcast_shapes(shapes, op: str, shown=None) -> list:
    """The PyTorch broadcast of several shapes (sequences of dims), as a list of Exprs.
    ``shown``: the shapes the error message names, when they are not ``shapes`` themselves
    (matmul broadcasts only the batch dims of its operands, say)."""
    n = max((len(s) for s in shapes), default=0)
    padded = [[Expr(1)] * (n - len(s)) + [as_expr(d) for d in s] for s in shapes]
    out = []
    for axis in range(n):
        size = Expr(1)
        for s in padded:
            d = s[axis]
            if d == Expr(1) or d == size:
                continue
            if size == Expr(1):
                size = d
                continue
            named = [shape_str(s) for s in (shown or shapes)]
            listed = ", ".join(named[:-1]) + f" and {named[-1]}"
            raise ShapeError(f"{op}: shapes {listed} do not broadcast (dims {size} and {d})")
        out.append(size)
    return out


def int_tuple(value, n: int, name: str, op: str, one_for_all: bool = False) -> tuple:
    """PyTorch's "an int or n ints" argument (``stride=2`` or ``stride=(2, 1)``) as n ints.
    ``one_for_all``: a one-element sequence also stands for every axis (pooling's rule)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    value = tuple(value)
    if one_for_all and len(value) == 1 and n > 1:
        value = value * n
    if len(value) != n or not all(isinstance(v, int) and not isinstance(v, bool)
                                  for v in value):
        raise ShapeError(f"{op}: {name} must be an int or {n} ints, got {value}")
    return value


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
