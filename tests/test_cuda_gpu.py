"""The CUDA runtime on a real GPU (marked gpu; skipped without one): the conformance tables
under every mapping of the CUDA renderer and in f16/bf16 against torch, large matmuls and
GEMVs on tensor cores, the search timing every schedule of the CUDA rules, symbolic dims
replayed without recompiling, deterministic replays.
(The tables' default mapping in f32 runs through the `runtime` fixture, see conftest.py.)"""

import glob
import importlib
import os
import sys

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import cuda

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "conformance"))
import harness  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda.gpu_available(), reason="no CUDA GPU")]

CHOICES = [{"cuda_reduce": 1}, {"cuda_reduce": 2}, {"cuda_reduce": 2, "cuda_vector": 1},
           {"cuda_reduce": 3},
           {"cuda_matmul": 2}, {"cuda_matmul": 3}]
HALF_TOL = {lm.bfloat16: 6e-2, lm.float16: 1.5e-2}
# Rows ill-conditioned in half precision (checked on the NativeRuntime: they miss the
# tolerance there too): trig of wide arguments, tan near its poles, gelu's far tail.
HALF_ILL_CONDITIONED = {"sin[wide]", "cos[wide]", "tan", "tan[wide]", "tan[near_pole]",
                        "gelu[wide]"}
TORCH = {lm.bfloat16: torch.bfloat16, lm.float16: torch.float16}


def _cases(variants=tuple(harness.VARIANTS)):
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "conformance", "test_*.py"))):
        module = importlib.import_module(os.path.splitext(os.path.basename(path))[0])
        for case in getattr(module, "CASES", []):
            for variant in variants:
                if variant in case.variants:
                    out.append(pytest.param(case, variant, id=f"{case.id}-{variant}"))
    return out


CASES = _cases()
# The mappings and half precision do not change how views are read: fewer variants for them.
CASES_CONTIG = _cases(("contig",))
CASES_MAPPING = _cases(("contig", "symbolic"))


def run_case(case, variant, runtime, half=None, seed=0, choice=None):
    """harness.check with any runtime instance and optionally the graph in half precision
    (inputs rounded to it first, so torch sees the same values). Returns (got, want) pairs."""
    specs = harness._inputs(case)
    datas = [harness.make_data(s, seed + i) for i, s in enumerate(specs)]
    if half is not None:
        datas = [d.to(TORCH[half]).float() if d.is_floating_point() else d for d in datas]
    sym = harness._symbolic_dims(specs)
    if variant == "symbolic" and sym is None:
        pytest.skip("no leading dim")
    cx = lm.Graph()
    tensors, feeds = [], {}
    for spec, data, is_sym in zip(specs, datas, sym[1] if sym else [False] * len(specs)):
        x, view, layout = harness._make_input(cx, spec, variant, is_sym)
        tensors.append(view)
        feeds[x] = harness._feed(data, layout)
    if variant == "symbolic":
        cx.set_dim("s", sym[0])
    result = case.fn(cx, *tensors) if case.takes_graph else case.fn(*tensors)
    results = result if isinstance(result, (tuple, list)) else (result,)
    for r in results:
        r.output()
    if half is not None:
        lm.to_half(cx, half, tensors=[list(feeds), list(results)])
    if choice is not None and cuda.render(cx, "sm_90", choice) == cuda.render(cx, "sm_90"):
        pytest.skip(f"{choice} renders this graph as the default does")
    ref = case.ref or case.fn
    expected = ref(torch, *datas) if case.takes_graph else ref(*datas)
    expecteds = expected if isinstance(expected, (tuple, list)) else (expected,)
    rt = cx.search(runtime, 1)
    for x, value in feeds.items():
        rt.set_data(x, value)
    rt.execute(cx.dyn_map)
    return [(rt.get(r), torch.as_tensor(e)) for r, e in zip(results, expecteds)]


def _compare(pairs, rtol, atol, what):
    for got, want in pairs:
        want = want.double().numpy()
        assert got.shape == want.shape, what
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)


@pytest.mark.parametrize("choice", CHOICES, ids=str)
@pytest.mark.parametrize("case,variant", CASES_MAPPING)
def test_conformance_under_each_mapping(case, variant, choice):
    pairs = run_case(case, variant, lm.CudaRuntime(choice=choice), choice=choice)
    _compare(pairs, 1e-4, 1e-4, f"{case.id}/{variant} {choice}")


