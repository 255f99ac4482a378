"""Matmul epilogues (kernel/epilogue.h): elementwise work on a matmul's result (bias, scale,
GELU, SiLU, ReLU, a residual add, SwiGLU's gate product) run inside the matmul's kernel when
its SumReduce is scheduled `epilogue 1`. The rules as this => that, the rules firing on the
graphs nn.Linear and the activations build (symbolic rows too) with the fused program among the
search's candidates, every fused kernel against torch on odd shapes (the C GEMM, the GEMV, a
parameter's panels, bf16 weights widened in registers, batched rows), and the CUDA kernels in
the CPU emulator and through NVRTC."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import luminal as lm
import luminal.nn.functional as F
from luminal import _core, cuda
from luminal.nn import Linear

import cuda_emu
from conftest import CPU_CACHE
from matmul_cases import TORCH, scheduled
from test_runtime_rules import cpu_rule_case, rewrites, saturate, schedule_of

EPILOGUE = [("epilogue", 1)]
CPU_RULES = _core.parse_rules(lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(), "cpu.rules")
CUDA_RULES = _core.parse_rules(cuda.rewrite_rules("sm_90"), "cuda.rules")
EPILOGUE_RULES = [r for r in list(CPU_RULES) + list(CUDA_RULES)
                  if "epilogue" in r.name and "prologue" not in r.name]  # test_prologue's


# ---- the rules as this => that -----------------------------------------------------------

def rule_case(cx, rule):
    """The matmul a rule rewrites: f32, a half matmul's f32 sum of its products, or one whose B
    is a parameter; the bf16 dot products' (of bf16 values) as test_runtime_rules builds them."""
    if "bf16-dot" in rule.name or "bf16-amx" in rule.name:
        return cpu_rule_case(cx, rule.name)
    if "Cast" in rule.text.split("(schedule")[0]:
        a = cx.tensor((5, 7), lm.bfloat16)
        b = cx.tensor((7, 9), lm.bfloat16)
        return (a.unsqueeze(-1) * b.unsqueeze(-3)).to(lm.float32).sum(-2)
    parameter = "parameter" in rule.text
    return cx.tensor((5, 7)) @ cx.tensor((7, 9), parameter=parameter)


def test_epilogue_rules_exist_for_both_runtimes():
    names = [r.name for r in EPILOGUE_RULES]
    assert {"cpu-matmul-epilogue", "cpu-matmul-epilogue-gemv", "cpu-matmul-packed-epilogue",
            "cuda-matmul-epilogue", "cuda-half-matmul-epilogue"} <= set(names)
    assert all(("epilogue", 1) in schedule_of(r) for r in EPILOGUE_RULES)


@pytest.mark.parametrize("name", [r.name for r in EPILOGUE_RULES])
def test_epilogue_rule_this_gives_that(name):
    rule = next(r for r in EPILOGUE_RULES if r.name == name)
    assert rewrites([rule], rule_case(lm.Graph(), rule), schedule_of(rule))


def test_epilogue_rules_skip_reductions_that_are_not_matmuls():
    cx = lm.Graph()
    x = cx.tensor((6, 40))
    (x.sum(-1) + 1).output()
    _, _, report = saturate(cx, EPILOGUE_RULES)
    assert all(r.applied == 0 for r in report.rules)


# ---- graphs with the matmul scheduled by hand: the plan and every kernel against torch ----

ACTIVATIONS = {
    "bias": (lambda y: y, lambda y: y),
    "gelu": (lambda y: y.gelu(), torch.nn.functional.gelu),
    "gelu_tanh": (lambda y: y.gelu("tanh"),
                  lambda y: torch.nn.functional.gelu(y, approximate="tanh")),
    "silu": (lambda y: y.silu(), torch.nn.functional.silu),
    "relu": (lambda y: y.relu(), torch.relu),
    "scale_clamp": (lambda y: (y * 0.5).clamp(-1, 1), lambda y: (y * 0.5).clamp(-1, 1)),
}


