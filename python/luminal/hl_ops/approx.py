"""Accurate f32 compositions of transcendental functions the primitives lack: tanh, erf,
expm1, log1p and atan, from polynomials and rational fits (coefficients from an offline weighted
least-squares fit for relative error; the conformance tables check them against torch),
blended without selects. Inputs and results are f32 GraphTensors; callers handle dtypes."""

from __future__ import annotations

import math

from .. import dtype as dt
from .tensor_utils import blend, choose, full_like, horner

FLT_MAX = 3.4028234663852886e38

# tanh(x) / x as a polynomial in x^2 on |x| <= 0.625 (relative error ~1e-7 in f32).
TANH_SMALL = [0.9999999960751964, -0.3333326052700499, 0.13331127543578625,
              -0.05372106873622805, 0.020590990782968277, -0.0056599917741579275]
TANH_SMALL_LIMIT = 0.625

# erf(x) = x * P(x^2) / Q(x^2) on |x| <= 4 (|error| < 4e-7 in f32); erf is +-1 beyond.
ERF_P = [1.1283791693790488, 0.1852029913400665, 0.05431690373108511, 0.0038496050207049762,
         0.00037960963454710664, 4.6848040753944e-06, -1.3202354487429346e-08]
ERF_Q = [1.0, 0.4974652914694547, 0.1139583411997726, 0.01546207953700691,
         0.0013075695595471193, 6.311082710962462e-05]
ERF_LIMIT = 4.0

# expm1(x) / x as its Taylor series on |x| < 0.5 (truncation error < 3e-10).
EXPM1_SMALL = [1.0 / math.factorial(k + 1) for k in range(10)]
EXPM1_SMALL_LIMIT = 0.5

# atan(x) - x as x^3 * P(x^2) on |x| <= tan(pi/8), after Cephes' atanf (relative error ~1e-7).
ATAN_P = [-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2]
TAN_PI_8 = 0.4142135623730950
TAN_3PI_8 = 2.414213562373095


def _inside(x, limit):
    return (x < limit) & (x > -limit)


def tanh(x):
    """Odd polynomial near 0 (keeps relative accuracy), 1 - 2 / (e^2x + 1) elsewhere."""
    small_x = x.clamp(-TANH_SMALL_LIMIT, TANH_SMALL_LIMIT)
    small = small_x * horner(small_x * small_x, TANH_SMALL)
    large = 1 - 2 * ((2 * x).exp() + 1).reciprocal()
    return blend(_inside(x, TANH_SMALL_LIMIT), small, large)


def erf(x):
    clamped = x.clamp(-ERF_LIMIT, ERF_LIMIT)
    s = clamped * clamped
    return clamped * horner(s, ERF_P) * horner(s, ERF_Q).reciprocal()


def expm1(x):
    """Taylor series near 0 (no cancellation), exp(x) - 1 elsewhere."""
    small_x = x.clamp(-EXPM1_SMALL_LIMIT, EXPM1_SMALL_LIMIT)
    small = small_x * horner(small_x, EXPM1_SMALL)
    large = x.exp() - 1
    return blend(_inside(x, EXPM1_SMALL_LIMIT), small, large)


def log1p_unit(v):
    """log(1 + v) for v in [0, 1]: log(u) corrected by the rounding error of u = 1 + v."""
    u = 1 + v
    return u.log() + (v - (u - 1)) * u.reciprocal()


def log1p(x):
    """log(1 + x) for any x: log(u) plus (x - (u - 1)) / u, the first-order correction for
    the rounding of u = 1 + x (divided by 1 + |x|, never 0, which is u wherever the
    correction is not already 0). +inf is kept aside and added back."""
    finite = x.clamp(max=FLT_MAX)
    u = 1 + finite
    corrected = u.log() + (finite - (u - 1)) * (1 + finite.abs()).reciprocal()
    return corrected + (x - finite)


def atan(x):
    """Cephes' reduction of |x| to [0, tan(pi/8)]: beyond tan(3pi/8), pi/2 - atan(1/|x|);
    beyond tan(pi/8), pi/4 + atan((|x| - 1) / (|x| + 1)); the sign put back last. The
    branches are chosen by a Gather (choose), so inf gives pi/2 and NaN stays NaN."""
    a = x.abs()
    branch = (a > TAN_PI_8).to(dt.int32) + (a > TAN_3PI_8).to(dt.int32)
    reduced = choose(branch, [a, (a - 1) / (a + 1), -a.reciprocal()])
    offset = choose(branch, [full_like(a, 0.0), full_like(a, math.pi / 4),
                             full_like(a, math.pi / 2)])
    z = reduced * reduced
    out = offset + (reduced + reduced * z * horner(z, ATAN_P))
    return out * x.sign()  # sign(0) = 0 keeps atan(0) = 0; a NaN is NaN all along
