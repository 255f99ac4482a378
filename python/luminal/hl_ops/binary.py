"""Elementwise binary ops with PyTorch broadcasting and type promotion, Python scalars on either
side: arithmetic, division with its rounding modes, fmod/remainder/floor_divide, pow,
maximum/minimum/clamp, where, lerp, addcmul/addcdiv. Built from Add, Mul, Mod, LessThan,
Recip, Log2/Exp2 (pow), MaxReduce (maximum) and Gather (exact selection)."""

from __future__ import annotations

import math

from .._core import OpKind
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from .compare import CompareOps
from .joining import stack
from .tensor_utils import (HALF_TYPES, as_tensors, blend, choose, full_like, is_scalar, order_flip,
                      result_type, round_to_int, where)


def _max_pair(a, b):
    """Elementwise max of two same-shape tensors; NaN wins, as torch.maximum."""
    if a.dtype == dt.bool_:
        return a._binary(OpKind.Add, b)
    return stack([a, b], -1)._reduce(OpKind.MaxReduce, a.ndim)


def _min_pair(a, b):
    if a.dtype == dt.bool_:
        return a._binary(OpKind.Mul, b)
    return order_flip(_max_pair(order_flip(a), order_flip(b)))


def _int_trunc_div(a, b):
    """Exact truncating division of int32 tensors (C's a / b) and C's a % b. The quotient of
    the exact multiple a - a % b is estimated in f32 and corrected once in int arithmetic."""
    rem = a._binary(OpKind.Mod, b)
    multiple = a - rem
    bf = b.to(dt.float32).reciprocal()
    q0 = round_to_int(multiple.to(dt.float32) * bf)
    residue = multiple - q0 * b
    q = q0 + round_to_int(residue.to(dt.float32) * bf)
    return q, rem


def _sign_differs(r, b):
    """r != 0 and sign(r) != sign(b): where a truncated remainder needs adjusting."""
    return (r != 0) & ((r < 0) ^ (b < 0))


