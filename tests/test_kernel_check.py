"""The search's check at every size (issue 38): a fault in code every program shares (a
renderer's, planted through the test-only _core._plant_fault) is caught above the
interpreter's size, where the old reference (the runtime running the graph as written) shared
it; a fault only on the far side of a run-time branch (the GEMM of a matmul whose GEMV takes
few rows) is caught at the second binding of the symbols; the kernel-by-kernel check passes
right programs of many shapes, which match torch; a cache hit is re-checked kernel by kernel
at any size."""

import numpy as np
import pytest
import torch

import luminal as lm
from conftest import assert_close
from luminal import _core
from luminal.errors import CompileError
from luminal.search import check as search_check
from luminal.nn import functional as F
from luminal.nn.sdpa import scaled_dot_product_attention
from matmul_cases import scheduled
from test_attention_fusion import attention_program


@pytest.fixture
def planted():
    """Plants a fault for one test and always takes it out."""
    yield _core._plant_fault
    _core._plant_fault("")


def norm_matmul(rows=512, width=512, out=256):
    """RMS-norm-like rows (a Sqrt) then a matmul: 1.4e8 elements of work, above the
    interpreter's AUTO_NATIVE_WORK."""
    cx = lm.Graph()
    x = cx.tensor((rows, width), name="x")
    w = cx.tensor((width, out), name="w")
    y = ((x / (x * x).mean(-1, keepdim=True).sqrt()) @ w).output()
    assert _core.graph_work(cx._g, {}) > search_check.AUTO_NATIVE_WORK
    return cx, x, w, y


@pytest.mark.parametrize("reference", ["auto", "runtime"])
def test_a_fault_every_program_shares_is_caught_above_the_interpreters_size(tmp_path, planted,
                                                                           reference):
    """Kernel by kernel (auto above the interpreter's size), every candidate fails and so does
    the graph as written; against the runtime running the graph as written, that program
    fails its own kernel check first. Either way a CompileError, never a wrong program."""
    planted("Sqrt")
    cx, *_ = norm_matmul()
    cx.build_search_space(lm.CpuRuntime)
    with pytest.raises(CompileError, match="runs this graph wrongly.*kernel"):
        cx.search(lm.CpuRuntime(cache_dir=str(tmp_path)), 2, cache=False, progress=False,
                  reference=reference)
    report = cx.last_search_report
    assert any(w.startswith("the graph as written on cpu") for w in report.wrong_rules)
    assert "kernel by kernel" in report.reference
    assert report.candidates and all(c.status == "wrong" for c in report.candidates)
    assert all("kernel" in c.detail for c in report.candidates)


