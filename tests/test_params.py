"""Parameters: graph inputs constant across executions (cx.tensor(..., parameter=True), every
nn.Parameter), kept through the search's rewrites and its cache; and CpuRuntime laying a
parameter that a GEMM reads out once, when its data is set, as the panels the kernel's tile
wants (schedule pack_b, codegen/c/matmul.h PackedPanels) in its storage dtype. Against torch on
odd shapes (K and N not multiples of the vector width or the tile, M = 1, 2, 3, 7, 64 through
one symbolic M); re-setting re-packs; inputs that are not parameters are never packed ahead."""

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core, nn

from conftest import CpuRuntime
from matmul_cases import TILE_N, WEIGHTS, WIDTH, check, scheduled, weights

ROWS = (1, 2, 3, 7, 64)


def linear(k, n, wdtype, parameter=True, schedule=(("pack_b", 1),)):
    """y = x @ W.T for x (m, k), m symbolic, and W (n, k) of `wdtype` (a 16-bit W widened in the
    matmul's registers), the matmul under `schedule`."""
    cx = lm.Graph()
    x = cx.tensor(("m", k), name="x")
    w = cx.tensor((n, k), wdtype, "w", parameter=parameter)
    wf = w if wdtype == lm.float32 else scheduled(w.to(lm.float32), [("inline", 1)])
    y = scheduled(x @ wf.t(), list(schedule))
    return cx, x, w, y.output()


def run_rows(rt, x, y, wt, rows=ROWS):
    for m in rows:
        xt = torch.randn(m, wt.shape[1])
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(y), xt.double() @ wt.double().T)