class BinaryOps(CompareOps):
    def _operands(self, other, op: str, reverse: bool = False):
        """Both sides as tensors of the PyTorch result type and one broadcast shape."""
        a, b = as_tensors(self, other, op=op)
        return (b, a) if reverse else (a, b)

    # ---- arithmetic -----------------------------------------------------------------------
    def add(self, other, alpha=1):
        a, b = self._operands(other, "add")
        if alpha != 1:
            b = b * alpha
        return a._binary(OpKind.Add, b)

    def sub(self, other, alpha=1):
        a, b = self._operands(other, "sub")
        if a.dtype == dt.bool_:
            raise DTypeError(f"sub: subtraction of bool tensors is not supported (shapes "
                             f"{a.shape}); use logical_xor")
        return a._binary(OpKind.Add, b._binary(OpKind.Mul, full_like(b, -alpha)))

    def mul(self, other):
        a, b = self._operands(other, "mul")
        return a._binary(OpKind.Mul, b)

    def div(self, other, rounding_mode=None):
        if rounding_mode == "floor":
            return self.floor_divide(other)
        a, b = self._operands(other, "div")
        if rounding_mode == "trunc":
            if not dt.is_float(a.dtype):
                return _int_trunc_div(a.to(dt.int32), b.to(dt.int32))[0].to(a.dtype)
            return a.div(b).trunc()
        if rounding_mode is not None:
            raise ShapeError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                             f"{rounding_mode!r}")
        dtype = a.dtype if dt.is_float(a.dtype) else dt.float32
        work = dt.float32 if dtype in HALF_TYPES else dtype
        a, b = a.to(work), b.to(work)
        return a._binary(OpKind.Mul, b._unary(OpKind.Recip)).to(dtype)

    subtract, multiply, divide, true_divide = sub, mul, div, div

    # ---- integer-style division ---------------------------------------------------------------
    def fmod(self, other):
        a, b = self._operands(other, "fmod")
        if a.dtype == dt.bool_:
            raise DTypeError(f"fmod: not supported for bool tensors (shape {a.shape})")
        return a._binary(OpKind.Mod, b)

    def atan2(self, other):
        """The angle of (other, self): atan(|self| / |other|) in [0, pi/2], mirrored to
        pi - that where other is negative (or -0), with self's sign; both zero gives 0 (pi),
        both infinite pi/4 (3pi/4)."""
        y, x = self._operands(other, "atan2")
        dtype = y.dtype if dt.is_float(y.dtype) else dt.float32
        y, x = y.to(dt.float32), x.to(dt.float32)
        ay, ax = y.abs(), x.abs()
        ratio = (ay / ax).abs()  # abs(-0) is -0: the quotient's abs makes 1 / -0 +inf
        both_inf = ay.isinf() & ax.isinf()
        ratio = choose(((ay == 0) & (ax == 0)).to(dt.int32) + both_inf.to(dt.int32) * 2,
                       [ratio, full_like(ratio, 0.0), full_like(ratio, 1.0)])
        angle = ratio.atan()
        left = (x < 0) | ((x == 0) & (x.reciprocal() < 0))   # x negative, or -0
        angle = choose(left.to(dt.int32), [angle, math.pi - angle])
        below = (y < 0) | ((y == 0) & (y.reciprocal() < 0))
        out = choose(below.to(dt.int32), [angle, -angle])
        return out.to(dtype)

    def remainder(self, other):
        """Python's %: the result takes the sign of the divisor."""
        a, b = self._operands(other, "remainder")
        if a.dtype == dt.bool_:
            raise DTypeError(f"remainder: not supported for bool tensors (shape {a.shape})")
        r = a._binary(OpKind.Mod, b)
        adjust = _sign_differs(r, b)
        if not dt.is_float(a.dtype):
            return r + b * adjust.to(a.dtype)
        return choose(adjust.to(dt.int32), [r, r + b])

    def floor_divide(self, other):
        """Python's //: the quotient rounded toward minus infinity (torch's div_floor)."""
        a, b = self._operands(other, "floor_divide")
        if a.dtype == dt.bool_:
            raise DTypeError(f"floor_divide: not supported for bool tensors (shape {a.shape})")
        if not dt.is_float(a.dtype):
            q, rem = _int_trunc_div(a, b)
            return q - _sign_differs(rem, b).to(dt.int32)
        dtype = a.dtype
        a, b = a.to(dt.float32), b.to(dt.float32)
        mod = a._binary(OpKind.Mod, b)
        quotient = (a - mod) * b.reciprocal()  # an integer, up to rounding
        quotient = quotient - _sign_differs(mod, b).to(dt.float32)
        floored = quotient.floor()
        floored = floored + (quotient - floored > 0.5).to(dt.float32)
        by_zero = a * b.reciprocal()
        return choose((b == 0).to(dt.int32), [floored, by_zero]).to(dtype)

    # ---- powers ---------------------------------------------------------------------------
    def pow(self, exponent):
        if is_scalar(exponent):
            return _pow_scalar(self, exponent)
        a, b = self._operands(exponent, "pow")
        if a.dtype == dt.bool_:
            a, b = a.to(dt.int32), b.to(dt.int32)
        if dt.is_float(a.dtype):
            return _pow_tensor(a.to(dt.float32), b.to(dt.float32)).to(a.dtype)
        r = _pow_tensor(a.to(dt.float32), b.to(dt.float32))
        # Negative exponents give |result| < 1 (truncated to 0) unless the base is +-1.
        return blend(b >= 0, round_to_int(r), r.to(dt.int32)).to(a.dtype)

    def float_power(self, exponent):
        return self.to(dt.float32).pow(exponent if is_scalar(exponent)
                                       else exponent.to(dt.float32))

    # ---- extremes -------------------------------------------------------------------------
    def maximum(self, other):
        a, b = self._operands(other, "maximum")
        return _max_pair(a, b)

    def minimum(self, other):
        a, b = self._operands(other, "minimum")
        return _min_pair(a, b)

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise ShapeError(f"clamp: at least one of min and max must be given (shape "
                             f"{self.shape})")
        dtype = result_type(self, min, max, op="clamp")
        out = self.to(dtype)
        if min is not None:
            out = out.maximum(min)
        if max is not None:
            out = out.minimum(max)
        return out

    clip = clamp

    def clamp_min(self, min):
        return self.clamp(min=min)

    def clamp_max(self, max):
        return self.clamp(max=max)

    # ---- selection and blends -------------------------------------------------------------
    def where(self, condition, other):
        """torch's ``self.where(condition, other)``: self where condition, else other."""
        return where(condition, self, other)

    def lerp(self, end, weight):
        """start + weight * (end - start), evaluated from the nearer end as torch does."""
        if not dt.is_float(self.dtype):
            raise DTypeError(f"lerp: needs float tensors, got {dt.name(self.dtype)}")
        dtype = result_type(self, end, weight, op="lerp")
        s, e, w = as_tensors(self, end, weight, op="lerp", dtype=dt.float32)
        diff = e - s
        low = s + w * diff
        high = e - diff * (1 - w)
        near_start = (w < 0.5) & (w > -0.5)
        return blend(near_start, low, high).to(dtype)

    def addcmul(self, tensor1, tensor2, value=1):
        product = tensor1 * tensor2 if value == 1 else value * tensor1 * tensor2
        return self + product

    def addcdiv(self, tensor1, tensor2, value=1):
        quotient = tensor1 / tensor2
        return self + (quotient if value == 1 else value * quotient)

    # ---- operators ------------------------------------------------------------------------
    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = div
    __floordiv__ = floor_divide
    __mod__ = remainder
    __pow__ = pow

    def __radd__(self, other):
        return self.add(other)

    def __rmul__(self, other):
        return self.mul(other)

    def __rsub__(self, other):
        a, b = self._operands(other, "sub", reverse=True)
        return a.sub(b)

    def __rtruediv__(self, other):
        a, b = self._operands(other, "div", reverse=True)
        return a.div(b)

    def __rfloordiv__(self, other):
        a, b = self._operands(other, "floor_divide", reverse=True)
        return a.floor_divide(b)

    def __rmod__(self, other):
        a, b = self._operands(other, "remainder", reverse=True)
        return a.remainder(b)

    def __rpow__(self, other):
        dtype = result_type(other, self, op="pow")
        if is_scalar(other) and dt.is_float(dtype) and other > 0:
            x = self.to(dtype)
            work = x.to(dt.float32)
            return (work * math.log2(other)).exp2().to(dtype)
        a, b = self._operands(other, "pow", reverse=True)
        return a.pow(b)