def test_without_the_fault_the_big_graph_passes_and_matches_torch(tmp_path):
    cx, x, w, y = norm_matmul()
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(lm.CpuRuntime(cache_dir=str(tmp_path)), 2, cache=False, progress=False)
    report = cx.last_search_report
    assert "kernel by kernel" in report.reference, str(report)
    assert all(c.status == "ok" for c in report.candidates), str(report)
    assert not report.wrong_rules
    xt, wt = torch.randn(512, 512), torch.randn(512, 256)
    rt.set_data(x, xt)
    rt.set_data(w, wt)
    rt.execute(cx.dyn_map)
    want = (xt / (xt * xt).mean(-1, keepdim=True).sqrt()) @ wt
    assert_close(rt.get(y), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("reference", ["native", "kernels"])
def test_a_fault_only_above_gemv_rows_is_caught_at_the_second_binding(tmp_path, planted,
                                                                      reference):
    planted("gemm")
    cx = lm.Graph()
    x = cx.tensor(("m", 64), name="x")
    w = cx.tensor((48, 64), name="w")
    scheduled(x @ w.t(), [("gemv_rows", 8)]).output()
    cx.set_dim("m", 1)  # a decode step: the GEMV path, which has no fault
    cx.build_search_space(lm.CpuRuntime)
    cx.search(lm.CpuRuntime(cache_dir=str(tmp_path)), 6, cache=False, progress=False,
              reference=reference)
    report = cx.last_search_report
    gemv = [c for c in report.candidates if "gemv_rows" in c.choice]
    assert gemv, str(report)
    rows = search_check.SECOND_ROWS
    # The sets past the ordinary one are checked as the pick reaches a candidate: each GEMV
    # candidate it reached failed there, and the one it took passed every set.
    if report.winner is not None:
        winner = report.candidates[report.winner]
        assert "gemv_rows" not in winner.choice and not winner.deferred, str(report)
    assert any(c.status == "wrong" for c in gemv), str(report)
    for c in gemv:
        assert c.deferred or (c.status == "wrong" and
                              c.failed_set.startswith(f"ordinary at m={rows}")), str(report)
    assert f"ordinary at m={rows}" in " ".join(report.check_sets)


def test_second_dims_take_both_sides_of_a_row_branch():
    cx = lm.Graph()
    x, cache = cx.tensor(("s", 8), name="x"), cx.tensor(("p", 8), name="cache")
    (x.sum(0) + cache.sum(0)).output()
    rows = search_check.SECOND_ROWS
    assert search_check.second_dims(cx._g, {"s": 1, "p": 256}) == {"s": rows, "p": 1}
    assert search_check.second_dims(cx._g, {"s": 128, "p": 0}) == {"s": 1, "p": rows}
    assert rows > 16  # the most gemv_rows a schedule may take
    # A whole row tile and a remainder for every tile_m of the rules (cpu_tiles_*.rules).
    assert all(rows > m and rows % m for m in (4, 6, 8, 12, 14, 16))


def table_rows(max_positions=32):
    """x (s, 8) times the rows p .. p+s of a fixed table of max_positions rows (RoPE's cos
    table read at the chunk's positions): s + p <= max_positions is all the graph can take."""
    cx = lm.Graph()
    x = cx.tensor(("s", 8), name="x")
    table = cx.tensor((max_positions, 8), name="table")
    p = lm.Expr("p")
    y = (x * table.slice_axis(0, p, p + x.st.dims[0])).output()
    return cx, x, table, y


def test_the_second_binding_stays_inside_what_the_graph_can_take():
    cx, *_ = table_rows(16)  # fewer rows than SECOND_ROWS
    assert search_check.second_dims(cx._g, {"s": 1, "p": 15}) == {"s": 15, "p": 1}
    assert "table" in _core.view_overrun(cx._g, {"s": 16, "p": 1})
    assert _core.view_overrun(cx._g, {"s": 15, "p": 1}) == ""


@pytest.mark.parametrize("runtime", [lm.NativeRuntime, lm.CpuRuntime])
def test_running_past_a_fixed_table_is_a_shape_error_naming_it(runtime, tmp_path):
    cx, x, table, y = table_rows(32)
    cx.set_dim("s", 4)
    cx.set_dim("p", 2)
    kwargs = {"cache_dir": str(tmp_path)} if runtime is lm.CpuRuntime else {}
    rt = cx.search(runtime(**kwargs), 1, cache=False, progress=False)
    xs, ts = torch.randn(4, 8), torch.randn(32, 8)
    rt.set_data(x, xs)
    rt.set_data(table, ts)
    rt.execute({"s": 4, "p": 28})  # the last rows: inside
    assert_close(rt.get(y), xs * ts[28:32])
    with pytest.raises(lm.ShapeError, match=r"execute: .*outside.*input 'table'.*p = 29, s = 4"):
        rt.execute({"s": 4, "p": 29})


def test_a_search_at_dims_the_graph_cannot_take_is_a_shape_error():
    cx, *_ = table_rows(32)
    cx.set_dim("s", 40)
    cx.set_dim("p", 0)
    with pytest.raises(lm.ShapeError, match=r"search: .*outside.*'table'.*set_dim"):
        cx.search(lm.NativeRuntime(), 1, cache=False, progress=False)


S = 9  # the symbol's value in these graphs


def attention(cx):
    shape = (2, "s", 16)
    q, k, v = (cx.tensor(shape, name=n) for n in "qkv")
    out = scaled_dot_product_attention(q, k, v, is_causal=True)
    return [(t, (2, S, 16)) for t in (q, k, v)], out


def embedding_mlp(cx):
    ids = cx.tensor(("s",), lm.int32, name="ids")
    table = cx.tensor((50, 32), name="table")
    w = cx.tensor((32, 24), name="w")
    h = F.embedding(ids, table)
    return [(ids, (S,)), (table, (50, 32)), (w, (32, 24))], (h @ w).gelu().softmax(-1)


def layer_norm_scan(cx):
    x = cx.tensor(("s", 40), name="x")
    return [(x, (S, 40))], F.layer_norm(x, (40,)).cumsum(-1)[..., 3:17].amax(-1)


@pytest.mark.parametrize("build", [attention, embedding_mlp, layer_norm_scan],
                         ids=lambda f: f.__name__)
def test_the_kernel_check_passes_right_programs_which_match_torch(tmp_path, build):
    """Kernel by kernel on several shapes of graph: no false alarm, and the winner computes
    what torch does."""
    cx = lm.Graph()
    inputs, out = build(cx)
    out = out.output()
    cx.set_dim("s", S)
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(lm.CpuRuntime(cache_dir=str(tmp_path)), 4, cache=False, progress=False,
                   reference="kernels")
    report = cx.last_search_report
    assert report.candidates and all(c.status == "ok" for c in report.candidates), str(report)
    # The winner against torch, on the same graph built over torch tensors.
    rng = np.random.default_rng(1)
    data = {}
    for t, shape in inputs:
        values = rng.integers(0, 50, size=shape).astype(np.int32) if t.dtype == lm.int32 \
            else rng.standard_normal(shape).astype(np.float32)
        rt.set_data(t, values)
        data[id(t)] = torch.from_numpy(values)
    rt.execute(cx.dyn_map)
    assert_close(rt.get(out), TORCH[build.__name__](*[data[id(t)] for t, _ in inputs]),
                 rtol=1e-4, atol=1e-4)


TORCH = {
    "attention": lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True),
    "embedding_mlp": lambda ids, table, w: torch.softmax(
        torch.nn.functional.gelu(table[ids.long()] @ w), -1),
    "layer_norm_scan": lambda x: torch.nn.functional.layer_norm(x, (40,)).cumsum(-1)[
        ..., 3:17].amax(-1),
}


