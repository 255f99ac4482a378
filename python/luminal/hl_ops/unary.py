"""Elementwise unary math as compositions of Log2, Exp2, Sin, Sqrt and Recip (plus the
arithmetic primitives): exp/log families, trig and inverse trig (and hyperbolic),
tanh/sigmoid/erf, abs/sign/neg/square and
nan_to_num. Int and bool inputs of float functions give f32; f16/bf16 compute in f32.
Activations and rounding live in their own mixins, which UnaryOps gathers."""

from __future__ import annotations

import math

from .._core import OpKind
from .. import dtype as dt
from ..errors import DTypeError
from . import approx
from .activation import ActivationOps
from .tensor_utils import choose, float_math, full_like, no_bool
from .rounding import RoundingOps

LN2 = math.log(2.0)
LOG2E = 1.0 / LN2
LOG10_2 = math.log10(2.0)
_FINFO_MAX = {dt.float32: 3.4028234663852886e38, dt.float16: 65504.0,
              dt.bfloat16: 3.3895313892515355e38}


class UnaryOps(ActivationOps, RoundingOps):
    def _float_operand(self):
        return self if dt.is_float(self.dtype) else self.to(dt.float32)

    # ---- single primitives ----------------------------------------------------------------
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

    # ---- exp and log ----------------------------------------------------------------------
    @float_math
    def exp(self):
        return (self * LOG2E).exp2()

    @float_math
    def log(self):
        return self.log2() * LN2

    @float_math
    def log10(self):
        return self.log2() * LOG10_2

    @float_math
    def expm1(self):
        return approx.expm1(self)

    @float_math
    def log1p(self):
        return approx.log1p(self)

    @float_math
    def rsqrt(self):
        return self.sqrt().reciprocal()

    # ---- trig and squashing ---------------------------------------------------------------
    @float_math
    def cos(self):
        """1 - 2 sin^2(x / 2): x / 2 is exact, so large arguments stay right (unlike
        sin(x + pi / 2), whose shifted argument rounds)."""
        half = (self * 0.5).sin()
        return 1 - 2 * (half * half)

    @float_math
    def tan(self):
        """sin(r) / cos(r) of x less k multiples of pi/2 (k rounded; pi/2 in three parts, the
        first exact times k): with |r| <= pi/4 neither side cancels near a pole, and an odd
        k turns tan(r) into -cos(r) / sin(r)."""
        k = (self * (2 / math.pi)).round()
        r = self - k * 1.5703125
        r = r - k * 4.837512969970703125e-4
        r = r - k * 7.549789948768648e-8
        sin, cos = r.sin(), r.cos()
        odd = (k * 0.5).floor() * 2 != k
        return choose(odd.to(dt.int32), [sin / cos, -cos / sin])

    @float_math
    def atan(self):
        return approx.atan(self)

    @float_math
    def asin(self):
        """atan2(x, sqrt((1 - x)(1 + x))): accurate up to +-1, NaN beyond."""
        return self.atan2(((1 - self) * (1 + self)).sqrt())

    @float_math
    def acos(self):
        return ((1 - self) * (1 + self)).sqrt().atan2(self)

    @float_math
    def asinh(self):
        """sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), log(2|x|) where x^2 would overflow."""
        a = self.abs()
        small = (a + a * a / (1 + (1 + a * a).sqrt())).log1p()
        large = a.log() + LN2
        return choose((a > 1e18).to(dt.int32), [small, large]) * self.sign()

    @float_math
    def acosh(self):
        """log1p(t + sqrt(2t + t^2)) with t = x - 1 (exact near 1), log(2x) where t^2 would
        overflow; NaN below 1."""
        t = self - 1
        small = (t + (2 * t + t * t).sqrt()).log1p()
        large = self.log() + LN2
        which = (t > 1e18).to(dt.int32) + (t < 0).to(dt.int32) * 2
        return choose(which, [small, large, full_like(small, math.nan)])

    @float_math
    def atanh(self):
        """(log1p(x) - log1p(-x)) / 2: 1 + x and 1 - x are exact near +-1."""
        return 0.5 * (self.log1p() - (-self).log1p())

    @float_math
    def tanh(self):
        return approx.tanh(self)

    @float_math
    def sigmoid(self):
        return (1 + (-self).exp()).reciprocal()

    @float_math
    def erf(self):
        return approx.erf(self)

    @float_math
    def erfc(self):
        return 1 - approx.erf(self)

    # ---- sign and magnitude ---------------------------------------------------------------
    def neg(self):
        if self.dtype == dt.bool_:
            raise DTypeError(f"neg: negation of a bool tensor is not supported (shape "
                             f"{self.shape}); use logical_not")
        return self._binary(OpKind.Mul, full_like(self, -1))

    negative = neg

    def abs(self):
        no_bool(self, "abs")
        flip = self._binary(OpKind.LessThan, full_like(self, 0)).to(self.dtype)
        return self._binary(OpKind.Mul, 1 - 2 * flip)

    absolute = abs

    def sign(self):
        """-1, 0 or 1 (0 for NaN, as torch.sign); bool stays bool. Detached: its gradient is
        zero, as torch's, even where the incoming one is inf or NaN."""
        if self.dtype == dt.bool_:
            return self
        positive = full_like(self, 0)._binary(OpKind.LessThan, self).to(self.dtype)
        negative = self._binary(OpKind.LessThan, full_like(self, 0)).to(self.dtype)
        return (positive - negative).detach()

    def square(self):
        x = self.to(dt.int32) if self.dtype == dt.bool_ else self
        return x._binary(OpKind.Mul, x)

    def positive(self):
        no_bool(self, "positive")
        return self

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN, +inf and -inf replaced (by 0 and the dtype's largest finite values unless
        given); ints and bools come back unchanged."""
        if not dt.is_float(self.dtype):
            return self
        big = _FINFO_MAX[self.dtype]
        posinf = big if posinf is None else posinf
        neginf = -big if neginf is None else neginf
        which = (self.isnan().to(dt.int32) + self.isposinf().to(dt.int32) * 2
                 + self.isneginf().to(dt.int32) * 3)
        options = [self] + [full_like(self, float(v)) for v in (nan, posinf, neginf)]
        return choose(which, options)

    def __neg__(self):
        return self.neg()

    def __abs__(self):
        return self.abs()

    def __pos__(self):
        return self.positive()
