"""Elementwise ops on the values random tables rarely produce: +-inf, NaN, signed zeros,
huge and tiny magnitudes, exact ties and int32 extremes, each checked against torch."""

import numpy as np
import pytest
import torch

import luminal as lm

F = torch.nn.functional
INF, NAN = float("inf"), float("nan")
SPECIAL = torch.tensor([-INF, -1e30, -88.0, -20.0, -2.5, -1.5, -1.0, -0.5, -1e-3, -1e-7, -0.0,
                        0.0, 1e-7, 1e-3, 0.5, 1.5, 2.5, 3.0, 19.0, 21.0, 88.0, 1e30, INF, NAN])
LM_DTYPE = {torch.float32: lm.float32, torch.int32: lm.int32, torch.bool: lm.bool_}


def run(fn, *datas):
    cx = lm.Graph()
    inputs = [cx.tensor(tuple(d.shape), LM_DTYPE[d.dtype]) for d in datas]
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        o.output()
    rt = cx.search(lm.NativeRuntime(), 1)
    for t, d in zip(inputs, datas):
        rt.set_data(t, d)
    rt.execute(cx.dyn_map)
    return [rt.get(o) for o in outs]


def compare(fn, ref, *datas, rtol=2e-6, atol=1e-6):
    got = run(fn, *datas)
    want = ref(*datas)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.astype(np.float64), w.double().numpy(), rtol=rtol,
                                   atol=atol, equal_nan=True)


UNARY = ["exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin",
         "cos", "tanh", "sigmoid", "erf", "abs", "sign", "neg", "square", "floor", "ceil",
         "round", "trunc", "frac", "isnan", "isinf", "isfinite", "nan_to_num", "relu"]
ACTIVATIONS = ["relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "softplus",
               "softsign", "hardswish", "hardsigmoid"]


@pytest.mark.parametrize("op", UNARY)
def test_unary_special_values(op):
    compare(lambda x: getattr(x, op)(), lambda x: getattr(torch, op)(x), SPECIAL)


@pytest.mark.parametrize("op", ACTIVATIONS)
def test_activation_special_values(op):
    # The reference in float64, rounded to float32: torch's vectorized float32 gelu returns NaN
    # for +inf on AVX-512 machines (its scalar path and float64 return inf).
    compare(lambda x: getattr(x, op)(), lambda x: getattr(F, op)(x.double()).float(), SPECIAL)


@pytest.mark.parametrize("op, lo, hi", [("tanh", -10, 10), ("erf", -5, 5), ("expm1", -10, 10),
                                        ("log1p", -0.999, 10), ("sigmoid", -30, 30),
                                        ("exp", -10, 10), ("log", 1e-6, 1e6)])
def test_accuracy_on_a_dense_range(op, lo, hi):
    x = torch.linspace(lo, hi, 4001)
    compare(lambda t: getattr(t, op)(), lambda t: getattr(torch, op)(t), x, rtol=1e-6, atol=1e-7)


def test_exp_error_grows_with_the_argument():
    """exp is exp2(x * log2(e)): the product's rounding costs |x| * 2^-24 relative."""
    x = torch.linspace(-87, 88, 4001)
    compare(lambda t: t.exp(), torch.exp, x, rtol=88 * 2.0 ** -24, atol=0)


@pytest.mark.parametrize("op", ["tanh", "erf", "expm1", "log1p", "sin"])
def test_relative_accuracy_near_zero(op):
    x = torch.logspace(-8, -1, 64)
    x = torch.cat([x, -x])
    compare(lambda t: getattr(t, op)(), lambda t: getattr(torch, op)(t), x, rtol=1e-6, atol=0)


