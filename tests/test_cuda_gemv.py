"""The CUDA GEMV (codegen/cuda/gemv.cc, cuda_matmul 4) and 16-bit weights widened in its
registers (the cuda-widen-cast rule, inline 1 on a bf16 Linear's W.to(f32)), without a GPU:
every variant run through the CPU emulator (tests/cuda_emu.py) against torch on odd shapes
(K and N not multiples of the vector width, M = 1, 2, 3, 7 and symbolic, batched, sliced and
misaligned weights, f32/bf16/f16 weights under f32 activations, half activations), and
compiled by NVRTC for sm_80 and sm_90. The same on a device is in test_cuda_gpu.py."""

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core, cuda
from luminal.graph import GraphTensor

import cuda_emu

TORCH = {lm.float32: torch.float32, lm.float16: torch.float16, lm.bfloat16: torch.bfloat16}
GEMV = {"cuda_matmul": 4}
# Each schedule parameter of the GEMV at a value other than its default.
VARIANTS = {"default": GEMV, "rows1": {**GEMV, "cuda_gemv_rows": 1},
            "rows3": {**GEMV, "cuda_gemv_rows": 3}, "cols1": {**GEMV, "cuda_gemv_cols": 1},
            "cols4": {**GEMV, "cuda_gemv_cols": 4}, "split2": {**GEMV, "cuda_gemv_split": 2},
            "split8_cols4": {**GEMV, "cuda_gemv_split": 8, "cuda_gemv_cols": 4},
            "block64_split4": {**GEMV, "cuda_block": 64, "cuda_gemv_split": 4}}


