"""Decode-shaped matmuls on the CPU: the GEMV path (codegen/c/gemv.cc, schedule gemv_rows)
and 16-bit weights widened inside the matmul kernels (a Cast scheduled inline 1: the GEMV
widens in registers, the GEMM packs from the 16-bit storage), against torch on odd shapes
(K and N not multiples of the vector width, K below it, M = 1, 2, 3, 7 and above gemv_rows),
with symbolic M (one compiled program, several M), batched and transposed operands; the
search timing GEMV against GEMM; and the arena keeping no f32 copy of a widened weight."""

import numpy as np
import pytest
import torch

import luminal as lm

from conftest import CpuRuntime
from matmul_cases import WEIGHTS, check, scheduled, weights


def as_f32(w, widen=True):
    """w read as f32 by a matmul: as is, or a Cast widened in the kernel (inline 1) or stored."""
    if w.dtype == lm.float32:
        return w
    f = w.to(lm.float32)
    return scheduled(f, [("inline", 1)]) if widen else f


def linear(k, n, wdtype, gemv_rows=8, widen=True, x_transposed=False):
    """y = x @ W.T for x (m, k) with m symbolic and W (n, k) of `wdtype`."""
    cx = lm.Graph()
    x = cx.tensor((k, "m")).t() if x_transposed else cx.tensor(("m", k))
    w = cx.tensor((n, k), wdtype)
    y = x @ as_f32(w, widen).t()
    if gemv_rows:
        y = scheduled(y, [("gemv_rows", gemv_rows)])
    return cx, x, w, y.output()


def check_rows(rt, x, y, w, wt, ms, dim="m"):
    """With W's data `wt` set, y = x @ W.T for x of each row count m in `ms` (one compiled
    program, several values of the symbolic dim), against torch."""
    rt.set_data(w, wt)
    k = wt.shape[-1]
    for m in ms:
        xt = torch.randn(m, k)
        rt.set_data(x, xt)
        rt.execute({dim: m})
        check(rt.get(y), xt.double() @ wt.double().T)


@pytest.mark.parametrize("wdtype", WEIGHTS, ids=str)
@pytest.mark.parametrize("k,n", [(5, 13), (37, 33), (64, 1), (130, 7), (300, 70)])
def test_gemv_matches_torch_for_every_m(k, n, wdtype):
    """One program for every M: GEMV up to gemv_rows (8), GEMM above it (300 x 70: two k
    blocks and two panels, the second's columns a partial vector)."""
    cx, x, w, y = linear(k, n, wdtype)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_gemv_4x2" in rt.source and "if (M <= 8)" in rt.source
    check_rows(rt, x, y, w, weights((n, k), wdtype), (1, 2, 3, 7, 8, 9, 20))


@pytest.mark.parametrize("wdtype", [lm.bfloat16, lm.float16], ids=str)
def test_widened_gemm_packs_from_16_bit_storage(wdtype):
    """Without the GEMV path the GEMM reads the 16-bit weight as it packs it: W (n, k) read
    transposed, a stream along k per column."""
    cx, x, w, y = linear(37, 29, wdtype, gemv_rows=0)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_gemv" not in rt.source
    assert "lm_mm_pack_t_" + str(wdtype).split(".")[-1].lower() in rt.source
    check_rows(rt, x, y, w, weights((29, 37), wdtype), (1, 7, 13))