def linear_case(m, k, n, act, schedule=EPILOGUE, wdtype=lm.float32, residual=False,
                lead=(), parameter=False, dim=None):
    """act(x @ W.T + b) (+ r) as nn.Linear builds it, its SumReduce scheduled `schedule`; W of
    `wdtype` widened in registers where 16-bit. `m` may be a symbol (value `dim`). Returns
    (graph, feeds, output, reference, dyn_map)."""
    cx = lm.Graph()
    x = cx.tensor(lead + (m, k), name="x")
    w = cx.tensor((n, k), wdtype, name="w", parameter=parameter)
    b = cx.tensor((n,), name="b")
    r = cx.tensor(lead + (m, n), name="r") if residual else None
    wt = w if wdtype == lm.float32 else scheduled(w.to(lm.float32), [("inline", 1)])
    y = scheduled(x @ wt.t(), schedule) if schedule else x @ wt.t()
    z = ACTIVATIONS[act][0](y + b)
    if residual:
        z = z + r
    out = z.output()
    rows = m
    dyn_map = {}
    if isinstance(m, str):
        cx.set_dim(m, dim)
        dyn_map = {m: dim}
        rows = dim
    g = torch.Generator().manual_seed(m if isinstance(m, int) else dim)
    dx = torch.randn(lead + (rows, k), generator=g)
    dw = torch.randn((n, k), generator=g).to(TORCH[wdtype]).float()
    db = torch.randn((n,), generator=g)
    feeds = {x: dx, w: dw, b: db}
    want = ACTIVATIONS[act][1](dx @ dw.t() + db)
    if residual:
        feeds[r] = torch.randn(lead + (rows, n), generator=g)
        want = want + feeds[r]
    return cx, feeds, out, want, dyn_map


def run_cpu(cx, feeds, out, dyn_map):
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute(dyn_map)
    return rt.get(out), rt._rt.program_text(), rt.source


def check(got, want):
    want = want.numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_the_epilogue_runs_in_the_matmul_kernel(act):
    """One kernel for the whole Linear + activation (+ residual), the matmul kernel; the
    default program (no schedule) keeps the sum in a buffer of its own."""
    for residual in (False, True):
        cx, feeds, out, want, dims = linear_case(7, 19, 37, act, residual=residual)
        got, program, source = run_cpu(cx, feeds, out, dims)
        assert program.count("(kernel") == 1 and program.count("(matmul") == 1, program
        assert "lm_er" in source  # the GEMM's epilogue loop
        check(got, want)
        cx, feeds, out, want, dims = linear_case(7, 19, 37, act, schedule=None,
                                                 residual=residual)
        got, program, _ = run_cpu(cx, feeds, out, dims)
        assert program.count("(kernel") >= 2
        check(got, want)


# Odd shapes (M = 1, 2, 3, 7, 33; N and K not multiples of the vector width) under each C
# path: the default GEMM, the GEMV (gemv_rows: M <= 16 takes it), a parameter's panels, another
# block, each with f32 and bf16 weights, batched rows folded into M, and a symbolic M.
PATHS = {"gemm": EPILOGUE, "gemv": EPILOGUE + [("gemv_rows", 16)],
         "packed": EPILOGUE + [("pack_b", 1)],
         "packed_4x24": EPILOGUE + [("pack_b", 1), ("tile_m", 4), ("tile_n", 24),
                                    ("vector_width", 8)],
         "deep_k_2x32": EPILOGUE + [("tile_m", 2), ("tile_n", 32), ("tile_k", 16)]}
CPU_CASES = {}
for path, schedule in PATHS.items():
    for wdtype in (lm.float32, lm.bfloat16):
        wname = lm.dtype.name(wdtype)
        for m in (1, 2, 3, 7, 33):
            CPU_CASES[f"{path}_{wname}_m{m}_gelu"] = dict(
                m=m, k=19, n=37, act="gelu", schedule=schedule, wdtype=wdtype,
                parameter=path.startswith("packed"))
        CPU_CASES[f"{path}_{wname}_m5_silu_residual_k300"] = dict(
            m=5, k=300, n=29, act="silu", schedule=schedule, wdtype=wdtype, residual=True,
            parameter=path.startswith("packed"))
        CPU_CASES[f"{path}_{wname}_batched_relu"] = dict(
            m=3, k=21, n=45, act="relu", schedule=schedule, wdtype=wdtype, lead=(2,),
            residual=True, parameter=path.startswith("packed"))
        CPU_CASES[f"{path}_{wname}_symbolic_m11"] = dict(
            m="s", dim=11, k=17, n=23, act="gelu_tanh", schedule=schedule, wdtype=wdtype,
            parameter=path.startswith("packed"))


