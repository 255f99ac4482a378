"""The calibrated cost model (luminal.search.cost) and the descent (luminal.search.descent):
kernel work counted from the lowered program, a fit whose ranking of measured kernel times is
above a floor (pairs more than 4x apart, robust to a loaded machine), budget 1 taking the
model's pick, the report's rank correlation, and a descent that never re-times a program.
Outputs are checked against torch."""

import numpy as np
import pytest
import torch

import luminal as lm
from conftest import assert_close
from luminal import _core
from luminal.search import calibrate
from luminal.search import cost as search_cost
from luminal.search import extract


def test_matmul_work_counts_its_flops_and_bytes():
    cx = lm.Graph()
    a, b = cx.tensor((32, 48)), cx.tensor((48, 40))
    (a @ b).output()
    work = _core.cpu_kernel_work(cx._g, _core.TuningChoice(), {})
    mm = [w for w in work if w.matmul_flops > 0]
    assert len(mm) == 1
    assert mm[0].matmul_flops == 2 * 32 * 48 * 40
    assert mm[0].bytes_read == 4 * (32 * 48 + 48 * 40)
    assert mm[0].bytes_written == 4 * 32 * 40


def test_symbolic_dims_are_bound_in_the_work():
    cx = lm.Graph()
    x = cx.tensor(("s", 64))
    x.exp().output()
    (w,) = _core.cpu_kernel_work(cx._g, _core.TuningChoice(), {"s": 10})
    assert w.outputs == 640 and w.special == 640


@pytest.mark.parametrize("schedule,team", [((), 3), ((("threads", 1),), 1),
                                            ((("threads", 2),), 2)])
def test_a_parallel_kernel_splits_its_work_over_its_team(schedule, team):
    """The model prices a parallel kernel's work divided by the threads it runs on, so a
    serial kernel (threads 1) is not priced as the parallel one less its region's cost."""
    from matmul_cases import scheduled

    cx = lm.Graph()
    a, b = cx.tensor((256, 256)), cx.tensor((256, 256))
    scheduled(a @ b, list(schedule)).output()
    (w,) = _core.cpu_kernel_work(cx._g, _core.TuningChoice(), {}, 3)
    assert w.team == team and w.parallel == (team > 1)
    (row,) = search_cost.features([w])
    assert row[search_cost.TERMS.index("matmul_cycles")] == pytest.approx(w.matmul_cycles / team)


def test_a_weight_shared_by_the_batch_prices_the_batch_as_rows():
    """A Linear over (b, s, k): the kernel runs b * s rows against B packed once, so the
    model prices it as that 2-D matmul (not b matmuls of s rows, each packing B), and the
    search's pick for 16 x 16 rows packs the weight once instead of taking the GEMV path."""
    from luminal import nn

    def cycles(shape):
        cx = lm.Graph()
        x = cx.tensor(shape)
        (x @ cx.tensor((384, 1536), parameter=True)).output()
        (w,) = _core.cpu_kernel_work(cx._g, _core.TuningChoice(), {})
        return w.matmul_cycles

    assert cycles((16, 16, 384)) == pytest.approx(cycles((256, 384)))
    cx = lm.Graph()
    x = cx.tensor(("b", "s", 384))
    nn.Linear(384, 1536)(x).output()
    cx.build_search_space(lm.CpuRuntime)
    cx.search(lm.CpuRuntime(), 1, cache=False, progress=False)
    program = cx.last_search_report.winner_program
    assert "(pack_b 1)" in program and "gemv_rows" not in program, program


def test_spearman_is_the_textbook_formula_without_ties():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(12), rng.standard_normal(12)
    d = np.argsort(np.argsort(a)) - np.argsort(np.argsort(b))
    want = 1 - 6 * (d ** 2).sum() / (12 * (12 ** 2 - 1))
    assert search_cost.spearman(a, b) == pytest.approx(want)
    assert search_cost.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)


