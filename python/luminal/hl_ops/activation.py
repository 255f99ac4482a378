"""Activation functions (torch.nn.functional's, as GraphTensor methods): relu, relu6,
hardtanh, leaky_relu, elu, selu, celu, gelu, silu, mish, softplus, softsign, hardswish,
hardsigmoid, logsigmoid. Branches are joined by max/min and arithmetic blends that stay exact
for inf and NaN; no Gather."""

from __future__ import annotations

import math

from .._core import Expr, OpKind
from .. import dtype as dt
from ..errors import DTypeError
from . import approx
from .tensor_utils import float_math, float_only, no_bool

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class ActivationOps:
    def relu(self):
        """max(x, 0): the input padded with a zero on a new axis, reduced by MaxReduce."""
        no_bool(self, "relu")
        rank = self.ndim
        view = self.st.insert_axis(rank, Expr(1)).pad(rank, Expr(0), Expr(1))
        return self._with_view(view)._reduce(OpKind.MaxReduce, rank)

    def _negative_part(self):
        """min(x, 0)."""
        return -((-self).relu())

    def relu6(self):
        no_bool(self, "relu6")
        return self.relu().clamp(max=6)

    def hardtanh(self, min_val=-1.0, max_val=1.0):
        no_bool(self, "hardtanh")
        return self.clamp(min_val, max_val)

    @float_only("leaky_relu")
    def leaky_relu(self, negative_slope=0.01):
        return self.relu() + self._negative_part() * negative_slope

    @float_only("elu")
    def elu(self, alpha=1.0):
        return self.relu() + self._negative_part().expm1() * alpha

    @float_only("selu")
    def selu(self):
        return self.elu(SELU_ALPHA) * SELU_SCALE

    @float_only("celu")
    def celu(self, alpha=1.0):
        return self.relu() + (self._negative_part() * (1.0 / alpha)).expm1() * alpha

    @float_only("gelu")
    def gelu(self, approximate="none"):
        if approximate == "tanh":
            inner = (self + self * self * self * 0.044715) * SQRT_2_OVER_PI
            return self * 0.5 * (1 + approx.tanh(inner))
        if approximate != "none":
            raise DTypeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return self * 0.5 * (1 + approx.erf(self * SQRT_HALF))

    @float_only("silu")
    def silu(self):
        return self * self.sigmoid()

    @float_only("mish")
    def mish(self):
        return self * approx.tanh(self.softplus())

    @float_only("softplus")
    def softplus(self, beta=1.0, threshold=20.0):
        """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch's
        rule), as max(z, 0) + log1p(exp(-|z|)) so that nothing overflows."""
        z = self if beta == 1 else self * beta
        tail = approx.log1p_unit((-z.abs()).exp())
        out = z.relu() + tail * (z <= threshold).to(dt.float32)
        if threshold < 0:
            out = out + z.clamp(threshold, 0) * (z > threshold).to(dt.float32)
        return out if beta == 1 else out * (1.0 / beta)

    @float_only("logsigmoid")
    def logsigmoid(self):
        return -((-self).softplus())

    @float_math
    def softsign(self):
        return self * (1 + self.abs()).reciprocal()

    @float_only("hardsigmoid")
    def hardsigmoid(self):
        return (self + 3).relu6() * (1.0 / 6.0)

    @float_only("hardswish")
    def hardswish(self):
        return self * (self + 3).relu6() * (1.0 / 6.0)