def test_a_cache_hit_is_rechecked_kernel_by_kernel_at_any_size(tmp_path, planted, capfd):
    cx, *_ = norm_matmul(rows=256)
    cx.build_search_space(lm.CpuRuntime)
    rt_dir = str(tmp_path / "cc")
    cx.search(lm.CpuRuntime(cache_dir=rt_dir), 1, cache_dir=str(tmp_path), progress=False)
    cx.search(lm.CpuRuntime(cache_dir=rt_dir), 1, cache_dir=str(tmp_path), progress=False)
    hit = cx.last_search_report
    assert hit.cache_hit and "recheck" in hit.phases
    planted("Sqrt")  # the cached program now compiles to a wrong one, as does every other
    with pytest.raises(CompileError):
        cx.search(lm.CpuRuntime(cache_dir=rt_dir), 1, cache_dir=str(tmp_path),
                  progress=False)
    assert not cx.last_search_report.cache_hit
    assert "failed its re-check" in capfd.readouterr().err


def test_a_wrong_rewrite_is_caught_at_its_kernel_against_the_graph_as_written(tmp_path):
    """Kernel by kernel, a program computing its own (rewritten) graph faithfully is still
    wrong where a rewrite changed what a class computes: each kernel's output is compared
    with the graph as written's formula for its class, from the same operands. Exp2 hoisted
    through a zero padding reads exp2(0) = 1 where the graph reads 0."""
    from test_egraph_opt_in import WrongHoistCpu

    cx = lm.Graph()
    x = cx.tensor((4, 6), name="x")
    y = (x.pad_zeros((1, 1)).exp2() * 2.0).output()
    cx.build_search_space(WrongHoistCpu)
    rt = cx.search(WrongHoistCpu(cache_dir=str(tmp_path)), 6, cache=False, progress=False,
                   reference="kernels")
    report = cx.last_search_report
    assert "each kernel's class against the graph as written" in report.reference
    wrong = [c for c in report.candidates if c.status == "wrong"]
    assert wrong and all("against the graph as written" in c.detail for c in wrong), str(report)
    assert report.candidates[report.winner].status == "ok"
    xs = torch.rand(4, 6) + 0.5
    rt.set_data(x, xs)
    rt.execute(cx.dyn_map)
    assert_close(rt.get(y), torch.nn.functional.pad(xs, (1, 1)).exp2() * 2.0)