def test_the_nonnegative_fit_recovers_known_constants():
    rng = np.random.default_rng(1)
    rows = np.abs(rng.standard_normal((40, len(search_cost.TERMS)))) * 1e6
    rows[:, 0] = 1.0
    coef = np.array([5e-6, 0, 1e-10, 2e-11, 0, 3e-10, 1e-11, 2e-10])
    model = search_cost.CostModel.fit(rows, rows @ coef)
    np.testing.assert_allclose(model.coef, coef, rtol=1e-6, atol=1e-15)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A model fitted on five of the probe graphs (three candidates each), on this machine,
    with one thread: a parallel region's wake-up on a loaded 2-core machine costs anything
    from microseconds to a scheduler tick, which no model of the kernel can know."""
    rt = lm.CpuRuntime(threads=1, cache_dir=str(tmp_path_factory.mktemp("cc")))
    keep = ("softmax", "mlp", "matmul 128", "gemv", "elementwise")
    graphs = [(n, cx) for n, cx in calibrate.probe_graphs() if n.startswith(keep)]
    model, per_graph = calibrate.calibrate(rt, graphs, programs=3)
    return rt, model, per_graph


def test_the_model_ranks_measured_kernels_above_a_floor(calibrated):
    _, _, per_graph = calibrated
    est = np.concatenate([e for _, e, _ in per_graph])
    sec = np.concatenate([s for _, _, s in per_graph])
    # Kernels whose measured times are over 4x apart: the model orders most such pairs right.
    # A sanity floor, not a quality target: CI's machine ordered 76% of the pairs 2x apart
    # where this one orders 92%; benchmarks/search.py prints the 2x figure and Spearman's.
    assert search_cost.concordance(est, sec, 4.0) >= 0.75
    assert search_cost.spearman(est, sec) > 0.3


def test_a_model_is_stored_and_loaded_per_machine(calibrated, tmp_path):
    rt, model, _ = calibrated
    assert search_cost.load(str(tmp_path), rt) is None
    search_cost.store(str(tmp_path), rt, model)
    loaded = search_cost.load(str(tmp_path), rt)
    np.testing.assert_allclose(loaded.coef, model.coef)
    assert search_cost.load(str(tmp_path), lm.NativeRuntime()) is None


def mlp(cx):
    x = cx.tensor((16, 64), name="x")
    w1, w2 = cx.tensor((64, 96), name="w1"), cx.tensor((96, 32), name="w2")
    return (x, w1, w2), ((x @ w1).relu() @ w2).output()


def check_mlp(rt, cx, ins, y):
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(t.shape).astype(np.float32) for t in ins]
    for t, d in zip(ins, data):
        rt.set_data(t, d)
    rt.execute(cx.dyn_map)
    x, w1, w2 = (torch.from_numpy(d) for d in data)
    assert_close(rt.get(y), torch.relu(x @ w1) @ w2)


def test_budget_one_takes_the_models_pick(calibrated, tmp_path):
    rt, model, _ = calibrated
    cx = lm.Graph()
    ins, y = mlp(cx)
    cx.build_search_space(lm.CpuRuntime)
    dims = {}
    pool = cx._search_space.build(cx, rt.rewrite_rules(), rt._rt).extract(extract.RANK_POOL, dims)
    # budget 1's pool as the search forms it: programs times their tuning choices, in order
    choices = [list(rt._rt.tuning_space(p.graph)) or [_core.TuningChoice()] for p in pool]
    pairs = extract._order(pool, choices, sum(len(c) for c in choices))[:extract.RANK_POOL]
    est = [model.program_seconds(rt._prepare(pool[p], choice), dims, rt)
           for p, choice in pairs]
    out = cx.search(rt, 1, cache_dir=str(tmp_path), cost_model=model)
    pick = cx.last_search_report.candidates[0]
    if pick.rank < len(pool):
        assert pick.estimate == pytest.approx(min(est))
    else:  # the model's combination of the pool's fastest kernels, which it estimates faster
        assert pick.estimate < min(est)
    check_mlp(out, cx, ins, y)


def test_the_report_gives_the_rank_correlation(calibrated, tmp_path):
    rt, model, _ = calibrated
    cx = lm.Graph()
    ins, y = mlp(cx)
    cx.build_search_space(lm.CpuRuntime)
    out = cx.search(rt, 5, cache_dir=str(tmp_path), cost_model=model)
    report = cx.last_search_report
    assert report.kernel_rank_correlation is not None
    assert all(c.estimate is not None for c in report.candidates)
    assert "rank correlation" in str(report)
    check_mlp(out, cx, ins, y)


def test_the_descent_never_retimes_a_program_and_stays_right(tmp_path):
    cx = lm.Graph()
    ins, y = mlp(cx)
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(lm.CpuRuntime(cache_dir=str(tmp_path / "cc")), 3, cache_dir=str(tmp_path),
                   cost_model=None, descent=6, descent_seconds=60)
    report = cx.last_search_report
    assert report.descent, str(report)
    marks = [c.fingerprint for c in report.candidates]
    assert len(marks) == len(set(marks))
    assert report.candidates[report.winner].status == "ok"
    check_mlp(rt, cx, ins, y)