# ---- pow helpers ------------------------------------------------------------------------------
def _int_power(x, n: int):
    """x ** n for an int n >= 0 by repeated squaring (exact for ints)."""
    result = None
    square = x
    while n:
        if n & 1:
            result = square if result is None else result * square
        n >>= 1
        if n:
            square = square * square
    return result if result is not None else full_like(x, 1)


def _pow_scalar(x, y):
    dtype = result_type(x, y, op="pow")
    x = x.to(dtype)
    integral = isinstance(y, bool) or isinstance(y, int) or float(y).is_integer()
    if not dt.is_float(dtype):
        if y < 0:
            raise DTypeError(f"pow: integers to negative integer powers are not allowed "
                             f"(exponent {y}, tensor of shape {x.shape})")
        return _int_power(x, int(y))
    work = x.to(dt.float32)
    if integral and abs(y) <= 64:
        result = _int_power(work, abs(int(y)))
        result = result.reciprocal() if y < 0 else result
    elif y == 0.5:
        result = work.sqrt()
    elif y == -0.5:
        result = work.rsqrt()
    elif integral and not math.isinf(y):
        magnitude = work.abs().log2() * float(y)
        result = magnitude.exp2()
        if int(y) % 2:
            result = result * (1 - 2 * (work < 0).to(dt.float32))
    else:
        result = _nan_where(_finite_negative(work), (work.abs().log2() * float(y)).exp2())
        if y == math.inf or y == -math.inf or math.isnan(y):
            one = full_like(work, 1.0)
            result = choose((work == 1).to(dt.int32), [result, one])
    return result.to(dtype)


def _finite_negative(x):
    return (x < 0) & (x > -math.inf)


def _nan_where(mask, x):
    """x with NaN where ``mask`` (sqrt(-1) is NaN, sqrt(-0) adds nothing)."""
    return x + (-mask.to(dt.float32)).sqrt()


def _pow_tensor(a, b):
    """a ** b for f32 tensors with C pow's special cases: x ** 0 = 1 and 1 ** y = 1 (even for
    NaN), negative bases with integral exponents keep their sign, otherwise NaN."""
    negative = a < 0
    integral = b == b.trunc()
    half = b.fmod(2)
    odd = integral & ((half == 1) | (half == -1))
    result = (b * a.abs().log2()).exp2()
    result = result * (1 - 2 * (negative & odd).to(dt.float32))
    result = _nan_where(_finite_negative(a) & integral.logical_not(), result)
    special = (b == 0) | (a == 1)
    return choose(special.to(dt.int32), [result, full_like(result, 1.0)])

