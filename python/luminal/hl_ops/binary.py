"""Elementwise binary ops with PyTorch broadcasting and type promotion, built from Add, Mul,
Mod, LessThan and Recip. Python scalars are accepted on either side."""

from __future__ import annotations

from .._core import OpKind
from .. import dtype as dt
from ..errors import DTypeError


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float))


class BinaryOps:
    def _operands(self, other, op: str, reverse: bool = False):
        """Both sides as tensors of one dtype and one broadcast shape."""
        if _is_scalar(other):
            other = self.graph.constant(other, dt.scalar_dtype(other, self.dtype))
        elif not hasattr(other, "graph"):
            raise DTypeError(f"{op}: cannot combine a GraphTensor with {type(other).__name__}")
        self.graph._check_owns(other)
        dtype = dt.promote(self.dtype, other.dtype)
        a, b = self.to(dtype), other.to(dtype)
        a, b = a.broadcast_together(b, op)
        return (b, a) if reverse else (a, b)

    def add(self, other, alpha=1):
        if alpha != 1:
            other = other * alpha
        a, b = self._operands(other, "add")
        return a._binary(OpKind.Add, b)

    def sub(self, other, alpha=1):
        a, b = self._operands(other, "sub")
        if a.dtype == dt.bool_:
            raise DTypeError("sub: subtraction of bool tensors is not supported")
        return a._binary(OpKind.Add, b._binary(OpKind.Mul, b._scalar_like(-alpha).expand_as(b)))

    def mul(self, other):
        a, b = self._operands(other, "mul")
        return a._binary(OpKind.Mul, b)

    def div(self, other):
        a, b = self._operands(other, "div")
        if not dt.is_float(a.dtype):
            a, b = a.to(dt.float32), b.to(dt.float32)
        return a._binary(OpKind.Mul, b._unary(OpKind.Recip))

    def fmod(self, other):
        a, b = self._operands(other, "fmod")
        return a._binary(OpKind.Mod, b)

    def lt(self, other):
        a, b = self._operands(other, "lt")
        return a._binary(OpKind.LessThan, b)

    def gt(self, other):
        a, b = self._operands(other, "gt")
        return b._binary(OpKind.LessThan, a)

    def logical_not(self):
        b = self.to(dt.bool_)
        return b._binary(OpKind.LessThan, b._scalar_like(True).expand_as(b))

    def logical_or(self, other):
        a, b = self._operands(other, "logical_or")
        return a.to(dt.bool_)._binary(OpKind.Add, b.to(dt.bool_))

    def logical_and(self, other):
        a, b = self._operands(other, "logical_and")
        return a.to(dt.bool_)._binary(OpKind.Mul, b.to(dt.bool_))

    def _ordered(self):
        """True where the value is not NaN (x < inf or -inf < x)."""
        inf = self._scalar_like(float("inf")).expand_as(self)
        ninf = self._scalar_like(float("-inf")).expand_as(self)
        return self._binary(OpKind.LessThan, inf)._binary(
            OpKind.Add, ninf._binary(OpKind.LessThan, self))

    def _not_lt(self, other):
        """not (self < other), False when either side is NaN, as torch's >= is."""
        result = self._binary(OpKind.LessThan, other).logical_not()
        if dt.is_float(self.dtype):
            result = result._binary(OpKind.Mul, self._ordered())._binary(
                OpKind.Mul, other._ordered())
        return result

    def ge(self, other):
        a, b = self._operands(other, "ge")
        return a._not_lt(b)

    def le(self, other):
        a, b = self._operands(other, "le")
        return b._not_lt(a)

    def eq(self, other):
        a, b = self._operands(other, "eq")
        return a._not_lt(b)._binary(OpKind.Mul, b._not_lt(a))

    def ne(self, other):
        return self.eq(other).logical_not()

    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = div
    __lt__ = lt
    __gt__ = gt
    __le__ = le
    __ge__ = ge
    __eq__ = eq  # lazy elementwise comparison, like torch
    __ne__ = ne
    __hash__ = object.__hash__

    def __radd__(self, other):
        return self.add(other)

    def __rmul__(self, other):
        return self.mul(other)

    def __rsub__(self, other):
        return (-self).add(other)

    def __rtruediv__(self, other):
        a, b = self._operands(other, "div", reverse=True)
        return a.div(b)

    def __and__(self, other):
        return self.logical_and(other)

    def __or__(self, other):
        return self.logical_or(other)

    def __invert__(self):
        if self.dtype != dt.bool_:
            raise DTypeError("~ is only supported on bool tensors")
        return self.logical_not()
