"""Matmul prologues (kernel/prologue.h): a norm before a Linear (RMSNorm, LayerNorm) computed in
the matmul's kernel when its SumReduce is scheduled `prologue 1`, each row's statistics once per
row and its elements as the GEMM packs A (or into the GEMV's copy of x), so the norm's output is
never stored. The rules as this => that, the rules firing on the graphs nn.RMSNorm, nn.LayerNorm
and F.layer_norm build with a Linear (symbolic rows too), the search space holding the fused
and the unfused program, every fused kernel against torch on odd shapes and large values, and
a search's pick against torch."""

import numpy as np
import pytest
import torch

import luminal as lm
import luminal.nn.functional as F
from luminal import _core
from luminal.nn import LayerNorm, Linear, Module, RMSNorm

from conftest import CPU_CACHE
from matmul_cases import scheduled
from test_runtime_rules import rewrites, saturate, schedule_of

PROLOGUE = [("prologue", 1)]
CPU_RULES = _core.parse_rules(lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(), "cpu.rules")
PROLOGUE_RULES = [r for r in CPU_RULES if "prologue" in r.name]


def norm(kind, x, g, b):
    """The norm as hl_ops builds it, on x's last dim (g, b the affine weights)."""
    k = x.shape[-1]
    if kind == "rms":
        return F.rms_norm(x, (k,), g, eps=1e-6)
    return F.layer_norm(x, (k,), g, b, eps=1e-5)


def torch_norm(kind, x, g, b):
    k = x.shape[-1]
    if kind == "rms":
        return torch.nn.functional.rms_norm(x, (k,), g, eps=1e-6)
    return torch.nn.functional.layer_norm(x, (k,), g, b, eps=1e-5)


# ---- the rules as this => that -----------------------------------------------------------

def test_prologue_rules_exist():
    names = {r.name for r in PROLOGUE_RULES}
    assert names == {"cpu-matmul-prologue", "cpu-matmul-prologue-gemv",
                     "cpu-matmul-packed-prologue", "cpu-matmul-prologue-epilogue"}
    assert all(("prologue", 1) in schedule_of(r) for r in PROLOGUE_RULES)


@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("name", sorted(r.name for r in PROLOGUE_RULES))
def test_prologue_rule_this_gives_that(name, kind):
    rule = next(r for r in PROLOGUE_RULES if r.name == name)
    cx = lm.Graph()
    x, g, b = cx.tensor((5, 16)), cx.tensor((16,)), cx.tensor((16,))
    w = cx.tensor((9, 16), parameter="packed" in name)
    assert rewrites([rule], norm(kind, x, g, b) @ w.t(), schedule_of(rule))


@pytest.mark.parametrize("build", ["plain", "scaled", "row_sum_of_b"])
def test_prologue_rules_skip_matmuls_without_a_row_statistic(build):
    """A plain A, one scaled by a constant, and a statistic of B's rows (read along k: B's
    column sums are not A's rows) are no prologue."""
    cx = lm.Graph()
    x, w = cx.tensor((5, 16)), cx.tensor((16, 9))
    if build == "scaled":
        x = x * 0.5
    if build == "row_sum_of_b":
        w = w * w.sum(0, keepdim=True)
    (x @ w).output()
    _, _, report = saturate(cx, PROLOGUE_RULES)
    assert all(r.applied == 0 for r in report.rules)


# ---- every fused kernel against torch ----------------------------------------------------

def norm_linear_case(kind, m, k, n, schedule=PROLOGUE, lead=(), scale=100.0, parameter=False,
                     dim=None):
    """norm(x) @ W.T with the matmul scheduled `schedule`; `m` may be a symbol (value `dim`).
    Returns (graph, feeds, output, reference, dyn_map)."""
    cx = lm.Graph()
    x = cx.tensor(lead + (m, k), name="x")
    g, b = cx.tensor((k,), name="g"), cx.tensor((k,), name="b")
    w = cx.tensor((n, k), name="w", parameter=parameter)
    y = norm(kind, x, g, b) @ w.t()
    out = (scheduled(y, schedule) if schedule else y).output()
    rows, dyn_map = m, {}
    if isinstance(m, str):
        cx.set_dim(m, dim)
        rows, dyn_map = dim, {m: dim}
    gen = torch.Generator().manual_seed(rows * 31 + k)
    dx = torch.randn(lead + (rows, k), generator=gen) * scale + scale / 4
    dg, db = torch.randn(k, generator=gen), torch.randn(k, generator=gen)
    dw = torch.randn(n, k, generator=gen)
    feeds = {x: dx, g: dg, b: db, w: dw}
    want = torch_norm(kind, dx.double(), dg.double(), db.double()) @ dw.double().t()
    return cx, feeds, out, want.float(), dyn_map