def panel_bytes(k, n, width, element):
    return -(-n // width) * width * k * element


def test_a_parameter_is_marked_in_the_graph_and_its_text():
    cx = lm.Graph()
    w = cx.tensor((3, 4), name="w", parameter=True)
    x = cx.tensor((2, 3), name="x")
    assert w.is_parameter and not x.is_parameter
    assert "parameter" in cx._g.node_to_string(w.id)
    assert "parameter" not in cx._g.node_to_string(x.id)
    (x @ w).output()
    text = _core.identity_program(cx._g).text()
    assert "(Input 0 ({3} {4}) f32 parameter)" in text and "(Input 1 ({2} {3}) f32)" in text
    back = _core.parse_program(text, cx._g)
    assert back.graph.node_parameter(back.inputs[0]) and not back.graph.node_parameter(
        back.inputs[1])


def test_a_parameter_survives_the_search_rewrites():
    cx = lm.Graph()
    x = cx.tensor((5, 7), name="x")
    w = cx.tensor((9, 7), name="w", parameter=True)
    (x @ w.t()).exp().output()
    cx.build_search_space(lm.CpuRuntime)
    space = cx._search_space.build(cx, CpuRuntime().rewrite_rules())
    for p in space.extract(4, {}):
        flags = [p.graph.node_parameter(i) for i in p.inputs]
        assert flags == [False, True]


def test_module_weights_are_parameters():
    cx = lm.Graph()
    lin = nn.Linear(6, 4)
    emb = nn.Embedding(10, 6)
    ids = cx.tensor((3,), lm.int32, "ids")
    lin(emb(ids)).output()
    assert lin.weight.bound_in(cx).is_parameter and emb.weight.bound_in(cx).is_parameter
    assert not ids.is_parameter


@pytest.mark.parametrize("wdtype", WEIGHTS, ids=str)
@pytest.mark.parametrize("k,n", [(5, 13), (37, 33), (130, 7), (64, 48), (600, 19)])
def test_packed_gemm_matches_torch_for_every_m(k, n, wdtype):
    """The panels are laid out once at set_data, in the weight's dtype, and serve every M."""
    cx, x, w, y = linear(k, n, wdtype)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_panels" in rt.source and f"lm_mm_1x{TILE_N}_v{WIDTH}" in rt.source
    wt = weights((n, k), wdtype)
    rt.set_data(w, wt)
    element = 4 if wdtype == lm.float32 else 2
    assert rt.memory()["packed_input_bytes"] == panel_bytes(k, n, TILE_N, element)
    assert rt.memory()["owned_input_bytes"] == 0
    run_rows(rt, x, y, wt)


@pytest.mark.parametrize("wdtype", [lm.float32, lm.bfloat16], ids=str)
def test_other_tiles_pack_to_their_width(wdtype):
    k, n = 45, 50
    cx, x, w, y = linear(k, n, wdtype, schedule=(("tile_m", 4), ("tile_n", 24),
                                                 ("vector_width", 8), ("pack_b", 1)))
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_mm_4x24_v8" in rt.source and "lm_panels" in rt.source
    wt = weights((n, k), wdtype, seed=3)
    rt.set_data(w, wt)
    element = 4 if wdtype == lm.float32 else 2
    assert rt.memory()["packed_input_bytes"] == panel_bytes(k, n, 24, element)
    run_rows(rt, x, y, wt, rows=(1, 3, 5, 9))


def test_a_weight_not_transposed_packs_too():
    """B (k, n) read along n (a weight stored as in x @ W), with a batch folded into the rows."""
    cx = lm.Graph()
    x = cx.tensor((2, "m", 19), name="x")
    w = cx.tensor((19, 21), name="w", parameter=True)
    y = scheduled(x @ w, [("pack_b", 1)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_panels" in rt.source
    wt = weights((19, 21), lm.float32)
    rt.set_data(w, wt)
    for m in (1, 7):
        xt = torch.randn(2, m, 19)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(y), xt.double() @ wt.double())


def test_setting_a_parameter_again_repacks_it():
    cx, x, w, y = linear(37, 33, lm.bfloat16)
    rt = CpuRuntime()
    rt._load(cx)
    for seed in (1, 2):
        wt = weights((33, 37), lm.bfloat16, seed=seed)
        rt.set_storage(w, wt.view(torch.int16).numpy().view(np.uint16))
        run_rows(rt, x, y, wt, rows=(1, 7))


def test_a_parameter_is_read_when_set_and_lets_its_array_go():
    """The panels replace the caller's array: changing the array afterwards changes nothing,
    and the runtime holds no reference to it."""
    import sys

    cx, x, w, y = linear(20, 17, lm.float32)
    rt = CpuRuntime()
    rt._load(cx)
    array = weights((17, 20), lm.float32).numpy().copy()
    refs = sys.getrefcount(array)
    rt.set_data(w, array)
    assert sys.getrefcount(array) == refs
    assert rt.memory()["borrowed_input_bytes"] == 0
    want = torch.from_numpy(array.copy())
    array[:] = 0
    run_rows(rt, x, y, want, rows=(3,))


def test_an_input_that_is_not_a_parameter_is_never_packed_and_is_read_fresh():
    """pack_b on a matmul whose B changes per call: the kernel packs B itself on every call,
    so a borrowed array changed in place between executes is read anew."""
    cx, x, w, y = linear(37, 33, lm.float32, parameter=False)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_panels" not in rt.source
    array = weights((33, 37), lm.float32).numpy().copy()
    rt.set_data(w, array)
    assert rt.memory()["packed_input_bytes"] == 0
    xt = torch.randn(7, 37)
    rt.set_data(x, xt)
    for scale in (1.0, -3.0):
        array *= scale
        rt.execute({"m": 7})
        check(rt.get(y), xt.double() @ torch.from_numpy(array).double().T)


def test_a_parameter_read_in_place_by_another_kernel_is_not_packed():
    """One resident layout per weight: W read as panels and as itself (a sum here) stays as
    it is, and the GEMM packs it per call."""
    cx, x, w, y = linear(21, 18, lm.float32)
    s = w.sum(-1).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_panels" not in rt.source
    wt = weights((18, 21), lm.float32)
    rt.set_data(w, wt)
    assert rt.memory()["packed_input_bytes"] == 0
    run_rows(rt, x, y, wt, rows=(2,))
    check(rt.get(s), wt.double().sum(-1))


def test_the_gemv_path_reads_a_parameter_in_place():
    """A kernel that takes the GEMV path for few rows (gemv_rows) reads W where it lies: the
    borrowed array, no panels."""
    cx, x, w, y = linear(40, 24, lm.float32, schedule=(("gemv_rows", 8),))
    rt = CpuRuntime()
    rt._load(cx)
    wt = weights((24, 40), lm.float32)
    rt.set_data(w, wt.numpy())
    assert rt.memory()["packed_input_bytes"] == 0
    assert rt.memory()["borrowed_input_bytes"] == wt.numel() * 4
    run_rows(rt, x, y, wt, rows=(1, 9))


@pytest.mark.parametrize("cache", [False, True], ids=["searched", "cache-hit"])
def test_a_parameter_set_before_the_search_is_still_set_after_it(cache, tmp_path):
    """The search packs its own check data into each candidate's panels; the runtime it hands
    back has the user's parameter data set again, packed for the winner's layout (searched or
    loaded from the cache), while an ordinary input set before the search must be set again:
    execute raises until it is, never runs on the check data."""
    cx = lm.Graph()
    x = cx.tensor(("m", 70), name="x")
    w = cx.tensor((45, 70), lm.bfloat16, "w", parameter=True)
    y = (x @ w.to(lm.float32).t()).output()
    cx.set_dim("m", 9)
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(CpuRuntime(), 1, cache=False)
    wt = weights((45, 70), lm.bfloat16)
    rt.set_data(w, wt)
    rt.set_data(x, torch.randn(9, 70))
    if cache:
        cx.search(CpuRuntime(), 12, cache_dir=str(tmp_path))
    rt = cx.search(rt, 12, cache=cache, cache_dir=str(tmp_path))
    report = cx.last_search_report
    if not cache:
        assert any("pack_b=1" in c.choice for c in report.candidates), str(report)
        assert not any(c.status == "wrong" for c in report.candidates), str(report)
    else:
        assert report.cache_hit, str(report)
    with pytest.raises(lm.LuminalError, match="x"):
        rt.execute({"m": 9})
    run_rows(rt, x, y, wt, rows=(1, 9, 64))


@pytest.mark.parametrize("wdtype", [lm.float32, lm.bfloat16], ids=str)
@pytest.mark.parametrize("parameter", [False, True])
def test_packing_is_offered_only_where_b_is_a_parameter(parameter, wdtype):
    """The packed rules' condition (parameter ?b): a weight, or a Cast widening one."""
    rules = [r for r in _core.parse_rules(CpuRuntime().rewrite_rules(), "cpu.rules")
             if r.name.startswith("cpu-matmul-packed") and "prologue" not in r.name]
    assert len(rules) == 4  # two tilings, each also with the epilogue (kernel/epilogue.h)
    cx = lm.Graph()
    x = cx.tensor((5, 7), name="x")
    w = cx.tensor((9, 7), wdtype, "w", parameter=parameter)
    (x @ w.to(lm.float32).t()).output()
    g = _core.EGraph()
    g.add_graph(cx._g)
    report = g.run(rules, _core.RunnerLimits())
    assert all((r.applied > 0) == parameter for r in report.rules)


@pytest.mark.parametrize("runtime", [lm.NativeRuntime, CpuRuntime], ids=lambda r: r.__name__)
def test_a_parameter_set_before_the_search_from_data_the_caller_keeps_is_set_after_it(runtime):
    """Set from an array the caller still holds (a model's weights), on a runtime that copies
    its inputs (NativeRuntime) or borrows them (CpuRuntime); on CpuRuntime also from a
    temporary, which the runtime itself borrowed."""
    cx, x, w, y = linear(20, 17, lm.float32)
    cx.set_dim("m", 3)
    cx.build_search_space(runtime)
    rt = cx.search(runtime(), 1, cache=False)
    wt = weights((17, 20), lm.float32)
    rt.set_data(w, wt)
    if runtime is CpuRuntime:
        rt.set_data(w, wt.clone())
    rt = cx.search(rt, 3, cache=False)
    run_rows(rt, x, y, wt, rows=(1, 3))


@pytest.mark.parametrize("threads", [1, 3, 8])
@pytest.mark.parametrize("wdtype", WEIGHTS, ids=str)
def test_panels_laid_out_by_several_threads_match_torch(threads, wdtype):
    """A weight's panels are laid out by the runtime's threads, each a range of (k block, panel):
    more threads than panels of a block, a split that is not even, and a last k block and panel
    of their own sizes (K 300 in blocks of 128, N 70 in panels of TILE_N) read by every M."""
    cx, x, w, y = linear(300, 70, wdtype, schedule=(("pack_b", 1), ("tile_k", 128)))
    rt = CpuRuntime(threads=threads)
    rt._load(cx)
    wt = weights((70, 300), wdtype, seed=threads)
    rt.set_data(w, wt)
    assert rt.memory()["packed_input_bytes"] > 0
    run_rows(rt, x, y, wt)