@pytest.mark.parametrize("width", [8, 4, 16])
def test_f16_widening_keeps_subnormals_infinities_and_nans(width):
    """The GEMV's vector f16 widening (F16C where compiled for it at 8 lanes, else exponent
    arithmetic) against torch's conversion."""
    k = 2 * width
    cx = lm.Graph()
    x = cx.tensor(("m", k))
    w = cx.tensor((4, k), lm.float16)
    schedule = [("gemv_rows", 8), ("vector_width", width), ("tile_n", 16)]
    y = scheduled(x @ as_f32(w).t(), schedule).output()
    values = [6e-8, 1e-7, 3e-5, -6e-8, 65504.0, -0.0, 1e-4, -2.0]
    wt = torch.tensor(values * (4 * k // len(values)), dtype=torch.float16).reshape(4, k)
    wt[1, 3] = float("inf")
    wt[2, 1] = float("nan")
    wt[3, k - 1] = float("-inf")
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_load_f16_v{width}" in rt.source
    rt.set_data(w, wt)
    xt = torch.full((1, k), 0.5)
    rt.set_data(x, xt)
    rt.execute({"m": 1})
    check(rt.get(y), xt.double() @ wt.double().T)


@pytest.mark.parametrize("wdtype", WEIGHTS, ids=str)
def test_gemv_copies_rows_of_a_transposed_x(wdtype):
    """x read through a transpose (not contiguous along k) is copied once per thread."""
    cx, x, w, y = linear(21, 10, wdtype, x_transposed=True)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_row[kk] = A[i * am + kk * ak]" in rt.source
    wt = weights((10, 21), wdtype)
    rt.set_data(w, wt)
    for m in (1, 3, 11):
        xt = torch.randn(21, m)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(y), xt.double().T @ wt.double().T)


def test_gemv_declines_a_weight_strided_along_k():
    """x @ W with W (k, n): b_k = n, so the kernel is the GEMM alone."""
    cx = lm.Graph()
    x = cx.tensor(("m", 19))
    w = cx.tensor((19, 23))
    y = scheduled(x @ w, [("gemv_rows", 8)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_gemv" not in rt.source and "lm_mm_" in rt.source
    wt = torch.randn(19, 23)
    rt.set_data(w, wt)
    for m in (1, 5):
        xt = torch.randn(m, 19)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(y), xt.double() @ wt.double())


@pytest.mark.parametrize("m,gemv", [(12, False), (8, True)])
def test_a_constant_m_renders_only_the_path_it_takes(m, gemv):
    cx = lm.Graph()
    x = cx.tensor((m, 10))
    w = cx.tensor((6, 10), lm.bfloat16)
    y = scheduled(x @ as_f32(w).t(), [("gemv_rows", 8)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert ("lm_gemv" in rt.source) == gemv
    wt, xt = weights((6, 10), lm.bfloat16), torch.randn(m, 10)
    rt.set_data(w, wt)
    rt.set_data(x, xt)
    rt.execute()
    check(rt.get(y), xt.double() @ wt.double().T)


@pytest.mark.parametrize("wdtype", WEIGHTS, ids=str)
def test_batched_gemv_matches_torch(wdtype):
    """Attention's scores in decode: per batch q (m, k) @ K(n, k).T, K contiguous along k."""
    cx = lm.Graph()
    q = cx.tensor((3, "m", 20))
    kv = cx.tensor((3, 17, 20), wdtype)
    y = scheduled(q @ as_f32(kv).transpose(1, 2), [("gemv_rows", 4)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "const int64_t lm_batches = 3;" in rt.source and "lm_gemv" in rt.source
    kt = weights((3, 17, 20), wdtype)
    rt.set_data(kv, kt)
    for m in (1, 3, 6):
        qt = torch.randn(3, m, 20)
        rt.set_data(q, qt)
        rt.execute({"m": m})
        check(rt.get(y), qt.double() @ kt.double().transpose(1, 2))


def test_linear_over_a_batch_folds_it_into_the_gemv_rows():
    """(batch, m, k) @ W.T with one W: batch * m rows of one GEMV (W read once)."""
    cx = lm.Graph()
    x = cx.tensor((2, "m", 24))
    w = cx.tensor((9, 24), lm.bfloat16)
    y = scheduled(x @ as_f32(w).t(), [("gemv_rows", 8)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "const int64_t lm_batches = 1;" in rt.source
    wt = weights((9, 24), lm.bfloat16)
    rt.set_data(w, wt)
    for m in (1, 3, 5):  # 2, 6 (GEMV) and 10 (GEMM) rows
        xt = torch.randn(2, m, 24)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(y), xt.double() @ wt.double().T)


@pytest.mark.parametrize("adtype", [lm.bfloat16, lm.float16], ids=str)
@pytest.mark.parametrize("b_rows", [False, True], ids=["b_kn", "b_nk"])
def test_a_widened_left_operand_takes_the_matmul_kernels(adtype, b_rows):
    """A 16-bit a (the operand moving along m: activations a model rounds to bf16 and stores)
    is widened by the C matmul: the GEMV as it copies a's rows (B's rows along k), the GEMM
    from a widened copy of a (past gemv_rows, or B (k, n)). Before, such a kernel ran as the
    generic loop nest: a 1B model's tied head took 35 ms a step where the GEMV takes 19."""
    cx = lm.Graph()
    a = cx.tensor(("m", 37), adtype)
    b = cx.tensor((29, 37) if b_rows else (37, 29))
    y = scheduled(as_f32(a) @ (b.t() if b_rows else b), [("gemv_rows", 8)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_xa" in rt.source and ("lm_gemv" in rt.source) == b_rows
    bt = torch.randn(29, 37) if b_rows else torch.randn(37, 29)
    rt.set_data(b, bt)
    for m in (1, 3, 20):
        at = weights((m, 37), adtype, seed=m)
        rt.set_data(a, at)
        rt.execute({"m": m})
        check(rt.get(y), at.double() @ (bt.double().T if b_rows else bt.double()))


def test_a_widened_left_operand_under_batch_loops_renders_the_generic_loop_nest():
    """A batched matmul whose B differs per batch runs the GEMM per batch, which has no
    widened copy of a: the loop nest computes it."""
    cx = lm.Graph()
    a = cx.tensor((2, "m", 12), lm.bfloat16)
    b = cx.tensor((2, 12, 10))
    y = scheduled(as_f32(a) @ b, [("gemv_rows", 8)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_gemv" not in rt.source and "lm_mm_" not in rt.source
    at, bt = weights((2, 3, 12), lm.bfloat16), torch.randn(2, 12, 10)
    rt.set_data(a, at)
    rt.set_data(b, bt)
    rt.execute({"m": 3})
    check(rt.get(y), at.double() @ bt.double())


def test_arena_holds_no_f32_copy_of_a_weight_widened_in_the_kernel():
    n, k = 96, 64
    copies = {}
    for widen in (False, True):
        cx, x, w, y = linear(k, n, lm.bfloat16, widen=widen)
        rt = CpuRuntime()
        rt._load(cx)
        check_rows(rt, x, y, w, weights((n, k), lm.bfloat16), (2,))
        copies[widen] = rt._rt.arena_bytes
    assert copies[False] >= n * k * 4  # the stored Cast: an f32 copy of W
    assert copies[True] < n * k * 4


def decode_step(k=256, n=384):
    """A Linear of a bf16 weight, as nn.Linear builds it, at decode shape (one token)."""
    cx = lm.Graph()
    x = cx.tensor(("s", k))
    w = cx.tensor((n, k), lm.bfloat16)
    y = (x @ w.to(lm.float32).t()).output()
    cx.set_dim("s", 1)
    return cx, x, w, y


def test_cost_models_pick_streams_the_16_bit_weight():
    """Budget 1 (the cost model's pick, codegen/c/schedule.cc CpuKernelCost) at decode shape:
    the GEMV path, the weight widened in its registers, no f32 copy in the arena."""
    cx, x, w, y = decode_step()
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(CpuRuntime(), 1, cache=False, progress=False)
    report = cx.last_search_report
    assert "(gemv_rows 16)" in report.winner_program
    assert "(Cast f32" in report.winner_program and "(inline 1)" in report.winner_program
    assert rt._rt.arena_bytes == 0
    check_rows(rt, x, y, w, weights((384, 256), lm.bfloat16), (1,), dim="s")


def test_search_times_gemv_against_gemm_and_keeps_a_correct_one(tmp_path):
    cx, x, w, y = decode_step()
    cx.build_search_space(lm.CpuRuntime)
    # 11: the epilogue schedules (cpu-matmul-epilogue*) come before the tilings in the order of
    # the search's candidates.
    rt = cx.search(CpuRuntime(), 11, cache_dir=str(tmp_path), progress=False)
    report = cx.last_search_report
    labels = [c.choice for c in report.candidates]
    assert any("gemv_rows=16" in c for c in labels), labels
    assert any("tile_m=" in c and "gemv_rows" not in c for c in labels), labels
    assert all(c.status == "ok" for c in report.candidates), str(report)
    assert report.winner is not None
    check_rows(rt, x, y, w, weights((384, 256), lm.bfloat16), (1, 4, 12), dim="s")


@pytest.mark.parametrize("schedule,message", [
    ([("gemv_rows", 17)], "gemv_rows must be at most 16"),
    ([("gemv_rows", -1)], "out of range"),
])
def test_cpu_runtime_refuses_bad_gemv_rows(schedule, message):
    cx, x, w, y = linear(8, 8, lm.float32, gemv_rows=0)
    scheduled(x @ w.t(), schedule).output()
    with pytest.raises(lm.CompileError, match=message):
        CpuRuntime()._load(cx)


def test_every_layer_of_a_deep_model_gets_the_gemv():
    """Extraction sums tree costs, which count the residual stream once per path (three
    paths a layer here): 32 layers deep they dwarf one kernel's cost. The cost model's pick must still take the GEMV (the
    cheaper alternative over the same children) in every layer, not only the first few, and
    the program must compute what torch does."""
    layers, dim = 32, 16
    cx = lm.Graph()
    x = cx.tensor((1, dim), name="x")
    ws = [cx.tensor((dim, dim), name=f"w{i}") for i in range(layers)]
    h = x
    for w in ws:
        h = h + (h @ w.t()) * 0.1 + h * 0.01
    h.output()
    rt = cx.search(CpuRuntime(), 1, cache=False)
    assert cx.last_search_report.winner_program.count("gemv_rows") == layers
    rng = np.random.default_rng(0)
    xd = rng.standard_normal((1, dim)).astype(np.float32)
    wd = [rng.standard_normal((dim, dim)).astype(np.float32) for _ in range(layers)]
    rt.set_data(x, xd)
    for w, d in zip(ws, wd):
        rt.set_data(w, d)
    rt.execute(cx.dyn_map)
    want = torch.from_numpy(xd)
    for d in wd:
        want = want + (want @ torch.from_numpy(d).T) * 0.1 + want * 0.01
    np.testing.assert_allclose(rt.get(h), want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("gemv_rows", [0, 16])
@pytest.mark.parametrize("m,k,n", [(20, 8, 0), (3, 8, 0), (0, 8, 5), (20, 0, 5), (3, 0, 5)])
def test_matmul_with_an_empty_dim_matches_torch(m, k, n, gemv_rows):
    """Empty dims (attention over zero cached keys: N = 0) give an empty or zero result on
    either path, never a division by zero."""
    cx = lm.Graph()
    x = cx.tensor(("m", "k"))
    w = cx.tensor(("n", "k"))
    y = x @ w.t()
    if gemv_rows:
        y = scheduled(y, [("gemv_rows", gemv_rows)])
    y = y.output()
    rt = CpuRuntime()
    rt._load(cx)
    xt, wt = torch.randn(m, k), torch.randn(n, k)
    rt.set_data(x, xt)
    rt.set_data(w, wt)
    rt.execute({"m": m, "k": k, "n": n})
    got = rt.get(y)
    assert got.shape == (m, n)
    check(got, xt @ wt.T)