def run_cpu(cx, feeds, out, dyn_map, program=None):
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, program)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute(dyn_map)
    return np.asarray(rt.get(out)), rt._rt.program_text(), rt.source


def check(got, want):
    """Within f32 rounding of a K-term dot product of unit-scale rows, relative to the result."""
    want = want.numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-4 * scale)


# Odd shapes under each C path: M not a multiple of the block (1, 5, 13, 33), K an odd multiple
# of 8 (40; 328: two k blocks of the default 256), N odd, |x| ~ 100; batched rows folded into M,
# a symbolic M; the default GEMM, the GEMV (M <= 16), a parameter's panels, other blocks.
PATHS = {"gemm": PROLOGUE, "gemv": PROLOGUE + [("gemv_rows", 16)],
         "packed": PROLOGUE + [("pack_b", 1)],
         "packed_4x24": PROLOGUE + [("pack_b", 1), ("tile_m", 4), ("tile_n", 24)],
         "deep_k_2x32": PROLOGUE + [("tile_m", 2), ("tile_n", 32), ("tile_k", 16)]}
CASES = {}
for path, schedule in PATHS.items():
    for kind in ("rms", "ln"):
        parameter = path.startswith("packed")
        for m in (1, 5, 13, 33):
            CASES[f"{path}_{kind}_m{m}"] = dict(kind=kind, m=m, k=40, n=37, schedule=schedule,
                                                parameter=parameter)
        CASES[f"{path}_{kind}_m7_k328"] = dict(kind=kind, m=7, k=328, n=29, schedule=schedule,
                                               parameter=parameter)
        CASES[f"{path}_{kind}_batched"] = dict(kind=kind, m=3, k=24, n=45, lead=(2,),
                                               schedule=schedule, parameter=parameter)
        CASES[f"{path}_{kind}_symbolic_m11"] = dict(kind=kind, m="s", dim=11, k=56, n=23,
                                                    schedule=schedule, parameter=parameter)


@pytest.mark.parametrize("name", list(CASES))
def test_every_prologue_kernel_matches_torch(name):
    cx, feeds, out, want, dims = norm_linear_case(**CASES[name])
    got, program, source = run_cpu(cx, feeds, out, dims)
    # one kernel: the norm's statistics and its elements run in the matmul's
    assert program.count("(kernel") == 1 and "a=computed" in program, program
    assert "lm_kk" in source
    if "gemv" in name and "m33" not in name:  # 33 rows are known to take the GEMM
        assert "if (M <= 16)" in source
    check(got, want)


@pytest.mark.parametrize("path", ["gemm", "gemv"])
@pytest.mark.parametrize("m", [1, 13])
def test_a_norm_a_linear_and_its_activation_run_in_one_kernel(m, path):
    """prologue and epilogue together: gelu(rms_norm(x) @ W.T + b), one kernel."""
    schedule = PROLOGUE + [("epilogue", 1)] + ([("gemv_rows", 16)] if path == "gemv" else [])
    cx = lm.Graph()
    x, g = cx.tensor((m, 40), name="x"), cx.tensor((40,), name="g")
    w, b = cx.tensor((37, 40), name="w"), cx.tensor((37,), name="b")
    out = (scheduled(F.rms_norm(x, (40,), g, eps=1e-6) @ w.t(), schedule) + b).gelu().output()
    gen = torch.Generator().manual_seed(m)
    dx, dg = torch.randn(m, 40, generator=gen) * 100, torch.randn(40, generator=gen)
    dw, db = torch.randn(37, 40, generator=gen), torch.randn(37, generator=gen)
    got, program, source = run_cpu(cx, {x: dx, g: dg, w: dw, b: db}, out, {})
    assert program.count("(kernel") == 1 and "a=computed" in program and "lm_er" in source
    ref = torch.nn.functional.rms_norm(dx.double(), (40,), dg.double(), eps=1e-6)
    check(got, torch.nn.functional.gelu(ref @ dw.double().t() + db.double()).float())


@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_the_default_program_stores_the_norm(kind):
    cx, feeds, out, want, dims = norm_linear_case(kind, 5, 40, 37, schedule=None)
    got, program, _ = run_cpu(cx, feeds, out, dims)
    assert program.count("(kernel") >= 2 and "a=computed" not in program
    check(got, want)


def test_one_norm_read_by_three_projections_is_computed_by_each():
    """Q, K and V of one RMSNorm, each scheduled prologue: no kernel stores the norm."""
    cx = lm.Graph()
    x, g = cx.tensor((6, 32), name="x"), cx.tensor((32,), name="g")
    ws = [cx.tensor((n, 32), name=f"w{n}") for n in (24, 16, 16)]
    y = F.rms_norm(x, (32,), g, eps=1e-6)
    outs = [scheduled(y @ w.t(), PROLOGUE).output() for w in ws]
    gen = torch.Generator().manual_seed(1)
    feeds = {t: torch.randn(tuple(t.shape), generator=gen) for t in [x, g] + ws}
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute({})
    program = rt._rt.program_text()
    assert program.count("(kernel") == 3 and program.count("a=computed") == 3, program
    ref = torch.nn.functional.rms_norm(feeds[x], (32,), feeds[g], eps=1e-6)
    for w, out in zip(ws, outs):
        check(np.asarray(rt.get(out)), ref @ feeds[w].t())