@pytest.mark.parametrize("half", [lm.bfloat16, lm.float16], ids=lm.dtype.name)
@pytest.mark.parametrize("case,variant", CASES_CONTIG)
def test_conformance_in_half(case, variant, half):
    if case.id in HALF_ILL_CONDITIONED:
        pytest.skip(f"{case.id} is ill-conditioned in half precision")
    pairs = run_case(case, variant, lm.CudaRuntime(), half=half)
    for _, want in pairs:
        w = want.double()
        if w.is_floating_point() and (not torch.isfinite(w).all() or w.abs().max() > 6e4):
            pytest.skip("the f32 reference leaves the f16 range (inf, nan or > 6e4)")
    tol = HALF_TOL[half]
    _compare(pairs, tol, tol, f"{case.id}/{variant} {lm.dtype.name(half)}")


@pytest.mark.parametrize("choice", [{}, {"cuda_matmul": 3}, {"cuda_matmul": 2}], ids=str)
@pytest.mark.parametrize("m,k,n,bt", [(512, 384, 256, False), (300, 200, 136, True),
                                      (1, 4096, 1024, True), (64, 72, 80, False)])
def test_bf16_matmul_matches_torch(m, k, n, bt, choice):
    g = torch.Generator().manual_seed(m + k + n)
    a = torch.randn(m, k, generator=g).bfloat16()
    b = torch.randn(n, k, generator=g).bfloat16() if bt else torch.randn(k, n, generator=g)
    b = b.bfloat16()
    cx = lm.Graph()
    ta, tb = cx.tensor((m, k), lm.bfloat16), cx.tensor(tuple(b.shape), lm.bfloat16)
    out = (ta @ (tb.transpose(0, 1) if bt else tb)).output()
    rt = cx.search(lm.CudaRuntime(choice=choice), 1)
    rt.set_data(ta, a)
    rt.set_data(tb, b)
    rt.execute()
    want = (a.float() @ (b.float().t() if bt else b.float()))
    got = rt.get(out)
    err = np.linalg.norm(got - want.numpy()) / np.linalg.norm(want.numpy())
    assert err < 1e-2, f"relative error {err}"