def _data(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(TORCH[dtype]).float()


def _widened(t):
    """`t`, a Cast of a 16-bit input to f32, with the schedule the cuda-widen-cast rule
    attaches: widened in its readers' registers, no f32 copy."""
    node = t.graph._g.scheduled(t.id, [("inline", 1)])
    return GraphTensor(t.graph, node, t.st, t.dtype)


def linear(m, k, n, wdtype, xdtype=lm.float32, widen=True, lead=(), k_stored=None, dim=None):
    """y = x @ W.T as nn.Linear builds it: W(n, k) cast to x's dtype first, or both cast to
    f32 where x is half and W f32. `m` may be a symbol (its value `dim`); `k_stored` > k: W
    is a slice of a wider matrix (rows aligned, K not a multiple of the vector width); `lead`:
    batch dims of x (W broadcast along them). Returns (graph, feeds, output, reference,
    dyn_map)."""
    compute = lm.float32 if lm.float32 in (xdtype, wdtype) else xdtype
    cx = lm.Graph()
    x = cx.tensor(lead + (m, k), xdtype)
    w = cx.tensor((n, k_stored or k), wdtype)
    operands = []
    for t in (x, w[:, :k] if k_stored else w):
        if t.dtype != compute:
            t = _widened(t.to(compute)) if widen else t.to(compute)
        operands.append(t)
    out = (operands[0] @ operands[1].t()).output()
    dyn_map = {}
    rows = m
    if isinstance(m, str):
        cx.set_dim(m, dim)
        dyn_map = {m: dim}
        rows = dim
    dx = _data(lead + (rows, k), xdtype, 1)
    dw = _data((n, k_stored or k), wdtype, 2)
    ref = dx.double() @ dw[:, :k].double().t()
    if compute != lm.float32:  # a half output: torch's matmul rounds the f32 sum once
        ref = ref.to(TORCH[compute]).double()
    return cx, {x: dx, w: dw}, out, ref, dyn_map


# name: (builder, choice). Shapes: K = 200 and 1000 (rows aligned, a tail past the last whole
# step of 32 lanes), 203 and 70 (rows of W misaligned: element-wise), 203 of a 208-wide W
# (aligned rows, K not a multiple of the vector width); N odd (a last group of one column).
CASES = {}
for wdtype in (lm.float32, lm.bfloat16, lm.float16):
    name = lm.dtype.name(wdtype)
    for m in (1, 2, 3, 7):
        CASES[f"{name}_m{m}_k200_n37"] = (lambda m=m, d=wdtype: linear(m, 200, 37, d), GEMV)
    CASES[f"{name}_m1_k1000_n45"] = (lambda d=wdtype: linear(1, 1000, 45, d), GEMV)
    CASES[f"{name}_m3_k203_n21_misaligned"] = (lambda d=wdtype: linear(3, 203, 21, d), GEMV)
    CASES[f"{name}_m2_k203_sliced"] = (lambda d=wdtype: linear(2, 203, 19, d, k_stored=208),
                                       GEMV)
    CASES[f"{name}_symbolic_m5"] = (lambda d=wdtype: linear("s", 200, 29, d, dim=5), GEMV)
    CASES[f"{name}_symbolic_m11"] = (lambda d=wdtype: linear("s", 72, 13, d, dim=11), GEMV)
    CASES[f"{name}_batched"] = (lambda d=wdtype: linear(3, 96, 17, d, lead=(2,)), GEMV)
for label, choice in VARIANTS.items():
    CASES[f"bf16_m7_k1000_n37_{label}"] = (lambda: linear(7, 1000, 37, lm.bfloat16), choice)
    CASES[f"f32_m3_k70_n33_{label}"] = (lambda: linear(3, 70, 33, lm.float32), choice)
CASES["f32_m2_k80_automatic"] = (lambda: linear(2, 80, 37, lm.float32), {})
CASES["bf16_m3_k80_automatic"] = (lambda: linear(3, 80, 37, lm.bfloat16), {})
CASES["bf16_m3_stored_copy"] = (lambda: linear(3, 96, 37, lm.bfloat16, widen=False), GEMV)
# Half activations with half weights: the product widened to f32 (SumReduce of a Cast).
CASES["bf16_x_bf16_w_m2"] = (lambda: linear(2, 200, 37, lm.bfloat16, lm.bfloat16), GEMV)
CASES["f16_x_f16_w_m1_k203"] = (lambda: linear(1, 203, 21, lm.float16, lm.float16), GEMV)
CASES["f16_x_f32_w_m3"] = (lambda: linear(3, 200, 21, lm.float32, lm.float16), GEMV)
CASES["f16_x_f32_w_m2_misaligned"] = (lambda: linear(2, 70, 21, lm.float32, lm.float16), GEMV)

TOL = {lm.float32: 1e-4, lm.float16: 5e-3, lm.bfloat16: 2e-2}


def _kernels(source):
    return ["/* k" + k for k in source.split("\n/* k")[1:]]


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    if cuda_emu.compiler() is None:
        pytest.skip("no C++ compiler")
    built = {name: make() for name, (make, _) in CASES.items()}
    items = [(built[n][0], CASES[n][1], built[n][4]) for n in CASES]
    emu = cuda_emu.Emulated(items, str(tmp_path_factory.mktemp("emu_gemv")))
    return emu, built


@pytest.mark.parametrize("name", list(CASES))
def test_gemv_matches_torch(name, emulated):
    emu, built = emulated
    cx, feeds, out, ref, _ = built[name]
    (got,) = emu.run(list(CASES).index(name), feeds, [out])
    assert not np.isnan(got).any(), "an output element was never written"
    tol = TOL[out.dtype]
    np.testing.assert_allclose(got.reshape(ref.shape), ref.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", [n for n in CASES if "automatic" not in n])
def test_cases_render_the_gemv(name):
    """Every case runs the GEMV (so the emulated checks cannot pass vacuously), in one kernel
    (and a half result's rounding after it): a widened operand is read as its 16-bit storage,
    no f32 copy of it is written."""
    cx, _, out, _, _ = CASES[name][0]()
    kernels = _kernels(cuda.render(cx, "sm_90", CASES[name][1]))
    gemv = [k for k in kernels if "GEMV:" in k]
    assert len(gemv) == 1, kernels
    if "stored_copy" in name:
        return
    assert len(kernels) == (1 if out.dtype == lm.float32 else 2), kernels
    if "bf16_m" in name or "f16_m" in name:
        assert "lm_bf16_to_f32" in gemv[0] or "lm_f16_to_f32" in gemv[0]


def test_automatic_choice_is_the_gemv_for_few_rows_only():
    """Fewer than 16 constant rows with W contiguous along k: the GEMV; 16 rows, a symbolic
    M, or b strided along k (x @ W with W(k, n)): the other mappings."""
    def kernels(cx):
        return "".join(_kernels(cuda.render(cx, "sm_90")))

    assert "GEMV:" in kernels(linear(15, 64, 8, lm.bfloat16)[0])
    assert "GEMV:" not in kernels(linear(16, 64, 8, lm.bfloat16)[0])
    assert "GEMV:" not in kernels(linear("s", 64, 8, lm.bfloat16, dim=2)[0])
    cx = lm.Graph()
    (cx.tensor((2, 64)) @ cx.tensor((64, 8))).output()
    assert "GEMV:" not in kernels(cx)
    assert "GEMV:" not in "".join(_kernels(cuda.render(cx, "sm_90", GEMV)))


def test_a_bf16_linear_without_the_widening_stores_an_f32_copy():
    """What the lowering does without inline 1 on the Cast, M > 1 (W read through a
    broadcast): a kernel writing W as f32, which the GEMV then reads, twice the bytes."""
    cx, _, _, _, _ = linear(3, 64, 8, lm.bfloat16, widen=False)
    copy, gemv = _kernels(cuda.render(cx, "sm_90"))
    assert "lm_bf16_to_f32" in copy and "float* __restrict__ b2" in copy
    assert "GEMV:" in gemv and "const float* __restrict__ b2" in gemv


def test_the_rules_offer_the_widening_and_the_gemv():
    """A bf16 Linear's search space over the CUDA rules holds a program whose Cast is widened
    in its reader (one kernel: the GEMV reading the bf16 words) and programs scheduling the
    GEMV; every one renders."""
    cx = lm.Graph()
    x = cx.tensor((3, 64))
    w = cx.tensor((40, 64), lm.bfloat16)
    (x @ w.to(lm.float32).t()).output()
    space = _core.SearchSpace(cx._g, cuda.rewrite_rules("sm_90"), _core.RunnerLimits())
    programs = space.extract(12, {})
    texts = [p.text() for p in programs]
    assert any("(schedule (inline 1))" in t for t in texts), texts
    assert any("(schedule (cuda_matmul 4) (cuda_gemv_split 4))" in t for t in texts), texts
    widened = [p for p in programs if "(inline 1)" in p.text()]
    one_kernel = [_kernels(_core.cuda_render(p.graph, "sm_90", _core.TuningChoice()))
                  for p in widened]
    assert any(len(k) == 1 and "GEMV:" in k[0] and "uint16_t" in k[0] for k in one_kernel)


@pytest.mark.parametrize("schedule,message", [
    ([("cuda_matmul", 5)], "cuda_matmul = 5 in node %.* out of range"),
    ([("cuda_gemv_rows", 9)], "cuda_gemv_rows = 9 .* 0 \\(automatic\\) to 8"),
    ([("cuda_gemv_cols", 3)], "cuda_gemv_cols = 3 .* a power of two up to 4"),
    ([("cuda_gemv_split", 16)], "cuda_gemv_split = 16"),
    ([("inline", 2)], "inline = 2"),
])
def test_gemv_schedule_is_checked(schedule, message):
    cx = lm.Graph()
    y = cx.tensor((2, 8)) @ cx.tensor((4, 8)).t()
    GraphTensor(cx, cx._g.scheduled(y.id, schedule), y.st, y.dtype).output()
    with pytest.raises(lm.CompileError, match=message):
        cuda.render(cx, "sm_90")


@pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_every_variant_compiles_with_nvrtc(arch, tmp_path):
    """The cases' kernels, per choice, in one NVRTC translation unit each."""
    by_choice = {}
    for make, choice in CASES.values():
        by_choice.setdefault(tuple(sorted(choice.items())), []).append(make()[0])
    for choice, graphs in by_choice.items():
        src = cuda.codegen_check_batch(graphs, arch, dict(choice), cache_dir=str(tmp_path))
        assert "GEMV:" in src or not choice


# ---- the conformance rows the automatic choice now renders with the GEMV -------------------

def _conformance_rows():
    """(id, graph, feeds, results, expecteds, dyn_map) of the matmul table's rows (and the
    functional table's linear and attention rows) in each variant whose default CUDA render
    holds a GEMV, built as harness.check builds them."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "conformance"))
    import harness
    import test_matmul
    import test_nn_functional

    rows = []
    cases = list(test_matmul.CASES) + [c for c in test_nn_functional.CASES
                                       if c.id.startswith(("linear", "scaled_dot"))]
    for case in cases:
        for variant in harness.VARIANTS:
            specs = harness._inputs(case)
            sym = harness._symbolic_dims(specs)
            if variant not in case.variants or (variant == "symbolic" and sym is None):
                continue
            datas = [harness.make_data(s, i) for i, s in enumerate(specs)]
            cx = lm.Graph()
            tensors, feeds = [], {}
            for spec, data, is_sym in zip(specs, datas, sym[1] if sym else [False] * 9):
                x, view, layout = harness._make_input(cx, spec, variant, is_sym)
                tensors.append(view)
                feeds[x] = harness._feed(data, layout)
            dyn_map = {}
            if variant == "symbolic":
                cx.set_dim("s", sym[0])
                dyn_map = {"s": sym[0]}
            result = case.fn(cx, *tensors) if case.takes_graph else case.fn(*tensors)
            ref = case.ref or case.fn
            expected = ref(torch, *datas) if case.takes_graph else ref(*datas)
            results = result if isinstance(result, (tuple, list)) else (result,)
            expecteds = expected if isinstance(expected, (tuple, list)) else (expected,)
            for r in results:
                r.output()
            if "GEMV:" in cuda.render(cx, "sm_90"):
                tol = (case.rtol or 1e-4, case.atol or 1e-4)
                rows.append((f"{case.id}/{variant}", cx, feeds, results, expecteds, dyn_map,
                             tol))
    return rows


def test_conformance_rows_on_the_gemv_match_torch(tmp_path):
    """The rows whose automatic mapping became the GEMV, run through the emulator."""
    if cuda_emu.compiler() is None:
        pytest.skip("no C++ compiler")
    rows = _conformance_rows()
    assert len(rows) > 10
    emu = cuda_emu.Emulated([(r[1], {}, r[5]) for r in rows], str(tmp_path))
    for i, (name, _, feeds, results, expecteds, _, (rtol, atol)) in enumerate(rows):
        feeds = {t: v.float() if torch.is_tensor(v) else v for t, v in feeds.items()}
        got = emu.run(i, feeds, list(results))
        for g, e in zip(got, expecteds):
            e = torch.as_tensor(e).double().numpy()
            if any(r.dtype != lm.float32 for r in results):
                rtol, atol = max(rtol, 2e-2), max(atol, 2e-2)
            np.testing.assert_allclose(g.reshape(e.shape), e, rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=name)