@pytest.mark.parametrize("name", list(CPU_CASES))
def test_every_cpu_epilogue_kernel_matches_torch(name):
    cx, feeds, out, want, dims = linear_case(**CPU_CASES[name])
    got, program, source = run_cpu(cx, feeds, out, dims)
    assert program.count("(kernel") == 1, program
    assert "lm_er" in source
    if "gemv" in name and "m33" not in name:  # 33 rows are known to take the GEMM
        assert "if (M <= 16)" in source
    check(got, want)


def test_a_half_output_takes_the_generic_loop_nest():
    """The C GEMM writes f32 over its sum in place; a bf16 result runs the fused kernel as a
    loop nest (still one kernel)."""
    cx = lm.Graph()
    x = cx.tensor((3, 19), name="x")
    w = cx.tensor((37, 19), name="w")
    y = scheduled(x @ w.t(), EPILOGUE)
    out = y.gelu().to(lm.bfloat16).output()
    dx, dw = torch.randn(3, 19), torch.randn(37, 19)
    got, program, source = run_cpu(cx, {x: dx, w: dw}, out, {})
    assert program.count("(kernel") == 1 and "lm_er" not in source
    want = torch.nn.functional.gelu(dx @ dw.t()).to(torch.bfloat16).float()
    np.testing.assert_allclose(got.reshape(want.shape), want.numpy(), rtol=1e-2, atol=1e-2)


def test_swiglu_fuses_the_gate_into_its_matmul_and_stores_the_up_projection():
    """silu(x @ Wg.T) * (x @ Wu.T): the gate's region takes the product, so the up
    projection (whose only reader that region took) is stored."""
    cx = lm.Graph()
    x = cx.tensor((5, 24), name="x")
    wg = cx.tensor((40, 24), name="wg")
    wu = cx.tensor((40, 24), name="wu")
    gate = scheduled(x @ wg.t(), EPILOGUE)
    up = scheduled(x @ wu.t(), EPILOGUE)
    out = (gate.silu() * up).output()
    g = torch.Generator().manual_seed(3)
    feeds = {t: torch.randn(t.shape, generator=g) for t in (x, wg, wu)}
    got, program, _ = run_cpu(cx, feeds, out, {})
    assert program.count("(kernel") == 2 and program.count("(matmul") == 2, program
    want = torch.nn.functional.silu(feeds[x] @ feeds[wg].t()) * (feeds[x] @ feeds[wu].t())
    check(got, want)


def test_a_sum_read_twice_through_a_broadcast_is_stored():
    """An epilogue region reads the sum at its own element only: a reader through a broadcast
    (a row's softmax of the matmul) ends the region."""
    cx = lm.Graph()
    x = cx.tensor((4, 9), name="x")
    w = cx.tensor((9, 11), name="w")
    y = scheduled(x @ w, EPILOGUE)
    out = y.softmax(-1).output()
    dx, dw = torch.randn(4, 9), torch.randn(9, 11)
    got, program, _ = run_cpu(cx, {x: dx, w: dw}, out, {})
    check(got, torch.softmax(dx @ dw, -1))


@st.composite
def graphs_with_epilogues(draw):
    """A matmul scheduled `epilogue 1`, then random elementwise work on it: several readers of
    one node, relu and clamp (stacked pairs), a bias and a residual, a row reduction read
    through a broadcast, and outputs in the middle of the chain."""
    cx = lm.Graph()
    m = draw(st.sampled_from([1, 3, 5]))
    x, w = cx.tensor((m, 6)), cx.tensor((6, 7))
    b, r = cx.tensor((7,)), cx.tensor((m, 7))
    pool = [scheduled(x @ w, EPILOGUE)]
    for _ in range(draw(st.integers(1, 6))):
        a = draw(st.sampled_from(pool[-3:]))
        kind = draw(st.sampled_from(["bias", "residual", "square", "relu", "clamp", "silu",
                                     "exp", "rowsum", "output", "pair"]))
        if kind == "bias":
            pool.append(a + b)
        elif kind == "residual":
            pool.append(a + r)
        elif kind == "square":
            pool.append(a * a * 0.1)
        elif kind == "relu":
            pool.append(a.relu())
        elif kind == "clamp":
            pool.append(a.clamp(-1, 2))
        elif kind == "silu":
            pool.append(a.silu())
        elif kind == "exp":
            pool.append((a * 0.1).exp())
        elif kind == "rowsum":
            pool.append(a - a.sum(-1, keepdim=True) * 0.1)
        elif kind == "output":
            a.output()
        else:
            pool.append(a * pool[-1] * 0.1 + pool[0])
    pool[-1].output()
    return cx


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs_with_epilogues(), st.integers(0, 2 ** 16))
def test_every_epilogue_program_computes_the_graph(cx, seed):
    from luminal.search.check import _run
    from luminal.search.check import random_inputs as _random_inputs

    feeds = _random_inputs(cx._g, {}, seed)
    native = _core.NativeRuntime()
    native.compile(cx._g)
    want = _run(native, cx._g.inputs(), cx._g.outputs(), feeds, {})
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)._rt
    rt.compile(cx._g, _core.TuningChoice())
    got = _run(rt, cx._g.inputs(), cx._g.outputs(), feeds, {})
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g, w_, rtol=1e-4, atol=1e-4, err_msg=rt.program_text())


