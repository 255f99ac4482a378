"""Rules that create programs: the opt-in rule sets (csrc/egraph/rules/opt_in), each rule as
"this => that" with a census, off unless build_search_space asks for them; a search with float
reassociation on, and one where the built-in hoisting and scale rules fire, give programs that
agree with torch; a wrong hoisting rule (through a padding mask) is caught by the checks."""

import numpy as np
import pytest
import torch

import luminal as lm
from conftest import assert_close
from luminal import _core

OPT_IN = dict(_core.opt_in_rule_files())
FLOAT_RULES = _core.parse_rules(OPT_IN["float_reassoc.rules"], "float_reassoc.rules")


def f32(cx, shape=(2, 3)):
    return cx.tensor(shape)


def case_add_assoc(cx):
    a, b, c = f32(cx), f32(cx), f32(cx)
    return (a + b) + c, a + (b + c)


def case_mul_assoc(cx):
    a, b, c = f32(cx), f32(cx), f32(cx)
    return (a * b) * c, a * (b * c)


def case_factor(cx):
    a, b, c = f32(cx), f32(cx), f32(cx)
    return a * c + b * c, (a + b) * c


def case_distribute(cx):
    a, b, c = f32(cx), f32(cx), f32(cx)
    return (a + b) * c, a * c + b * c


def case_scale_into_matmul(cx):
    a, b = f32(cx, (4, 8)), f32(cx, (8, 5))
    return (a @ b) * 0.3, a @ (b * 0.3)


CASES = {"float-add-assoc": case_add_assoc, "float-mul-assoc": case_mul_assoc,
         "float-mul-add-factor": case_factor, "float-mul-distribute": case_distribute,
         "float-scale-into-matmul": case_scale_into_matmul}


def test_every_opt_in_rule_has_a_case():
    assert sorted(CASES) == sorted(r.name for r in FLOAT_RULES)


def test_opt_in_rules_are_not_builtin():
    builtin = {r.name for r in _core.load_rules()}
    assert not builtin & set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_opt_in_rule_this_gives_that(name):
    cx = lm.Graph()
    this, that = CASES[name](cx)
    this.output()
    that.output()
    lim = _core.RunnerLimits()
    lim.iterations = 4
    g = _core.EGraph()
    r_this, r_that = g.add_graph(cx._g)
    g.run([], lim)
    assert not g.equivalent(r_this, r_that)
    g = _core.EGraph()
    r_this, r_that = g.add_graph(cx._g)
    report = g.run([r for r in FLOAT_RULES if r.name == name], lim)
    assert g.equivalent(r_this, r_that), str(g)
    assert report.rejected_merges == 0


@pytest.mark.parametrize("runtime_type", [lm.NativeRuntime, lm.CpuRuntime])
def test_search_with_float_reassociation_agrees_with_torch(tmp_path, runtime_type):
    cx = lm.Graph()
    x = cx.tensor((6, 8), name="x")
    w = cx.tensor((8, 5), name="w")
    y = (((x @ w) * 0.3 + x[:, :5] * 0.3) * 2.0).output()
    cx.build_search_space(runtime_type, float_reassociation=True)
    kwargs = {"cache_dir": str(tmp_path / "cc")} if runtime_type is lm.CpuRuntime else {}
    rt = cx.search(runtime_type(**kwargs), 4, cache_dir=str(tmp_path))
    report = cx.last_search_report
    applied = {r.name: r.applied for r in cx._search_space.core.report.rules}
    assert applied["float-mul-distribute"] > 0, report.saturation
    xs = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    ws = np.random.default_rng(1).standard_normal((8, 5)).astype(np.float32)
    rt.set_data(x, xs)
    rt.set_data(w, ws)
    rt.execute(cx.dyn_map)
    tx, tw = torch.from_numpy(xs), torch.from_numpy(ws)
    assert_close(rt.get(y), ((tx @ tw) * 0.3 + tx[:, :5] * 0.3) * 2.0)


def test_the_float_rules_change_the_cache_key(tmp_path):
    cx = lm.Graph()
    x = cx.tensor((4,))
    ((x + 1.0) + 2.0).output()
    cx.build_search_space(lm.NativeRuntime)
    cx.search(lm.NativeRuntime(), 1, cache_dir=str(tmp_path))
    cx.build_search_space(lm.NativeRuntime, float_reassociation=True)
    cx.search(lm.NativeRuntime(), 1, cache_dir=str(tmp_path))
    assert not cx.last_search_report.cache_hit


# Hoisting exp2 above any view, a mask's too: wrong where the padding reads 0 (exp2(0) is 1,
# the hoisted program reads 0 there).
WRONG_HOIST = "(rule hoist-through-mask (Exp2 ?x) (through ?x (Exp2 ?x)) (if (float ?x)))"


class WrongHoistCpu(lm.CpuRuntime):
    def rewrite_rules(self):
        return super().rewrite_rules() + "\n" + WRONG_HOIST


def test_a_wrong_hoisting_rule_is_caught(tmp_path):
    cx = lm.Graph()
    x = cx.tensor((4, 6), name="x")
    y = (x.pad_zeros((1, 1)).exp2() * 2.0).output()
    cx.build_search_space(WrongHoistCpu)
    rt = cx.search(WrongHoistCpu(cache_dir=str(tmp_path / "cc")), 6, cache_dir=str(tmp_path))
    report = cx.last_search_report
    wrong = [c for c in report.candidates if c.status == "wrong"]
    assert wrong and report.wrong_rules, str(report)
    assert report.candidates[report.winner].status == "ok"
    xs = np.random.default_rng(0).uniform(0.5, 2.0, (4, 6)).astype(np.float32)
    rt.set_data(x, xs)
    rt.execute(cx.dyn_map)
    want = torch.nn.functional.pad(torch.from_numpy(xs), (1, 1)).exp2() * 2.0
    assert_close(rt.get(y), want)


def test_hoisted_and_scaled_programs_agree_with_torch(tmp_path):
    """The built-in hoisting and power-of-two scale rules fire on attention written with a
    division and a 1/sqrt(64) scale, and every candidate the search keeps agrees with torch."""
    cx = lm.Graph()
    q, k, v = cx.tensor((2, 16, 64)), cx.tensor((2, 64, 16)), cx.tensor((2, 16, 64))
    s = (q @ k) * 0.125
    e = (s - s.amax(-1, keepdim=True)).exp()
    y = ((e / e.sum(-1, keepdim=True)) @ v).output()
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(lm.CpuRuntime(cache_dir=str(tmp_path / "cc")), 6, cache_dir=str(tmp_path))
    applied = {r.name: r.applied for r in cx._search_space.core.report.rules}
    assert applied["scale-into-matmul"] > 0 and applied["hoist-unary"] > 0, applied
    assert not cx.last_search_report.wrong_rules, str(cx.last_search_report)
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(t.shape).astype(np.float32) for t in (q, k, v)]
    for t, d in zip((q, k, v), data):
        rt.set_data(t, d)
    rt.execute(cx.dyn_map)
    tq, tk, tv = (torch.from_numpy(d) for d in data)
    assert_close(rt.get(y), torch.softmax((tq @ tk) * 0.125, -1) @ tv)
