"""Comparisons (NaN-correct, as torch: every comparison with NaN is False except ``!=``),
float classification (isnan, isinf, isfinite) and logical ops, built from LessThan, Add and Mul
on bools. Comparisons give bool tensors."""

from __future__ import annotations

import math

from .._core import OpKind
from .. import dtype as dt
from ..errors import DTypeError
from .tensor_utils import as_tensors, full_like, is_scalar


def _ordered(x):
    """True where x is not NaN (x < inf or -inf < x)."""
    below = x._binary(OpKind.LessThan, full_like(x, math.inf))
    above = full_like(x, -math.inf)._binary(OpKind.LessThan, x)
    return below._binary(OpKind.Add, above)


class CompareOps:
    def _cmp_operands(self, other, op: str):
        """Both sides promoted and broadcast, and whether each may hold NaN."""
        a, b = as_tensors(self, other, op=op)
        floaty = dt.is_float(a.dtype)
        b_nan = floaty and not (is_scalar(other) and not math.isnan(other))
        return a, b, floaty, b_nan

    def _not_less(self, other, op: str, flip: bool):
        """not (a < b) (or not (b < a) when flip), False where either side is NaN."""
        a, b, floaty, b_nan = self._cmp_operands(other, op)
        x, y = (b, a) if flip else (a, b)
        result = x._binary(OpKind.LessThan, y).logical_not()
        if floaty:
            result = result._binary(OpKind.Mul, _ordered(a))
        if b_nan:
            result = result._binary(OpKind.Mul, _ordered(b))
        return result

    def lt(self, other):
        a, b, _, _ = self._cmp_operands(other, "lt")
        return a._binary(OpKind.LessThan, b)

    def gt(self, other):
        a, b, _, _ = self._cmp_operands(other, "gt")
        return b._binary(OpKind.LessThan, a)

    def ge(self, other):
        return self._not_less(other, "ge", flip=False)

    def le(self, other):
        return self._not_less(other, "le", flip=True)

    def eq(self, other):
        a, b, floaty, b_nan = self._cmp_operands(other, "eq")
        result = a._binary(OpKind.LessThan, b)._binary(OpKind.Add, b._binary(OpKind.LessThan, a))
        result = result.logical_not()
        if floaty:
            result = result._binary(OpKind.Mul, _ordered(a))
        if b_nan:
            result = result._binary(OpKind.Mul, _ordered(b))
        return result

    def ne(self, other):
        return self.eq(other).logical_not()

    less, less_equal, greater, greater_equal = lt, le, gt, ge
    not_equal = ne

    # ---- classification -----------------------------------------------------------------
    def isnan(self):
        if not dt.is_float(self.dtype):
            return full_like(self, False, dt.bool_)
        return _ordered(self).logical_not()

    def isfinite(self):
        if not dt.is_float(self.dtype):
            return full_like(self, True, dt.bool_)
        below = self._binary(OpKind.LessThan, full_like(self, math.inf))
        above = full_like(self, -math.inf)._binary(OpKind.LessThan, self)
        return below._binary(OpKind.Mul, above)

    def isposinf(self):
        if not dt.is_float(self.dtype):
            return full_like(self, False, dt.bool_)
        below = self._binary(OpKind.LessThan, full_like(self, math.inf))
        above = full_like(self, -math.inf)._binary(OpKind.LessThan, self)
        return below.logical_not()._binary(OpKind.Mul, above)

    def isneginf(self):
        if not dt.is_float(self.dtype):
            return full_like(self, False, dt.bool_)
        below = self._binary(OpKind.LessThan, full_like(self, math.inf))
        above = full_like(self, -math.inf)._binary(OpKind.LessThan, self)
        return above.logical_not()._binary(OpKind.Mul, below)

    def isinf(self):
        if not dt.is_float(self.dtype):
            return full_like(self, False, dt.bool_)
        return self.isposinf()._binary(OpKind.Add, self.isneginf())

    # ---- logic ----------------------------------------------------------------------------
    def logical_not(self):
        b = self.to(dt.bool_)
        return b._binary(OpKind.LessThan, full_like(b, True))

    def logical_or(self, other):
        a, b = as_tensors(self, other, op="logical_or", dtype=dt.bool_)
        return a._binary(OpKind.Add, b)

    def logical_and(self, other):
        a, b = as_tensors(self, other, op="logical_and", dtype=dt.bool_)
        return a._binary(OpKind.Mul, b)

    def logical_xor(self, other):
        a, b = as_tensors(self, other, op="logical_xor", dtype=dt.bool_)
        return a._binary(OpKind.LessThan, b)._binary(OpKind.Add, b._binary(OpKind.LessThan, a))

    def _bool_only(self, other, op: str):
        for x in (self, other):
            if not (x is None or isinstance(x, bool) or getattr(x, "dtype", None) == dt.bool_):
                raise DTypeError(f"{op}: bitwise ops are only supported on bool tensors, got "
                                 f"{x!r}")

    def __and__(self, other):
        self._bool_only(other, "&")
        return self.logical_and(other)

    def __or__(self, other):
        self._bool_only(other, "|")
        return self.logical_or(other)

    def __xor__(self, other):
        self._bool_only(other, "^")
        return self.logical_xor(other)

    __rand__ = __and__
    __ror__ = __or__
    __rxor__ = __xor__

    def __invert__(self):
        self._bool_only(None, "~")
        return self.logical_not()

    __lt__ = lt
    __gt__ = gt
    __le__ = le
    __ge__ = ge
    __eq__ = eq  # lazy elementwise comparison, like torch
    __ne__ = ne
    __hash__ = object.__hash__
