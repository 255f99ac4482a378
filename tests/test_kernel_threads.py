"""Each kernel's OpenMP team (the CPU rules' threads schedule: serial, two threads, or by the
work) against torch, a reduction node's own team, the native runtime ignoring schedules, bad
node schedules and schedule rules refused, and the search timing every tiling."""

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core

from conftest import CPU_CACHE
from matmul_cases import scheduled
from test_runtime_rules import matmul


def _softmax_rows(cx, rows):
    x = cx.tensor((rows, 37), name="x")
    return [x], lambda t: t[0].softmax(-1), x.softmax(-1)


def _rms_norm(cx, rows):
    x = cx.tensor((rows, 129), name="x")
    w = cx.tensor((129,), name="w")
    y = x * (x * x).mean(-1, keepdim=True).add(1e-5).rsqrt() * w
    return [x, w], lambda t: t[0] * (t[0] * t[0]).mean(-1, keepdim=True).add(1e-5).rsqrt() \
        * t[1], y


def _decode_attention(cx, past):
    """One query row per head against `past` cached keys and values (symbolic "p")."""
    q = cx.tensor((3, 1, 16), name="q")
    k = cx.tensor((3, "p", 16), name="k")
    v = cx.tensor((3, "p", 16), name="v")
    cx.set_dim("p", past)

    def attend(q, k, v):
        return (q @ k.transpose(-1, -2) * 0.25).softmax(-1) @ v
    return [q, k, v], lambda t: attend(*t), attend(q, k, v)


def _odd_matmul(cx, rows):
    a, b, y = matmul(cx, rows, 11, 40)
    return [a, b], lambda t: t[0] @ t[1], y


@pytest.mark.parametrize("threads", [0, 1, 2, 3])
@pytest.mark.parametrize("build,size", [
    (_softmax_rows, 7), (_softmax_rows, 1000), (_rms_norm, 5), (_rms_norm, 300),
    (_decode_attention, 19), (_decode_attention, 700), (_odd_matmul, 13)],
    ids=["softmax-7", "softmax-1000", "rms-5", "rms-300", "attention-p19", "attention-p700",
         "matmul-13x11x40"])
def test_every_kernel_under_each_threads_schedule_matches_torch(build, size, threads):
    """threads 0 (every thread once the work reaches the threshold), 1 (serial: no parallel
    region), n (at most n threads whatever the work), here program-wide, on shapes below and
    above the threshold, with more threads than cores."""
    cx = lm.Graph()
    inputs, reference, y = build(cx, size)
    y.output()
    rt = lm.CpuRuntime(threads=3, cache_dir=CPU_CACHE)
    choice = _core.TuningChoice()
    choice.params = [("threads", threads)]
    rt._load(cx, None, choice)
    source = rt.source
    if threads == 1:
        assert "omp parallel" not in source
    elif threads == 0:
        assert " >= 32768)" in source and "lm_threads <" not in source
    else:
        assert f"num_threads(lm_threads < {threads} ? lm_threads : {threads})" in source
        assert " >= 32768)" not in source
    data = [torch.randn([d.as_const() if d.is_const() else cx.dyn_map[str(d)]
                         for d in cx._g.node_shape(t.id)]) for t in inputs]
    for t, value in zip(inputs, data):
        rt.set_data(t, value)
    rt.execute()
    want = reference(data)
    np.testing.assert_allclose(rt.get(y), want.numpy(), rtol=1e-4, atol=1e-5)


def test_a_reduction_node_takes_its_own_team():
    cx = lm.Graph()
    x = cx.tensor((300, 129), name="x")
    total = scheduled(x.sum(-1), [("threads", 1)])
    peak = scheduled(x.amax(-1), [("threads", 2)])
    y = (total + peak).output()
    rt = lm.CpuRuntime(threads=3, cache_dir=CPU_CACHE)
    rt._load(cx)
    units = rt.source.split("/* ---- ")[1:]
    sum_unit = next(u for u in units if "v1 = v1 + v0;" in u)
    max_unit = next(u for u in units if "lm_fmax_nan(v1, v0)" in u)
    assert "omp parallel" not in sum_unit
    assert "num_threads(lm_threads < 2 ? lm_threads : 2) schedule(static)" in max_unit
    data = torch.randn(300, 129)
    rt.set_data(x, data)
    rt.execute()
    want = data.sum(-1) + data.amax(-1)
    np.testing.assert_allclose(rt.get(y), want.numpy(), rtol=1e-5, atol=1e-4)


def test_native_runtime_ignores_schedules():
    cx = lm.Graph()
    a, b, y = matmul(cx)
    z = scheduled(y, [("tile_m", 4), ("tile_n", 16)]).output()
    rt = lm.NativeRuntime()
    rt._load(cx)
    ad, bd = torch.randn(5, 7), torch.randn(7, 9)
    rt.set_data(a, ad)
    rt.set_data(b, bd)
    rt.execute()
    np.testing.assert_allclose(rt.get(z), (ad @ bd).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("schedule,message", [
    ([("tile_q", 4)], "tile_q"),
    ([("tile_m", 99)], "tile_m"),
    ([("tile_n", 12)], "multiple of the vector width"),
    ([("threads", 5000)], "threads = 5000 is out of range"),
])
def test_cpu_runtime_refuses_bad_node_schedules(schedule, message):
    cx = lm.Graph()
    _, _, y = matmul(cx)
    scheduled(y, schedule).output()
    with pytest.raises(lm.CompileError, match=message):
        lm.CpuRuntime(cache_dir=CPU_CACHE)._load(cx)


def test_sources_and_outputs_take_no_schedule():
    cx = lm.Graph()
    a = cx.tensor((2, 2))
    with pytest.raises(lm.ShapeError, match="takes no schedule"):
        cx._g.scheduled(a.id, [("tile_m", 4)])
    with pytest.raises(lm.ShapeError, match="bad parameter name"):
        cx._g.scheduled((a + 1.0).id, [("tile m", 4)])


@pytest.mark.parametrize("text,message", [
    ("(rule r (schedule ((tile_m 4)) (Exp2 ?x)) (Exp2 ?x))", "only on the right"),
    ("(rule r (Exp2 ?x) (schedule ((tile_m x)) (Exp2 ?x)))", "schedule parameter"),
    ("(rule r (Exp2 ?x) (schedule ((tile_m 4)) ?x))", "applies to an op"),
    ("(rule r (SumReduce:s (Mul ?a ?b)) (SumReduce:s (Mul ?a ?b)) (if (matmul ?a ?b q)))",
     "label bound on the left"),
])
def test_bad_schedule_rules_are_refused(text, message):
    with pytest.raises(lm.CompileError, match=message):
        _core.parse_rules(text, "test")


def test_search_times_every_tiling_and_keeps_a_correct_one(tmp_path):
    cx = lm.Graph()
    a, b, y = matmul(cx, 24, 32, 48)
    y = y.output()
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE), 8, cache_dir=str(tmp_path))
    report = cx.last_search_report
    labels = {c.choice for c in report.candidates}
    assert len(labels) >= 6, labels  # the default and one program per tiling
    assert all(c.status == "ok" and c.seconds is not None for c in report.candidates)
    assert report.winner is not None
    assert [what.split()[0] for _, what in report.winner_kernels] == ["SumReduce"]
    assert "winner's kernels" in str(report)
    ad, bd = torch.randn(24, 32), torch.randn(32, 48)
    rt.set_data(a, ad)
    rt.set_data(b, bd)
    rt.execute()
    np.testing.assert_allclose(rt.get(y), (ad @ bd).numpy(), rtol=1e-4, atol=1e-4)