def test_original_nodes_map_a_candidate_onto_the_graph_as_written():
    """Inputs and outputs by position; every other node mapped to a node of the graph as
    written of its e-class, which holds a tensor of the same shape and dtype."""
    cx = lm.Graph()
    x = cx.tensor((8, 8), name="x")
    (x.exp2() * 2.0).sum(-1).output()
    cx.build_search_space(lm.CpuRuntime)
    core = cx._search_space.build(cx, lm.CpuRuntime().rewrite_rules())
    candidate = core.extract(1, {})[0]
    original = core.original_nodes(candidate)
    g, c = cx._g, candidate.graph
    assert [original[i] for i in candidate.inputs] == list(g.inputs())
    assert [original[o] for o in candidate.outputs] == list(g.outputs())
    mapped = [(node, orig) for node, orig in enumerate(original) if orig >= 0]
    assert len(mapped) > len(candidate.inputs) + len(candidate.outputs)
    for node, orig in mapped:
        assert g.node_shape(orig) == c.node_shape(node)
        assert g.node_dtype(orig) == c.node_dtype(node)


def test_a_candidate_past_the_race_limit_is_stopped_and_never_picked(tmp_path, monkeypatch):
    """A candidate whose checking run has taken longer than timing.lost_after allows (here
    any time at all, once one candidate is timed) is stopped after the kernel that passed
    it: "lost", with its seconds so far, neither timed nor checked on the other sets, and
    never the winner, which is checked on every set and matches torch."""
    from luminal.search import timing

    monkeypatch.setattr(timing, "LOST_FLOOR", 0.0)
    monkeypatch.setattr(timing, "LOST_MARGIN", 1e-9)
    cx, x, w, y = norm_matmul()
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(lm.CpuRuntime(cache_dir=str(tmp_path)), 4, cache=False, progress=False)
    report = cx.last_search_report
    lost = [c for c in report.candidates if c.status == "lost"]
    assert lost and all("stopped after 1 kernels" in c.detail and c.seconds > 0
                        and not c.deferred for c in lost), str(report)
    # Not stopped: the first, and a program of one kernel (nothing runs after its first).
    winner = report.candidates[report.winner]
    assert winner.status == "ok" and not winner.deferred, str(report)
    xt, wt = torch.randn(512, 512), torch.randn(512, 256)
    rt.set_data(x, xt)
    rt.set_data(w, wt)
    rt.execute(cx.dyn_map)
    assert_close(rt.get(y), (xt / (xt * xt).mean(-1, keepdim=True).sqrt()) @ wt,
                 rtol=1e-4, atol=1e-4)


def set_check_inputs(rt, cx) -> list:
    """The ordinary check set of seed 0 set on ``rt`` (loaded with ``cx``); returns it as
    check_kernels' (node, data, dtype) triples."""
    inputs = search_check.random_inputs(cx._g, {}, 0)
    triples = [(n, data, dtype) for n, (dtype, data) in zip(cx._g.inputs(), inputs)]
    for n, data, dtype in triples:
        rt._rt.set_data(n, data, dtype)
    return triples