A = torch.tensor([5.0, -5.0, 5.0, -5.0, 0.3, 7.5, -7.5, 0.0, 1.0, INF, -INF, NAN, 2.0, -2.0, 0.0])
B = torch.tensor([3.0, 3.0, -3.0, -3.0, 0.1, 2.0, 2.0, 3.0, INF, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("op", ["fmod", "remainder", "floor_divide", "maximum", "minimum", "eq",
                                "ne", "lt", "le", "gt", "ge", "pow"])
def test_binary_special_values(op):
    compare(lambda a, b: getattr(a, op)(b), lambda a, b: getattr(torch, op)(a, b), A, B)


def test_pow_special_bases_and_exponents():
    base = torch.tensor([-2.0, -2.0, 0.0, 0.0, 1.0, NAN, -3.0, 2.5, -INF, 0.5, -INF])
    exponent = torch.tensor([3.0, 0.5, 0.0, -1.0, NAN, 0.0, -2.0, 1.7, 3.0, -2.0, 2.5])
    compare(lambda a, b: a.pow(b), lambda a, b: a.pow(b), base, exponent)
    values = torch.tensor([-2.0, -1.5, -0.0, 0.0, 0.5, 1.0, 1.1, 3.0, INF, -INF, NAN])
    for e in [2, 3, -1, 0.5, -0.5, 2.5, 0, -3, 100, 101]:
        compare(lambda a: a ** e, lambda a: a ** e, values, rtol=1e-5)


BIG_A = torch.tensor([7, -7, 7, -7, 0, 2147483647, -2147483647, 123456789, -123456789, 5, 1, -1,
                      -2147483648, 2147483647], dtype=torch.int32)
BIG_B = torch.tensor([2, 2, -2, -2, 3, 7, 13, -1000, 999, 1, 3, 3, 7, 2147483647],
                     dtype=torch.int32)


@pytest.mark.parametrize("op", ["fmod", "remainder", "floor_divide", "maximum", "minimum"])
def test_int32_extremes(op):
    compare(lambda a, b: getattr(a, op)(b), lambda a, b: getattr(torch, op)(a, b), BIG_A, BIG_B,
            rtol=0, atol=0)


def test_int_powers():
    compare(lambda a: a ** 3, lambda a: a ** 3, BIG_A[:5], rtol=0, atol=0)
    compare(lambda a: 2 ** a, lambda a: 2 ** a,
            torch.tensor([0, 1, 5, -1, 10, 20], dtype=torch.int32), rtol=0, atol=0)
    compare(lambda a, b: a ** b, lambda a, b: a ** b,
            torch.tensor([-3, 0, 2, -1, 5, 1, -1], dtype=torch.int32),
            torch.tensor([2, 0, -1, -3, 3, -4, -4], dtype=torch.int32), rtol=0, atol=0)


def test_where_keeps_inf_and_nan():
    cond = torch.tensor([True, False, True, False])
    x = torch.tensor([INF, 1.0, NAN, -INF])
    y = torch.tensor([2.0, NAN, -INF, 0.0])
    compare(lambda c, a, b: lm.where(c, a, b), torch.where, cond, x, y)


@pytest.mark.parametrize("chosen, other", [(0.0, -INF), (-INF, 0.0)])
def test_where_of_a_zero_and_minus_inf_is_exact(chosen, other):
    """An additive mask where(c, 0, -inf) (as torch's SDPA builds it) is log2 of the condition
    (no gather): +0 and -inf exactly, in f32 and bf16."""
    cond = torch.tensor([True, False, False, True, True])
    for dtype in (torch.float32, torch.bfloat16):
        cx = lm.Graph()
        c = cx.tensor((5,), lm.bool_)
        out = lm.where(c, cx.full((5,), chosen, dtype), cx.full((5,), other, dtype)).output()
        rt = cx.search(lm.NativeRuntime(), 1)
        rt.set_data(c, cond)
        rt.execute(cx.dyn_map)
        got = torch.from_numpy(np.asarray(rt.get(out)).astype(np.float32))
        want = torch.where(cond, torch.tensor(chosen), torch.tensor(other))
        assert torch.equal(got, want) and torch.equal(got.signbit(), want.signbit()), \
            (dtype, got, want)
        assert not [n for n in range(len(cx._g)) if cx._g.node_op(n) == lm._core.OpKind.Gather]


def test_reductions_with_special_values():
    x = torch.tensor([[1.0, 3.0, 3.0, NAN, 2.0], [4.0, -1.0, 4.0, 0.0, -INF]])
    compare(lambda t: t.max(1), lambda t: tuple(t.max(1)), x)
    compare(lambda t: t.min(1), lambda t: tuple(t.min(1)), x)
    compare(lambda t: t.argmax(1), lambda t: t.argmax(1), x)
    compare(lambda t: t.cumsum(1), lambda t: t.cumsum(1), x)
    compare(lambda t: t.cumprod(1), lambda t: t.cumprod(1), x)
    compare(lambda t: t.sort(1, descending=True),
            lambda t: tuple(t.sort(dim=1, descending=True, stable=True)), x)
    row = torch.tensor([[1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN, 1.0]])
    compare(lambda t: t.cummax(1), lambda t: tuple(t.cummax(1)), row)
    compare(lambda t: t.cummin(1), lambda t: tuple(t.cummin(1)), row)
    lse = torch.tensor([[-INF, -INF], [INF, 1.0], [1.0, 2.0], [NAN, 1.0]])
    compare(lambda t: t.logsumexp(1), lambda t: t.logsumexp(1), lse)


@pytest.mark.parametrize("build", [
    lambda t: t.max(0), lambda t: t.argmax(), lambda t: t.sort(), lambda t: t.cumsum(0),
    lambda t: t.cummax(0), lambda t: t.sum(), lambda t: t.relu(), lambda t: t.topk(1),
    lambda t: t.prod(), lambda t: t.logsumexp(0), lambda t: t.argmin(0, keepdim=True),
])
def test_zero_dim_tensors(build):
    def ref(t):
        out = build(t)
        return tuple(out) if isinstance(out, tuple) else out

    compare(build, ref, torch.tensor(-1.5))
