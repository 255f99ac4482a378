"""Conformance table: creation ops (methods of Graph), checked against torch; rows that take
an input build from its (possibly symbolic) shape. rand / randn follow their own generator,
so they are checked statistically below instead."""

import numpy as np
import pytest
import torch

import luminal as lm
from harness import VARIANTS, Case, Input, check, check_grad

COVERED_ELSEWHERE = ["rand", "randn"]

CASES = [
    Case("arange", lambda cx: cx.arange(5), [], lambda t: t.arange(5), takes_graph=True),
    Case("arange", lambda cx: cx.arange(2, 11, 3), [], lambda t: t.arange(2, 11, 3),
         takes_graph=True, label="step"),
    Case("arange", lambda cx: cx.arange(10, 0, -3), [], lambda t: t.arange(10, 0, -3),
         takes_graph=True, label="negative_step"),
    Case("arange", lambda cx: cx.arange(0.5, 3.0, 0.25), [], lambda t: t.arange(0.5, 3.0, 0.25),
         takes_graph=True, label="float"),
    Case("arange", lambda cx: cx.arange(4, dtype=lm.float32), [],
         lambda t: t.arange(4, dtype=t.float32), takes_graph=True, label="dtype"),
    Case("arange", lambda cx, x: cx.arange(x.shape[0]) + x, [Input((4,), lm.int32)],
         lambda t, x: t.arange(x.shape[0]) + x, takes_graph=True, label="from_shape"),
    Case("zeros", lambda cx: cx.zeros(2, 3), [], lambda t: t.zeros(2, 3), takes_graph=True),
    Case("zeros", lambda cx: cx.zeros((4,), dtype=lm.int32), [],
         lambda t: t.zeros((4,), dtype=t.int32), takes_graph=True, label="int"),
    Case("ones", lambda cx: cx.ones((2, 1, 3)), [], lambda t: t.ones((2, 1, 3)),
         takes_graph=True),
    Case("ones", lambda cx: cx.ones(3, dtype=lm.bool_), [], lambda t: t.ones(3, dtype=t.bool),
         takes_graph=True, label="bool"),
    Case("full", lambda cx: cx.full((2, 3), 1.5), [], lambda t: t.full((2, 3), 1.5),
         takes_graph=True),
    Case("full", lambda cx: cx.full((3,), 7), [], lambda t: t.full((3,), 7),
         takes_graph=True, label="int"),
    Case("full", lambda cx: cx.full((2, 2), float("-inf")), [],
         lambda t: t.full((2, 2), float("-inf")), takes_graph=True, label="neg_inf"),
    Case("zeros_like", lambda cx, x: cx.zeros_like(x), [(3, 4)],
         lambda t, x: t.zeros_like(x), takes_graph=True),
    Case("ones_like", lambda cx, x: cx.ones_like(x), [Input((3, 1), lm.int32)],
         lambda t, x: t.ones_like(x), takes_graph=True),
    Case("full_like", lambda cx, x: cx.full_like(x, 2.5) * x, [(3, 4)],
         lambda t, x: t.full_like(x, 2.5) * x, takes_graph=True),
    Case("eye", lambda cx: cx.eye(3), [], lambda t: t.eye(3), takes_graph=True),
    Case("eye", lambda cx: cx.eye(2, 4), [], lambda t: t.eye(2, 4), takes_graph=True,
         label="rect"),
    Case("eye", lambda cx, x: cx.eye(x.shape[0], 3) + x, [(4, 3)],
         lambda t, x: t.eye(x.shape[0], 3) + x, takes_graph=True, label="from_shape"),
    Case("linspace", lambda cx: cx.linspace(0, 1, 5), [], lambda t: t.linspace(0, 1, 5),
         takes_graph=True),
    Case("linspace", lambda cx: cx.linspace(-2.5, 3, 8), [], lambda t: t.linspace(-2.5, 3, 8),
         takes_graph=True, label="even"),
    Case("linspace", lambda cx: cx.linspace(3, 3, 1), [], lambda t: t.linspace(3, 3, 1),
         takes_graph=True, label="one"),
]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_creation(case, variant, runtime):
    check(case, variant, runtime)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_creation_grad(case, variant, runtime):
    check_grad(case, variant, runtime)


def _sample(runtime, make, dyn=None):
    cx = lm.Graph()
    outs = make(cx)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for o in outs:
        o.output()
    for name, value in (dyn or {}).items():
        cx.set_dim(name, value)
    rt = cx.search(runtime(), 1)
    rt.execute(cx.dyn_map)
    got = [rt.get(o) for o in outs]
    return got if len(got) > 1 else got[0]


def _ks_statistic(sample, cdf):
    """Kolmogorov-Smirnov distance between a sample and a torch cdf."""
    x = torch.from_numpy(np.sort(sample.astype(np.float64)))
    n = len(x)
    f = cdf(x)
    upper = torch.arange(1, n + 1, dtype=torch.float64) / n - f
    lower = f - torch.arange(0, n, dtype=torch.float64) / n
    return float(torch.maximum(upper, lower).max())


N = 4096
KS_99 = 1.63 / np.sqrt(N)  # the 99% critical value


def test_rand_is_uniform(runtime):
    u = _sample(runtime, lambda cx: cx.rand(64, 64, seed=3))
    assert u.shape == (64, 64) and u.dtype == np.float32
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02
    assert abs(u.std() - np.sqrt(1 / 12)) < 0.01
    assert _ks_statistic(u.reshape(-1), lambda x: x.clamp(0, 1)) < KS_99
    flat = u.reshape(-1)
    assert abs(np.corrcoef(flat[:-1], flat[1:])[0, 1]) < 0.05  # neighbours independent


def test_randn_is_normal(runtime):
    z = _sample(runtime, lambda cx: cx.randn((N,), seed=11))
    assert abs(z.mean()) < 0.06
    assert abs(z.std() - 1.0) < 0.05
    normal = torch.distributions.Normal(0.0, 1.0)
    assert _ks_statistic(z, normal.cdf) < KS_99
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.05


def test_same_seed_same_values_other_seed_differs(runtime):
    a, b, c = _sample(runtime, lambda cx: (cx.randn(8, 16, seed=5), cx.randn(8, 16, seed=5),
                                           cx.randn(8, 16, seed=6)))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert abs(np.corrcoef(a.reshape(-1), c.reshape(-1))[0, 1]) < 0.2
    r1 = _sample(runtime, lambda cx: cx.rand(100, seed=0))
    r2 = _sample(runtime, lambda cx: cx.rand(100, seed=0))
    np.testing.assert_array_equal(r1, r2)


def test_rand_symbolic_shape_and_dtype(runtime):
    u = _sample(runtime, lambda cx: cx.rand("s", 3, seed=1, dtype=lm.float16), {"s": 5})
    assert u.shape == (5, 3) and u.dtype == np.float16
    assert (u >= 0).all() and (u <= 1).all()
    like = _sample(runtime, lambda cx: cx.randn_like(cx.tensor((2, 3)), seed=2))
    assert like.shape == (2, 3) and np.isfinite(like).all()
