"""Rounding: trunc, floor, ceil, round (half to even, with decimals) and frac. trunc is a
float -> int -> float Cast round trip where |x| < 2^23 (every larger f32 is an integer
already), blended so inf and NaN pass through. Ints are returned unchanged, bools refused.
The rounded values are detached: their gradient is zero, as torch's, not the blend's."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError
from .tensor_utils import float_math, no_bool

_INTEGRAL_FROM = 2.0 ** 23  # every f32 at least this large is an integer


def _int_passthrough(fn):
    """Ints round to themselves; bools are refused, as in torch."""

    inner = float_math(fn)

    def wrapper(self, *args, **kwargs):
        no_bool(self, fn.__name__)
        if not dt.is_float(self.dtype):
            return self
        return inner(self, *args, **kwargs).detach()

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


class RoundingOps:
    @_int_passthrough
    def trunc(self):
        small = (self < _INTEGRAL_FROM) & (self > -_INTEGRAL_FROM)
        truncated = self.to(dt.int32).to(dt.float32)
        large = small.logical_not().to(dt.float32)
        # Each side is finite wherever it is not chosen, so the blend is exact.
        return truncated * (1 - large) + self * large

    fix = trunc

    @_int_passthrough
    def floor(self):
        t = self.trunc()
        return t - (self < t).to(dt.float32)

    @_int_passthrough
    def ceil(self):
        t = self.trunc()
        return t + (t < self).to(dt.float32)

    @_int_passthrough
    def round(self, decimals: int = 0):
        """Round half to even; with ``decimals``, at that decimal place (torch's scaling)."""
        if isinstance(decimals, bool) or not isinstance(decimals, int):
            raise DTypeError(f"round: decimals must be an int, got {decimals!r}")
        if decimals > 0:
            scale = 10.0 ** decimals
            return (self * scale).round() * (1.0 / scale)
        if decimals < 0:
            scale = 10.0 ** -decimals
            return (self * (1.0 / scale)).round() * scale
        t = self.trunc()
        d = self - t  # in (-1, 1); NaN for inf, then every test below is False
        odd = t.fmod(2) != 0
        up = (d > 0.5) | ((d == 0.5) & odd)
        down = (d < -0.5) | ((d == -0.5) & odd)
        return t + up.to(dt.float32) - down.to(dt.float32)

    def frac(self):
        if not dt.is_float(self.dtype):
            raise DTypeError(f"frac: needs a float tensor, got {dt.name(self.dtype)}")
        return _frac(self)


@float_math
def _frac(x):
    return x - x.trunc()
