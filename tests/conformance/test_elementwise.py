"""Conformance table: elementwise ops (unary math, activations, rounding, binary arithmetic,
comparisons, logic, selection). Each row runs through luminal and torch on the same inputs,
in the contig, noncontig and symbolic variants."""

import pytest
import torch

import luminal as lm
from harness import NAN_POINTS, VARIANTS, Case, Input, check, check_grad

F = torch.nn.functional
I32, BOOL, F16, BF16 = lm.int32, lm.bool_, lm.float16, lm.bfloat16


def pos(*shape, dtype=lm.float32):
    return Input(shape, dtype, "positive")


def unit(*shape):
    return Input(shape, lm.float32, "unit")


def ints(*shape, dtype=lm.int32):
    return Input(shape, dtype, "int")


def bools(*shape):
    return Input(shape, lm.bool_)


def halves(*shape):
    """Float inputs that hit rounding ties: k / 2 for ints k in -10..10."""
    return Input(shape, lm.float32, "int")


def odd_divisor(b):
    """A never-zero divisor of both signs built from an int input (same on both sides)."""
    return b * 2 + 1


def special(x):
    """NaN where x < 0, -inf on (0, 0.25), +inf on (0.25, 0.5), finite from 0.5 (the same
    in torch)."""
    return (x * 4).log() / x.round()


UNARY_MATH = ["exp", "exp2", "log2", "sin", "cos", "tanh", "sigmoid", "erf", "expm1", "neg",
              "abs", "sign", "square", "trunc", "frac", "tan", "atan", "asinh"]
POSITIVE_MATH = ["log", "sqrt", "rsqrt", "reciprocal", "log1p"]
ACTIVATIONS = ["relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "softplus",
               "softsign", "hardswish", "hardsigmoid"]