def test_a_norm_also_read_elsewhere_is_stored_and_read():
    """The norm's output is an output too: it is stored, and the matmul reads it (a plain A)."""
    cx = lm.Graph()
    x, g = cx.tensor((5, 24), name="x"), cx.tensor((24,), name="g")
    w = cx.tensor((7, 24), name="w")
    y = F.rms_norm(x, (24,), g, eps=1e-6)
    y_out = y.output()
    out = scheduled(y @ w.t(), PROLOGUE).output()
    gen = torch.Generator().manual_seed(2)
    feeds = {t: torch.randn(tuple(t.shape), generator=gen) for t in (x, g, w)}
    got, program, _ = run_cpu(cx, feeds, out, {})
    ref = torch.nn.functional.rms_norm(feeds[x], (24,), feeds[g], eps=1e-6)
    check(got, ref @ feeds[w].t())
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute({})
    check(np.asarray(rt.get(y_out)), ref)


# ---- the rules on graphs nn builds: both programs are in the space; a search picks one ---

class NormLinear(Module):
    def __init__(self, kind, k, n):
        super().__init__()
        self.kind = kind
        if kind != "functional_ln":
            self.norm = RMSNorm(k) if kind == "rms" else LayerNorm(k)
        self.proj = Linear(k, n)

    def forward(self, x):
        if self.kind == "functional_ln":  # F.layer_norm without weights
            return self.proj(F.layer_norm(x, (x.shape[-1],)))
        return self.proj(self.norm(x))


def nn_case(kind, rows, k=24, n=40):
    torch.manual_seed(0)
    model = NormLinear(kind, k, n)
    cx = lm.Graph()
    x = cx.tensor((2, rows, k), name="x")
    out = model(x).output()
    weights = {name: torch.randn(tuple(p.shape)) for name, p in model.named_parameters()}
    return cx, model, x, out, weights


def torch_nn(kind, weights, dx):
    k = dx.shape[-1]
    if kind == "rms":
        y = torch.nn.functional.rms_norm(dx, (k,), weights["norm.weight"], eps=1e-6)
    elif kind == "ln":
        y = torch.nn.functional.layer_norm(dx, (k,), weights["norm.weight"],
                                           weights["norm.bias"], eps=1e-5)
    else:
        y = torch.nn.functional.layer_norm(dx, (k,))
    return y @ weights["proj.weight"].T + weights["proj.bias"]


@pytest.mark.parametrize("rows", [3, "s"], ids=["rows3", "symbolic"])
@pytest.mark.parametrize("kind", ["rms", "ln", "functional_ln"])
def test_nn_graphs_offer_the_fused_and_the_unfused_program(kind, rows):
    cx, model, x, out, weights = nn_case(kind, rows)
    dims = {}
    if rows == "s":
        cx.set_dim("s", 7)
        dims = {"s": 7}
    _, _, report = saturate(cx, CPU_RULES)
    applied = {r.name: r.applied for r in report.rules}
    assert all(applied[r.name] >= 1 for r in PROLOGUE_RULES), applied
    space = _core.SearchSpace(cx._g, lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(),
                              _core.RunnerLimits())
    candidates = space.extract(64, dims)
    fused = [c for c in candidates if "prologue 1" in c.text()]
    unfused = [c for c in candidates if "prologue" not in c.text()]
    assert fused and unfused, [c.text() for c in candidates]
    n = 7 if rows == "s" else 3
    dx = torch.randn(2, n, 24) * 50
    want = torch_nn(kind, weights, dx)
    for prog, computed in ((fused[0], True), (unfused[0], False)):
        rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
        rt._load(cx, prog)
        assert ("a=computed" in rt._rt.program_text()) == computed, rt._rt.program_text()
        model.load_state_dict(rt, weights)
        rt.set_data(x, dx)
        rt.execute(dims)
        check(np.asarray(rt.get(out)), want)


@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_search_picks_a_correct_program(kind):
    cx, model, x, out, weights = nn_case(kind, "s", k=64, n=48)
    cx.set_dim("s", 5)
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE), 6, cache=False)
    model.load_state_dict(rt, weights)
    dx = torch.randn(2, 5, 64) * 100
    rt.set_data(x, dx)
    rt.execute(cx.dyn_map)
    check(np.asarray(rt.get(out)), torch_nn(kind, weights, dx))