# ---- the rules on graphs nn builds: the fused program is a candidate of the search -------

def nn_graph(kind, rows):
    torch.manual_seed(0)
    ref = torch.nn.Linear(24, 40)
    cx = lm.Graph()
    x = cx.tensor((2, rows, 24), name="x")
    lin = Linear(24, 40)
    y = lin(x)
    if kind == "gelu":
        y = F.gelu(y)
    elif kind == "silu":
        y = F.silu(y)
    elif kind == "relu":
        y = F.relu(y)
    elif kind == "residual":
        y = y + cx.tensor((2, rows, 40), name="r")
    out = y.output()
    return cx, lin, ref, out


def torch_of(kind, ref, dx, dr):
    y = ref(dx)
    return {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
            "relu": torch.relu}.get(kind, lambda t: t + dr if kind == "residual" else t)(y)


@pytest.mark.parametrize("rows", [3, "s"], ids=["rows3", "symbolic"])
@pytest.mark.parametrize("kind", ["gelu", "silu", "relu", "residual"])
def test_nn_graphs_offer_the_fused_program(kind, rows):
    cx, lin, ref, out = nn_graph(kind, rows)
    dims = {}
    if rows == "s":
        cx.set_dim("s", 7)
        dims = {"s": 7}
    _, _, report = saturate(cx, CPU_RULES)
    applied = {r.name: r.applied for r in report.rules}
    assert applied["cpu-matmul-epilogue"] >= 1
    space = _core.SearchSpace(cx._g, lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(),
                              _core.RunnerLimits())
    candidates = space.extract(64, dims)
    fused = [c for c in candidates if "(schedule (epilogue 1))" in c.text()]
    assert fused, [c.text() for c in candidates]
    prog = fused[0]
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)._rt
    rt.compile(prog.graph, _core.TuningChoice())
    kernels = rt.program_text().count("(kernel")
    assert kernels == 1, rt.program_text()
    n = 7 if rows == "s" else 3
    dx = torch.randn(2, n, 24)
    dr = torch.randn(2, n, 40)
    by_name = {"x": dx, "r": dr, lin.weight.name: ref.weight.detach(),
               lin.bias.name: ref.bias.detach()}
    for node, data in zip(prog.inputs, [by_name[cx._g.node_name(i)] for i in cx._g.inputs()]):
        rt.set_data(node, data.numpy().astype(np.float32), lm.float32)
    rt.execute(dims)
    got = np.asarray(rt.get(prog.outputs[0]))
    check(got, torch_of(kind, ref, dx, dr).detach())


# ---- CUDA: the emulator against torch, NVRTC for sm_80 and sm_90 --------------------------

def half_linear_case(m, k, n, act, dtype=lm.bfloat16):
    """A half Linear (x and W of `dtype`): the f32 sum's Cast back to 16 bits is an epilogue."""
    cx = lm.Graph()
    x = cx.tensor((m, k), dtype, name="x")
    w = cx.tensor((n, k), dtype, name="w")
    b = cx.tensor((n,), dtype, name="b")
    prod = (x.unsqueeze(-2) * w.unsqueeze(-3)).to(lm.float32)
    y = scheduled(prod.sum(-1), EPILOGUE).to(dtype)
    out = ACTIVATIONS[act][0](y + b).output()
    g = torch.Generator().manual_seed(m)
    feeds = {t: torch.randn(t.shape, generator=g).to(TORCH[dtype]).float() for t in (x, w, b)}
    acc = (feeds[x].double() @ feeds[w].double().t()).to(TORCH[dtype]).float()
    want = ACTIVATIONS[act][1](acc + feeds[b])
    return cx, feeds, out, want, {}