def test_search_times_each_rule_schedule():
    """The search over the CUDA rules (csrc/runtime/rules/cuda*.rules) compiles, checks and
    times a program per schedule; every one agrees with the reference, the winner with torch."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, 512, generator=g).bfloat16()
    a = torch.randn(128, 256, generator=g).bfloat16()
    b = torch.randn(256, 192, generator=g).bfloat16()
    cx = lm.Graph()
    tx, ta, tb = (cx.tensor(tuple(t.shape), lm.bfloat16) for t in (x, a, b))
    e = (tx - tx.amax(-1, keepdim=True)).exp()
    soft = (e / e.sum(-1, keepdim=True)).output()
    mm = (ta @ tb).output()
    cx.build_search_space(lm.CudaRuntime)
    rt = cx.search(lm.CudaRuntime(), 16)
    report = cx.last_search_report
    labels = " ".join(c.choice for c in report.candidates)
    for s in ("cuda_reduce=1", "cuda_reduce=2", "cuda_reduce=3", "cuda_vector=1",
              "cuda_matmul=1", "cuda_matmul=2", "cuda_matmul=3"):
        assert s in labels, str(report)
    assert all(c.status == "ok" for c in report.candidates), str(report)
    for t, v in ((tx, x), (ta, a), (tb, b)):
        rt.set_data(t, v)
    rt.execute()
    want = torch.softmax(x.float(), -1)
    np.testing.assert_allclose(rt.get(soft), want.numpy(), rtol=6e-2, atol=1e-2)
    want = a.float() @ b.float()
    err = np.linalg.norm(rt.get(mm) - want.numpy()) / np.linalg.norm(want.numpy())
    assert err < 1e-2, f"relative error {err}"


def test_symbolic_dims_replay_without_recompiling():
    cx = lm.Graph()
    x = cx.tensor(("s", 64))
    w = cx.tensor((64, 32))
    out = ((x @ w).exp().sum(-1)).output()
    rt = cx.search(lm.CudaRuntime(), 1)
    source = rt.source
    wd = torch.randn(64, 32) * 0.1
    rt.set_data(w, wd)
    for s in (3, 17, 1, 40):
        xd = torch.randn(s, 64)
        cx.set_dim("s", s)
        rt.set_data(x, xd)
        rt.execute(cx.dyn_map)
        np.testing.assert_allclose(rt.get(out), (xd @ wd).exp().sum(-1).numpy(), rtol=1e-4,
                                   atol=1e-4)
    assert rt.source == source


def test_replays_are_deterministic():
    cx = lm.Graph()
    x = cx.tensor((256, 1024), lm.bfloat16)
    out = (x.exp().sum(-1) + x.sum(-1)).output()
    rt = cx.search(lm.CudaRuntime(), 1)
    rt.set_data(x, torch.randn(256, 1024))
    rt.execute()
    first = rt.get(out).copy()
    for _ in range(3):
        rt.execute()
        assert np.array_equal(rt.get(out), first)


def test_errors_on_the_device():
    with pytest.raises(lm.DeviceError, match="device 99"):
        lm.CudaRuntime(device=99)
    cx = lm.Graph()
    x = cx.tensor((4,))
    out = (x * 2).output()
    rt = cx.search(lm.CudaRuntime(), 1)
    with pytest.raises(lm.ShapeError, match="no data"):
        rt.execute()
    rt.set_data(x, [1.0, 2.0, 3.0, 4.0])
    rt.execute()
    assert rt.get(out).tolist() == [2.0, 4.0, 6.0, 8.0]


def test_copy_bandwidth_and_benchmark_run():
    rt = lm.CudaRuntime()
    kernel, memcpy = rt.copy_bandwidth(64 << 20, 3)
    assert kernel > 10 and memcpy > 10  # GB/s: any real GPU does far more
    cx = lm.Graph()
    x = cx.tensor((1024, 1024))
    (x * 2).output()
    rt = cx.search(rt, 1)
    rt.set_data(x, np.ones((1024, 1024), np.float32))
    assert 0 < rt.benchmark(10) < 100


# ---- the GEMV and 16-bit weights (tests/test_cuda_gemv.py's cases, on the device) ---------

import test_cuda_gemv  # noqa: E402


@pytest.mark.parametrize("name", list(test_cuda_gemv.CASES))
def test_gemv_cases_match_torch(name):
    make, choice = test_cuda_gemv.CASES[name]
    cx, feeds, out, ref, dyn_map = make()
    rt = cx.search(lm.CudaRuntime(choice=choice), 1)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute(dyn_map)
    tol = test_cuda_gemv.TOL[out.dtype]
    np.testing.assert_allclose(rt.get(out).reshape(ref.shape), ref.numpy(), rtol=tol, atol=tol)


def test_bf16_linear_reads_its_weight_as_16_bits():
    """The model's pick for a decode-shaped bf16 Linear (M = 3: W read through a broadcast):
    one kernel, the GEMV reading the bf16 words; the search times GEMV candidates too."""
    cx = lm.Graph()
    x = cx.tensor((3, 2048))
    w = cx.tensor((4096, 2048), lm.bfloat16)
    out = (x @ w.to(lm.float32).t()).output()
    g = torch.Generator().manual_seed(3)
    dx, dw = torch.randn(3, 2048, generator=g), torch.randn(4096, 2048, generator=g).bfloat16()
    rt = cx.search(lm.CudaRuntime(), 1)
    kernels = rt.source.split("\n/* k")[1:]
    assert len(kernels) == 1 and "GEMV:" in kernels[0] and "uint16_t" in kernels[0]
    cx.build_search_space(lm.CudaRuntime)
    rt = cx.search(lm.CudaRuntime(), 8)
    report = cx.last_search_report
    assert "cuda_matmul=4" in " ".join(c.choice for c in report.candidates), str(report)
    assert all(c.status == "ok" for c in report.candidates), str(report)
    rt.set_data(x, dx)
    rt.set_data(w, dw)
    rt.execute()
    want = dx.double() @ dw.double().t()
    np.testing.assert_allclose(rt.get(out), want.numpy(), rtol=1e-3, atol=1e-3)


def test_search_skips_duplicates_and_checks_every_set():
    """The search on the GPU: candidates distinct by their CUDA source, each checked on every
    set (large magnitudes included), the winner right on the inputs that break a softmax
    without its max."""
    cx = lm.Graph()
    x = cx.tensor((64, 256), name="x")
    y = x.softmax(-1).output()
    rt = cx.search(lm.CudaRuntime(), 8, cache=False)
    report = cx.last_search_report
    marks = [c.fingerprint for c in report.candidates]
    assert len(marks) == len(set(marks)), str(report)
    assert "large" in report.check_sets and "exp2 edge" in report.check_sets, str(report)
    assert all(c.status == "ok" for c in report.candidates), str(report)
    data = np.random.default_rng(0).uniform(80, 120, size=(64, 256)).astype(np.float32)
    rt.set_data(x, data)
    rt.execute()
    want = torch.softmax(torch.from_numpy(data), -1).numpy()
    np.testing.assert_allclose(rt.get(y), want, rtol=1e-4, atol=1e-6)
