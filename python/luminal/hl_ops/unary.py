"""Elementwise unary ops as compositions of Log2, Exp2, Sin, Sqrt and Recip."""

from __future__ import annotations

import math

from .._core import OpKind
from .. import dtype as dt

LN2 = math.log(2.0)
LOG2E = 1.0 / LN2


class UnaryOps:
    def _float_operand(self):
        return self if dt.is_float(self.dtype) else self.to(dt.float32)

    def log2(self):
        return self._float_operand()._unary(OpKind.Log2)

    def exp2(self):
        return self._float_operand()._unary(OpKind.Exp2)

    def sin(self):
        return self._float_operand()._unary(OpKind.Sin)

    def sqrt(self):
        return self._float_operand()._unary(OpKind.Sqrt)

    def reciprocal(self):
        return self._float_operand()._unary(OpKind.Recip)

    def exp(self):
        return (self._float_operand() * LOG2E).exp2()

    def log(self):
        return self.log2() * LN2

    def cos(self):
        return (self._float_operand() + math.pi / 2).sin()

    def neg(self):
        if self.dtype == dt.bool_:
            from ..errors import DTypeError

            raise DTypeError("neg: negation of a bool tensor is not supported; use logical_not")
        return self * -1

    def __neg__(self):
        return self.neg()

    def abs(self):
        return self * ((self < 0) * -2 + 1).to(self.dtype)