def test_the_kernel_check_stops_past_its_time_limit():
    """check_kernels with stop_after_seconds stops after the first kernel past it; without,
    every kernel runs; either way it reports the kernels' seconds."""
    cx, x, w, y = norm_matmul()
    rt = lm.CpuRuntime()
    rt._load(cx)
    triples = set_check_inputs(rt, cx)
    whole = rt._rt.check_kernels({}, triples, 4, 1, 1 << 16, 0)
    assert not whole["stopped"] and len(whole["kernels"]) > 1 and whole["kernel_seconds"] > 0
    cut = rt._rt.check_kernels({}, triples, 4, 1, 1 << 16, 0, stop_after_seconds=1e-12)
    assert cut["stopped"] and len(cut["kernels"]) == 1 and cut["kernel_seconds"] > 0


def test_without_repeats_each_code_runs_once_and_the_rest_stand_in():
    """check_kernels with run_repeats off (the second binding's and the extra sets') runs a
    kernel whose code ran before in the program (a stack of identical layers) not at all:
    no samples, its output finite stand-ins that the next layer's first kernel is checked
    on; every kernel of new code runs and is sampled as before (a fault in it shows there:
    test_a_fault_only_above_gemv_rows_is_caught_at_the_second_binding)."""
    cx = lm.Graph()
    h = cx.tensor((8, 64), name="x")
    for i in range(3):
        w = cx.tensor((64, 64), name=f"w{i}")
        h = (h @ w).relu() + h
    y = h.output()
    rt = lm.CpuRuntime()
    rt._load(cx)
    triples = set_check_inputs(rt, cx)
    whole = rt._rt.check_kernels({}, triples, 4, 1, 1 << 20, 0)
    once = rt._rt.check_kernels({}, triples, 4, 1, 1 << 20, 0, run_repeats=False)
    kernels = len(whole["kernels"])
    assert whole["skipped"] == 0 and kernels >= 3 and kernels % 3 == 0
    assert once["skipped"] == kernels - kernels // 3 and len(once["kernels"]) == kernels
    for kernel, _, _, elements, got, want, problem, _ in once["kernels"]:
        assert not problem, problem
        assert bool(elements) == (kernel < kernels // 3), kernel
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    out = np.asarray(rt.get(y))  # the last layer's: stand-ins
    assert np.all(np.isfinite(out)) and np.all(np.abs(out) >= 0.5)


def test_the_samples_of_an_attention_cost_about_their_scores():
    """One sampled row of a fused attention over 512 keys costs its 512 scores of 64 products
    each, not that for every key it reads: the cheap elements under the scores (a bias, a
    scale) are recomputed, not memoized, so they cannot push the scores out of the memo."""
    s, d = 512, 64
    cx = lm.Graph()
    q, k, v = (cx.tensor((1, 2, s, d), name=n) for n in "qkv")
    bias = cx.tensor((d,), name="bias")
    y = scaled_dot_product_attention(q + bias, k * 0.5, v).output()
    rt = lm.CpuRuntime()
    rt._load(cx, attention_program(cx))
    assert "(attention rows=" in rt._rt.program_text()
    triples = set_check_inputs(rt, cx)
    report = rt._rt.check_kernels({}, triples, 4, 1, 1 << 30, 0)
    for kernel, _, _, elements, got, want, problem, _ in report["kernels"]:
        assert not problem and elements, (kernel, problem)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # 4 samples of about a row of scores each (4 steps per product: the bias, the scale, the
    # product, the sum) and the softmax's passes: 1.1e6 steps, under this bound of twice as
    # many; the memo that kept every element thrashed and took more
    assert 0 < report["steps"] < 4 * s * d * 4 * 4, report["steps"]