CASES = (
    [Case(op, lambda x, op=op: getattr(x, op)(), [(3, 4)]) for op in UNARY_MATH]
    + [Case(op, lambda x, op=op: getattr(x, op)(), [pos(3, 4)]) for op in POSITIVE_MATH]
    + [Case(op, lambda x, op=op: getattr(x, op)(), [(2, 3, 5)],
            ref=lambda x, op=op: getattr(F, op)(x)) for op in ACTIVATIONS]
    + [
        # ---- unary math: shapes, wider ranges, ints, halves --------------------------------
        Case("exp", lambda x: (x * 8).exp(), [(5,)], label="wide"),
        Case("exp", lambda x: x.exp(), [ints(3, 4)], label="int"),
        Case("exp", lambda x: x.exp(), [Input((3, 4), F16)], label="f16"),
        Case("log", lambda x: x.log(), [pos(1, 4)], label="size1"),
        Case("log", lambda x: x.log(), [pos(3, 4, dtype=BF16)], label="bf16"),
        Case("log1p", lambda x: (x * 1e-4).log1p(), [unit(6)], label="tiny"),
        Case("log1p", lambda x: x.log1p(), [unit(2, 3)], label="unit"),
        Case("expm1", lambda x: (x * 1e-4).expm1(), [(6,)], label="tiny"),
        Case("expm1", lambda x: (x * 10).expm1(), [(2, 3)], label="wide"),
        Case("sqrt", lambda x: x.sqrt(), [(3, 4)], label="nan"),
        Case("sqrt", lambda x: x.sqrt(), [Input((3, 4), I32, "index:50")], label="int"),
        Case("sin", lambda x: (x * 100).sin(), [(4, 3)], label="wide"),
        Case("cos", lambda x: (x * 100).cos(), [(4, 3)], label="wide"),
        Case("tan", lambda x: x.tan(), [unit(3, 4)], label="unit"),
        Case("tan", lambda x: (x * 1e-3 + 1.5707).tan(), [unit(3, 4)], label="near_pole"),
        Case("tan", lambda x: (x * 30).tan(), [(3, 4)], label="wide"),
        Case("tanh", lambda x: (x * 6).tanh(), [(4, 5)], label="wide"),
        Case("atan", lambda x: (x * 30).atan(), [(4, 5)], label="wide"),
        Case("atan", lambda x: special(x).atan(), [(4, 6)], label="special"),
        Case("asin", lambda x: x.asin(), [unit(3, 4)]),
        Case("asin", lambda x: (x * 1.2).asin(), [(3, 4)], label="outside"),
        Case("acos", lambda x: x.acos(), [unit(3, 4)]),
        Case("asinh", lambda x: (x * 1e3).asinh(), [(3, 4)], label="wide"),
        Case("acosh", lambda x: (x + 1).acosh(), [pos(3, 4)]),
        Case("acosh", lambda x: (x * 1e4).acosh(), [(3, 4)], label="wide_nan",
             no_grad=NAN_POINTS),
        Case("atanh", lambda x: x.atanh(), [unit(3, 4)]),
        Case("atanh", lambda x: (x * 1.2).atanh(), [(3, 4)], label="outside"),
        Case("atan2", lambda a, b: a.atan2(b), [(3, 4), (3, 4)]),
        Case("atan2", lambda a, b: special(a).atan2(special(b)), [(4, 6), (4, 6)],
             label="special"),
        Case("atan2", lambda a, b: a.atan2(b), [(3, 1), (1, 4)], label="broadcast"),
        Case("tanh", lambda x: x.tanh(), [Input((4, 5), F16)], label="f16"),
        Case("tanh", lambda x: x.tanh(), [Input((4, 5), BF16)], label="bf16"),
        Case("sigmoid", lambda x: (x * 30).sigmoid(), [(4, 5)], label="wide"),
        Case("sigmoid", lambda x: x.sigmoid(), [bools(4)], label="bool"),
        Case("erf", lambda x: (x * 3).erf(), [(6, 5)], label="wide"),
        Case("erf", lambda x: (x * 1e-3).erf(), [(6,)], label="tiny"),
        Case("exp2", lambda x: x.exp2(), [ints(3)], label="int"),
        Case("reciprocal", lambda x: x.reciprocal(), [(3, 1)], label="signs"),
        Case("rsqrt", lambda x: x.rsqrt(), [Input((2, 3), F16, "positive")], label="f16"),
        # ---- sign and magnitude -----------------------------------------------------------
        Case("abs", lambda x: x.abs(), [ints(3, 4)], label="int"),
        Case("abs", lambda x: abs(x), [(4, 1)], label="operator"),
        Case("neg", lambda x: -x, [ints(3, 4)], label="int"),
        Case("neg", lambda x: x.neg(), [Input((3, 4), F16)], label="f16"),
        Case("sign", lambda x: x.sign(), [ints(3, 4)], label="int"),
        Case("sign", lambda x: x.sign(), [bools(3, 4)], label="bool"),
        Case("sign", lambda x: special(x).sign(), [(3, 4)], label="special"),
        Case("square", lambda x: x.square(), [ints(3, 4)], label="int"),
        Case("square", lambda x: x.square(), [bools(5)], label="bool"),
        # ---- activations ------------------------------------------------------------------
        Case("relu", lambda x: x.relu(), [ints(3, 4)], ref=F.relu, label="int"),
        Case("relu", lambda x: special(x).relu(), [(3, 4)], ref=lambda x: F.relu(special(x)),
             label="special"),
        Case("relu", lambda x: x.relu(), [Input((3, 4), BF16)], ref=F.relu, label="bf16"),
        Case("relu6", lambda x: (x * 8).relu6(), [(3, 4)], ref=lambda x: F.relu6(x * 8),
             label="wide"),
        Case("relu6", lambda x: x.relu6(), [ints(3, 4)], ref=F.relu6, label="int"),
        Case("leaky_relu", lambda x: x.leaky_relu(0.2), [(3, 4)],
             ref=lambda x: F.leaky_relu(x, 0.2), label="slope"),
        Case("elu", lambda x: x.elu(alpha=0.5), [(3, 4)], ref=lambda x: F.elu(x, alpha=0.5),
             label="alpha"),
        Case("elu", lambda x: (x * 1e-4).elu(), [(5,)], ref=lambda x: F.elu(x * 1e-4),
             label="tiny"),
        Case("gelu", lambda x: x.gelu(approximate="tanh"), [(2, 3, 5)],
             ref=lambda x: F.gelu(x, approximate="tanh"), label="tanh"),
        Case("gelu", lambda x: (x * 4).gelu(), [(6, 1)], ref=lambda x: F.gelu(x * 4),
             label="wide"),
        Case("gelu", lambda x: x.gelu(), [Input((4, 5), F16)], ref=F.gelu, label="f16"),
        Case("gelu", lambda x: x.gelu(approximate="tanh"), [Input((4, 5), BF16)],
             ref=lambda x: F.gelu(x, approximate="tanh"), label="bf16_tanh"),
        Case("silu", lambda x: (x * 20).silu(), [(4, 5)], ref=lambda x: F.silu(x * 20),
             label="wide"),
        Case("silu", lambda x: x.silu(), [Input((4, 5), F16)], ref=F.silu, label="f16"),
        Case("mish", lambda x: (x * 10).mish(), [(4, 5)], ref=lambda x: F.mish(x * 10),
             label="wide"),
        Case("softplus", lambda x: (x * 30).softplus(), [(4, 5)],
             ref=lambda x: F.softplus(x * 30), label="wide"),
        Case("softplus", lambda x: x.softplus(beta=2.0, threshold=1.0), [(4, 5)],
             ref=lambda x: F.softplus(x, beta=2.0, threshold=1.0), label="beta"),
        Case("softsign", lambda x: x.softsign(), [ints(4)], ref=F.softsign, label="int"),
        Case("hardswish", lambda x: (x * 4).hardswish(), [(4, 5)],
             ref=lambda x: F.hardswish(x * 4), label="wide"),
        Case("hardsigmoid", lambda x: (x * 4).hardsigmoid(), [(4, 5)],
             ref=lambda x: F.hardsigmoid(x * 4), label="wide"),
        Case("selu", lambda x: x.selu(), [Input((4, 5), BF16)], ref=F.selu, label="bf16"),
        # ---- rounding ---------------------------------------------------------------------
        Case("round", lambda x: (x * 0.5).round(), [halves(4, 6)], label="ties"),
        Case("round", lambda x: (x * 3).round(), [(4, 6)], label="normal"),
        Case("round", lambda x: x.round(decimals=1), [(4, 6)], label="decimals"),
        Case("round", lambda x: x.round(), [ints(5)], label="int"),
        Case("floor", lambda x: (x * 0.5).floor(), [halves(4, 6)], label="ties"),
        Case("floor", lambda x: (x * 3).floor(), [(4, 6)]),
        Case("ceil", lambda x: (x * 0.5).ceil(), [halves(4, 6)], label="ties"),
        Case("ceil", lambda x: (x * 3).ceil(), [(4, 6)]),
        Case("trunc", lambda x: (x * 3).trunc(), [(4, 6)], label="scaled"),
        Case("trunc", lambda x: (x * 1e8).trunc(), [(4, 6)], label="large"),
        Case("floor", lambda x: x.floor(), [Input((4, 6), F16)], label="f16"),
        Case("frac", lambda x: (x * 3).frac(), [(4, 6)], label="scaled"),
        Case("trunc", lambda x: special(x).trunc(), [(3, 4)], label="special"),
        # ---- float classes ----------------------------------------------------------------
        Case("isnan", lambda x: special(x).isnan(), [(3, 4)]),
        Case("isinf", lambda x: special(x).isinf(), [(3, 4)]),
        Case("isfinite", lambda x: special(x).isfinite(), [(3, 4)]),
        Case("isnan", lambda x: x.isnan(), [ints(3)], label="int"),
        Case("isfinite", lambda x: x.isfinite(), [bools(3)], label="bool"),
        Case("nan_to_num", lambda x: special(x).nan_to_num(), [(3, 4)]),
        Case("nan_to_num", lambda x: special(x).nan_to_num(1.0, 5.0, -5.0), [(3, 4)],
             label="values"),
        Case("nan_to_num", lambda x: (x * 1000).exp().nan_to_num(), [Input((3, 4), F16)],
             label="f16"),
        # ---- arithmetic -------------------------------------------------------------------
        Case("add", lambda a, b: a + b, [(3, 4), (4,)], label="broadcast"),
        Case("add", lambda a: 2 + a, [(3, 4)], label="scalar"),
        Case("add", lambda a, b: a.add(b, alpha=2), [(3, 4), (3, 1)], label="alpha"),
        Case("add", lambda a, b: a + b, [ints(3, 4), (3, 4)], label="int_float"),
        Case("add", lambda a, b: a + b, [bools(3, 4), bools(3, 4)], label="bool"),
        Case("add", lambda a, b: a + b, [Input((3, 4), F16), Input((3, 4), BF16)],
             label="f16_bf16"),
        Case("add", lambda a: a + 1.5, [ints(2, 2)], label="int_pyfloat"),
        Case("add", lambda a: a * 2.5, [Input((2, 2), F16)], label="f16_pyfloat"),
        Case("sub", lambda a, b: a - b, [(3, 1), (1, 4)]),
        Case("sub", lambda a: 1 - a, [ints(3, 4)], label="rscalar_int"),
        Case("mul", lambda a, b: a * b, [(3, 4), (3, 4)]),
        Case("mul", lambda a, b: a * b, [bools(3, 4), ints(1, 4)], label="bool_int"),
        Case("div", lambda a, b: a / b, [(3, 4), pos(3, 4)]),
        Case("div", lambda a: 1 / a, [pos(3, 4)], label="rscalar"),
        Case("div", lambda a, b: a / odd_divisor(b), [ints(3, 4), ints(3, 4)], label="int"),
        Case("div", lambda a, b: a.div(b, rounding_mode="trunc"), [(3, 4), pos(3, 4)],
             label="trunc"),
        Case("div", lambda a, b: a.div(odd_divisor(b), rounding_mode="trunc"),
             [ints(3, 4), ints(3, 4)], label="trunc_int"),
        Case("div", lambda a, b: a.div(b, rounding_mode="floor"), [(3, 4), (3, 4)],
             label="floor"),
        # ---- integer-style division -------------------------------------------------------
        Case("fmod", lambda a, b: a.fmod(b), [(3, 4), (3, 4)]),
        Case("fmod", lambda a, b: a.fmod(odd_divisor(b)), [ints(3, 4), ints(3, 4)],
             label="int"),
        Case("fmod", lambda a: a.fmod(-1.5), [(3, 4)], label="scalar"),
        Case("remainder", lambda a, b: a.remainder(b), [(3, 4), (3, 4)]),
        Case("remainder", lambda a, b: a % odd_divisor(b), [ints(3, 4), ints(1, 4)],
             label="int"),
        Case("remainder", lambda a: a % 0.7, [(3, 4)], label="scalar"),
        Case("remainder", lambda a: 5 % odd_divisor(a), [ints(3, 4)], label="rscalar"),
        Case("floor_divide", lambda a, b: a // b, [(3, 4), (3, 4)]),
        Case("floor_divide", lambda a, b: a // odd_divisor(b), [ints(3, 4), ints(3, 4)],
             label="int"),
        Case("floor_divide", lambda a: a // 3, [ints(3, 4)], label="int_scalar"),
        Case("floor_divide", lambda a: a.floor_divide(-0.3), [(3, 4)], label="float_scalar"),
        Case("floor_divide", lambda a, b: a // b, [Input((3, 4), F16), Input((3, 4), F16)],
             label="f16"),
        # ---- powers -----------------------------------------------------------------------
        Case("pow", lambda a: a ** 2, [(3, 4)], label="square"),
        Case("pow", lambda a: a ** 3, [(3, 4)], label="cube"),
        Case("pow", lambda a: a.pow(-2), [pos(3, 4)], label="neg_int"),
        Case("pow", lambda a: a ** 0.5, [pos(3, 4)], label="sqrt"),
        Case("pow", lambda a: a ** 2.7, [(3, 4)], label="nan", no_grad=NAN_POINTS),
        Case("pow", lambda a: a ** 1.3, [pos(3, 4)], label="float"),
        Case("pow", lambda a, b: a ** b, [pos(3, 4), (3, 4)], label="tensor"),
        Case("pow", lambda a, b: a.pow(b), [(3, 4), halves(3, 4)], label="neg_base",
             no_grad="the exponent's gradient at a negative base is undefined (a ** b is real "
                     "only at integer b; torch gives NaN); pow[cube] checks the base's"),
        Case("pow", lambda a: a ** 3, [ints(3, 4)], label="int"),
        Case("pow", lambda a: a ** 0, [ints(3, 4)], label="int_zero"),
        Case("pow", lambda a: a ** 2.0, [ints(3, 4)], label="int_pyfloat"),
        Case("pow", lambda a, b: a ** b, [ints(3, 4), Input((3, 4), I32, "index:5")],
             label="int_tensor"),
        Case("pow", lambda a: 2 ** a, [ints(3, 4)], label="rscalar"),
        Case("pow", lambda a: 0.5 ** a, [(3, 4)], label="rscalar_float"),
        Case("pow", lambda a: a ** 2, [Input((3, 4), F16)], label="f16"),
        # ---- extremes and clamping --------------------------------------------------------
        Case("maximum", lambda a, b: a.maximum(b), [(3, 4), (4,)]),
        Case("maximum", lambda a, b: a.maximum(b), [ints(3, 4), ints(3, 4)], label="int"),
        Case("maximum", lambda a, b: a.maximum(b), [bools(3, 4), bools(3, 4)], label="bool"),
        Case("maximum", lambda a, b: special(a).maximum(b), [(3, 4), (3, 4)],
             ref=lambda a, b: torch.maximum(special(a), b), label="nan", no_grad=NAN_POINTS),
        Case("minimum", lambda a, b: a.minimum(b), [(3, 1), (1, 4)]),
        Case("minimum", lambda a, b: a.minimum(b), [ints(3, 4), ints(3, 4)], label="int"),
        Case("minimum", lambda a, b: a.minimum(b), [Input((3, 4), F16), (3, 4)],
             label="mixed"),
        Case("clamp", lambda a: a.clamp(-0.5, 0.5), [(3, 4)]),
        Case("clamp", lambda a: a.clamp(min=0.1), [(3, 4)], label="min"),
        Case("clamp", lambda a: a.clamp(max=-0.1), [(3, 4)], label="max"),
        Case("clamp", lambda a, lo, hi: a.clamp(lo, hi), [(3, 4), (3, 1), (4,)],
             label="tensors"),
        Case("clamp", lambda a: a.clamp(-3, 4), [ints(3, 4)], label="int"),
        Case("clamp", lambda a: a.clamp(min=0.5), [ints(3, 4)], label="int_float_bound"),
        Case("clamp", lambda a: a.clamp(1.0, -1.0), [(3, 4)], label="crossed"),
        Case("clamp", lambda a: a.clip(-1, 1), [Input((3, 4), BF16)], ref=lambda a: a.clip(-1, 1),
             label="clip_bf16"),
        # ---- selection and blends ---------------------------------------------------------
        Case("where", lambda c, a, b: lm.where(c, a, b), [bools(3, 4), (3, 4), (4,)],
             ref=torch.where),
        Case("where", lambda c, a, b: a.where(c, b), [bools(3, 1), (3, 4), (1, 4)],
             label="method"),
        Case("where", lambda c, a: lm.where(c, a, 0.0), [bools(3, 4), ints(3, 4)],
             ref=lambda c, a: torch.where(c, a, 0.0), label="int_pyfloat"),
        Case("where", lambda c, a: lm.where(c, 1, a), [bools(3, 4), ints(3, 4)],
             ref=lambda c, a: torch.where(c, 1, a), label="scalar_int"),
        Case("where", lambda c, a, b: lm.where(c, special(a), b), [bools(3, 4), (3, 4), (3, 4)],
             ref=lambda c, a, b: torch.where(c, special(a), b), label="special"),
        Case("where", lambda c, a, b: lm.where(c, a, b), [bools(3, 4), bools(3, 4), bools(4)],
             ref=torch.where, label="bool"),
        Case("where", lambda a: lm.where(a > 0, a, a * 0.1), [Input((3, 4), F16)],
             ref=lambda a: torch.where(a > 0, a, a * 0.1), label="f16"),
        Case("lerp", lambda a, b: a.lerp(b, 0.3), [(3, 4), (3, 4)]),
        Case("lerp", lambda a, b, w: a.lerp(b, w), [(3, 4), (4,), unit(3, 1)], label="tensor"),
        Case("lerp", lambda a, b: a.lerp(b, 0.75), [Input((3, 4), F16), Input((3, 4), F16)],
             label="f16"),
        Case("addcmul", lambda a, b, c: a.addcmul(b, c, value=0.5), [(3, 4), (3, 4), (4,)]),
        Case("addcmul", lambda a, b, c: a.addcmul(b, c), [ints(3, 4), ints(3, 4), ints(3, 4)],
             label="int"),
        # ---- comparisons ------------------------------------------------------------------
        Case("lt", lambda a, b: a < b, [(3, 4), (3, 4)]),
        Case("lt", lambda a: a.lt(1), [ints(3, 4)], label="int_scalar"),
        Case("le", lambda a, b: a <= b, [ints(3, 4), ints(4)]),
        Case("le", lambda a, b: special(a) <= b, [(3, 4), (3, 4)],
             ref=lambda a, b: special(a) <= b, label="special"),
        Case("gt", lambda a: a > 0.5, [(3, 4)], label="scalar"),
        Case("gt", lambda a, b: a.gt(b), [bools(3, 4), bools(3, 4)], label="bool"),
        Case("ge", lambda a, b: a >= b, [(3, 4), (3, 4)]),
        Case("ge", lambda a, b: special(a).ge(special(b)), [(3, 4), (3, 4)],
             ref=lambda a, b: special(a).ge(special(b)), label="special"),
        Case("eq", lambda a, b: a == b, [ints(3, 4), ints(3, 4)]),
        Case("eq", lambda a: a == 1, [ints(3, 4)], label="int_scalar"),
        Case("eq", lambda a: special(a) == special(a), [(3, 4)],
             ref=lambda a: special(a) == special(a), label="special"),
        Case("eq", lambda a, b: a.eq(b), [halves(3, 4), ints(3, 1)], label="int_float"),
        Case("ne", lambda a, b: a != b, [ints(3, 4), ints(3, 4)]),
        Case("ne", lambda a: special(a).ne(special(a)), [(3, 4)],
             ref=lambda a: special(a).ne(special(a)), label="special"),
        # ---- further torch names ----------------------------------------------------------
        Case("log10", lambda x: x.log10(), [pos(3, 4)]),
        Case("erfc", lambda x: x.erfc(), [(3, 4)]),
        Case("float_power", lambda x: x.float_power(2), [ints(3, 4)],
             ref=lambda x: x.float_power(2).float()),
        Case("celu", lambda x: x.celu(alpha=0.7), [(3, 4)], ref=lambda x: F.celu(x, alpha=0.7)),
        Case("logsigmoid", lambda x: (x * 20).logsigmoid(), [(3, 4)],
             ref=lambda x: F.logsigmoid(x * 20)),
        Case("hardtanh", lambda x: x.hardtanh(-0.5, 0.8), [(3, 4)],
             ref=lambda x: F.hardtanh(x, -0.5, 0.8)),
        Case("addcdiv", lambda a, b, c: a.addcdiv(b, c, value=2), [(3, 4), (3, 4), pos(4)]),
        Case("isposinf", lambda x: special(x).isposinf(), [(3, 4)]),
        Case("isneginf", lambda x: special(x).isneginf(), [(3, 4)]),
        Case("clamp_min", lambda x: x.clamp_min(0.2), [(3, 4)]),
        Case("clamp_max", lambda x: x.clamp_max(0.2), [ints(3, 4)]),
        # ---- logic ------------------------------------------------------------------------
        Case("logical_and", lambda a, b: a.logical_and(b), [bools(3, 4), bools(4)]),
        Case("logical_and", lambda a, b: a & b, [bools(3, 4), bools(3, 4)], label="operator"),
        Case("logical_or", lambda a, b: a.logical_or(b), [bools(3, 4), bools(3, 1)]),
        Case("logical_or", lambda a, b: a.logical_or(b), [ints(3, 4), (3, 4)], label="numbers"),
        Case("logical_not", lambda a: a.logical_not(), [bools(3, 4)]),
        Case("logical_not", lambda a: ~a, [bools(3, 4)], label="operator"),
        Case("logical_not", lambda a: special(a).logical_not(), [(3, 4)],
             ref=lambda a: special(a).logical_not(), label="special"),
        Case("logical_xor", lambda a, b: a.logical_xor(b), [bools(3, 4), bools(3, 4)]),
        Case("logical_xor", lambda a, b: a ^ b, [bools(3, 1), bools(1, 4)], label="operator"),
    ]
)

for _case in CASES:
    if _case.label == "special":
        _case.no_grad = NAN_POINTS


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_elementwise(case, variant, runtime):
    check(case, variant, runtime)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_elementwise_grad(case, variant, runtime):
    check_grad(case, variant, runtime)