CUDA_MAPPINGS = {"reduction": {"cuda_matmul": 1}, "tiled": {"cuda_matmul": 2},
                 "gemv": {"cuda_matmul": 4}, "gemv_split": {"cuda_matmul": 4,
                                                             "cuda_gemv_split": 4},
                 "automatic": {}}
CUDA_CASES = {}
for label, choice in CUDA_MAPPINGS.items():
    for m in (1, 3, 33):
        CUDA_CASES[f"{label}_m{m}_gelu"] = (lambda m=m: linear_case(m, 19, 37, "gelu"), choice)
    CUDA_CASES[f"{label}_bf16_w_silu_residual"] = (
        lambda: linear_case(7, 40, 29, "silu", wdtype=lm.bfloat16, residual=True), choice)
    CUDA_CASES[f"{label}_batched_relu"] = (
        lambda: linear_case(3, 21, 45, "relu", lead=(2,), residual=True), choice)
    CUDA_CASES[f"{label}_symbolic"] = (
        lambda: linear_case("s", 17, 23, "gelu_tanh", dim=5), choice)
for label, choice in {"tensor_cores": {"cuda_matmul": 3}, "tiled": {"cuda_matmul": 2},
                      "gemv": {"cuda_matmul": 4}}.items():
    CUDA_CASES[f"half_{label}_m33_gelu"] = (lambda: half_linear_case(33, 40, 37, "gelu"),
                                            choice)
    CUDA_CASES[f"half_{label}_m2_silu"] = (lambda: half_linear_case(2, 24, 19, "silu"), choice)


def _kernels(source):
    return ["/* k" + k for k in source.split("\n/* k")[1:]]


@pytest.mark.parametrize("name", list(CUDA_CASES))
def test_cuda_epilogue_renders_one_kernel(name):
    make, choice = CUDA_CASES[name]
    cx = make()[0]
    kernels = _kernels(cuda.render(cx, "sm_90", choice))
    assert len(kernels) == 1, kernels


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    if cuda_emu.compiler() is None:
        pytest.skip("no C++ compiler")
    built = {name: make() for name, (make, _) in CUDA_CASES.items()}
    items = [(built[n][0], CUDA_CASES[n][1], built[n][4]) for n in CUDA_CASES]
    emu = cuda_emu.Emulated(items, str(tmp_path_factory.mktemp("emu_epilogue")))
    return emu, built


@pytest.mark.parametrize("name", list(CUDA_CASES))
def test_cuda_epilogue_matches_torch(name, emulated):
    emu, built = emulated
    _, feeds, out, want, _ = built[name]
    (got,) = emu.run(list(CUDA_CASES).index(name), feeds, [out])
    assert not np.isnan(got).any(), "an output element was never written"
    tol = 2e-2 if name.startswith("half") else 1e-4
    scale = max(1.0, float(want.abs().max()))
    np.testing.assert_allclose(got.reshape(want.shape), want.numpy(), rtol=tol,
                               atol=tol * scale)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_cuda_epilogues_compile_with_nvrtc(arch, tmp_path):
    by_choice = {}
    for make, choice in CUDA_CASES.values():
        by_choice.setdefault(tuple(sorted(choice.items())), []).append(make()[0])
    for choice, graphs in by_choice.items():
        cuda.codegen_check_batch(graphs, arch, dict(choice), cache_dir=str(tmp_path))


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.gpu_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", [n for n in CUDA_CASES if "symbolic" not in n])
def test_cuda_epilogue_on_the_device(name):
    make, choice = CUDA_CASES[name]
    cx, feeds, out, want, dims = make()
    rt = lm.CudaRuntime(cache_dir=CPU_CACHE, choice=choice)
    rt._load(cx)
    for t, v in feeds.items():
        rt.set_data(t, v if t.dtype == lm.float32 else v.to(TORCH[t.dtype]))
    rt.execute(dims)
    got = np.asarray(rt.get(out), dtype=np.float32)
    tol = 2e-2 if name.startswith("half") else 1e-3
    scale = max(1.0, float(want.abs().max()))
    np.testing.assert_allclose(got.reshape(want.shape), want.numpy(), rtol=tol,
                               atol=tol * scale)
