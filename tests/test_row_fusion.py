"""Row kernels (kernel/row_kernel.h): a reduction scheduled `row 1` (the rules cpu-row-sum,
cpu-row-max, cuda-row-sum, cuda-row-max) is computed inside the kernels that read it, once per
row (row 2 on a max, cpu-row-online-max and cuda-row-online-max: softmax's max and sum in one
loop by the online recurrence), so softmax, log_softmax, layer_norm and rms_norm, as hl_ops
and nn build them from primitives, become one kernel that reads each row once and writes it
once. Each rule as this => that and on the graphs F.softmax, F.log_softmax, F.layer_norm,
nn.RMSNorm and nn attention build, with symbolic row lengths; every fused kernel against torch,
on the CPU and in the CUDA emulator, on odd rows, with -inf masks, fully masked rows and large
logits."""

import re

import numpy as np
import pytest
import torch

import luminal as lm
import luminal.nn as nn
import luminal.nn.functional as F
from luminal import _core, cuda

import cuda_emu
from conftest import CPU_CACHE, assert_close
from matmul_cases import scheduled

CPU_ROW_RULES = [r for r in _core.parse_rules(lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(),
                                              "cpu.rules") if r.name.startswith("cpu-row-")]
CUDA_ROW_RULES = [r for r in _core.parse_rules(cuda.rewrite_rules("sm_90"), "cuda.rules")
                  if r.name.startswith("cuda-row-")]
REDUCE_LINES = ("(MaxReduce", "(SumReduce")


# ---- the graphs: (builder of the output from x and its params, torch reference, has a max) --

def _layer_norm(x, params):
    n = x.shape[-1]
    w, b = x.graph.tensor((n,), name="w"), x.graph.tensor((n,), name="b")
    params.update(w=w, b=b)
    return F.layer_norm(x, (n,), w, b)


def _rms_norm(x, params):
    """What nn.RMSNorm builds (F.rms_norm with its weight), over a symbolic row length."""
    n = x.shape[-1]
    params["w"] = x.graph.tensor((n,), name="w")
    return F.rms_norm(x, (n,), params["w"], 1e-6)


def _attention_probs(x, params):
    """The probabilities nn attention's softmax builds (sdpa.safe_softmax) from its scores."""
    from luminal.nn.sdpa import safe_softmax

    return safe_softmax(x)


def _torch_safe_softmax(t):
    p = torch.softmax(t, -1)
    return torch.where(torch.isnan(p), torch.zeros_like(p), p)


def _torch_layer_norm(t, params):
    return torch.nn.functional.layer_norm(t, (t.shape[-1],), params["w"], params["b"])


def _torch_rms_norm(t, params):
    return torch.nn.functional.rms_norm(t, (t.shape[-1],), params["w"], eps=1e-6)


GRAPHS = {
    "softmax": (lambda x, p: F.softmax(x, -1), lambda t, p: torch.softmax(t, -1), True),
    "log_softmax": (lambda x, p: F.log_softmax(x, -1), lambda t, p: torch.log_softmax(t, -1),
                    True),
    "layer_norm": (_layer_norm, _torch_layer_norm, False),
    "rms_norm": (_rms_norm, _torch_rms_norm, False),
    "attention": (_attention_probs, lambda t, p: _torch_safe_softmax(t), True),
}


def build(name, shape):
    """(graph, x, output, params by name) of graph `name` over x of `shape`."""
    cx = lm.Graph()
    x = cx.tensor(shape, name="x")
    params = {}
    y = GRAPHS[name][0](x, params).output()
    return cx, x, y, params


def feeds_and_reference(name, x, params, data):
    """The inputs (x, then seeded params) and torch's output."""
    g = torch.Generator().manual_seed(7)
    values = {k: torch.randn(data.shape[-1], generator=g) for k in params}
    feeds = {x: data}
    feeds.update({params[k]: v for k, v in values.items()})
    return feeds, GRAPHS[name][1](data, values)


def row_program(cx, max_row=1):
    """cx's graph with every reduction scheduled row 1 (a max row `max_row`: 2 asks for the
    online softmax), as a program to load."""
    text = _core.identity_program(cx._g).text()
    lines = []
    for line in text.splitlines():
        if line.strip().startswith(REDUCE_LINES):
            row = max_row if line.strip().startswith("(MaxReduce") else 1
            line = line[:-1] + f" (schedule (row {row})))"
        lines.append(line)
    return _core.parse_program("\n".join(lines), cx._g)


def saturate(cx, rules):
    g = _core.EGraph()
    roots = g.add_graph(cx._g)
    report = g.run(rules, _core.RunnerLimits())
    return g, roots, report


# ---- rules: this => that, and where they fire ------------------------------------------------

@pytest.mark.parametrize("rule", CPU_ROW_RULES + CUDA_ROW_RULES, ids=lambda r: r.name)
def test_row_rule_this_gives_that(rule):
    cx = lm.Graph()
    x = cx.tensor((3, "n"))
    this = x.amax(-1) if "MaxReduce" in rule.text.split("(schedule")[0] else x.sum(-1)
    row = int(re.search(r"\(row (\d)\)", rule.text).group(1))
    that = scheduled(this, [("row", row)])
    this.output()
    that.output()
    g, (r_this, r_that), _ = saturate(cx, [])
    assert not g.equivalent(r_this, r_that)
    g, (r_this, r_that), report = saturate(cx, [rule])
    assert g.equivalent(r_this, r_that)
    assert report.rejected_merges == 0


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("rules", [CPU_ROW_RULES, CUDA_ROW_RULES], ids=["cpu", "cuda"])
def test_row_rules_fire_on_the_graphs_hl_ops_and_nn_build(name, rules):
    cx, _, _, _ = build(name, ("b", "s", "n"))
    _, _, report = saturate(cx, rules)
    applied = {r.name.split("-", 1)[1]: r.applied for r in report.rules}
    assert applied["row-sum"] > 0
    assert (applied["row-max"] > 0) == (applied["row-online-max"] > 0) == GRAPHS[name][2]


def test_row_rules_fire_on_nn_rms_norm_and_attention():
    cx = lm.Graph()
    x = cx.tensor(("b", "s", 16), name="x")
    nn.RMSNorm(16)(x).output()
    attention = nn.MultiHeadAttention(16, 2)
    attention(x, causal=True).output()
    _, _, report = saturate(cx, CPU_ROW_RULES)
    assert all(r.applied > 0 for r in report.rules)


@pytest.mark.parametrize("name", GRAPHS)
def test_row_fused_graph_is_one_row_kernel(name):
    """With every reduction row 1 the whole normalization is one row kernel, over symbolic
    rows of a symbolic length."""
    cx, x, y, _ = build(name, ("b", "n"))
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, row_program(cx))
    text = rt._rt.program_text()
    # besides it, at most a scalar kernel: a symbolic mean's count, cast to f32
    assert text.count("(kernel ") - text.count("(loops)\n") == 1, text
    assert text.count("(row reductions=") == 1 and "along=i1" in text


def test_the_search_space_holds_the_row_program_and_the_default():
    cx, x, y, _ = build("softmax", (4, "n"))
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = _core.SearchSpace(cx._g, rt.rewrite_rules(), _core.RunnerLimits(), rt._rt)
    assert [("row", 1)] in space.schedules()
    texts = [p.text() for p in space.extract(64, {})]
    assert any("(schedule (row 1))" not in t for t in texts)  # the default stays


# ---- every fused kernel against torch -------------------------------------------------------

def data_of(kind, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g)
    if kind == "large":
        return t * 100
    if kind in ("masked", "fully_masked"):
        t = t.masked_fill(torch.rand(shape, generator=g) < 0.3, -float("inf"))
        if kind == "fully_masked":
            t.view(-1, shape[-1])[1] = -float("inf")
        return t
    return t


KINDS = {"softmax": ["plain", "large", "masked", "fully_masked"],
         "log_softmax": ["plain", "large", "masked", "fully_masked"],
         "attention": ["plain", "large", "masked", "fully_masked"],
         "layer_norm": ["plain", "large"], "rms_norm": ["plain", "large"]}
CASES = [(n, k) for n, kinds in KINDS.items() for k in kinds]
SHAPES = [(7, 37), (3, 5, 33), (2, 1), (4, 64)]  # rows not a multiple of the vector width


ONLINE = ("softmax", "log_softmax")  # the graphs whose max and sum match_online takes
VARIANTS = [(n, k, 1) for n, k in CASES] + [(n, k, 2) for n, k in CASES if n in ONLINE]


def variant_id(v):
    name, kind, max_row = v
    return f"{name}-{kind}" + ("-online" if max_row == 2 else "")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_cpu_row_kernel_matches_torch(variant, shape):
    name, kind, max_row = variant
    cx, x, y, params = build(name, tuple(shape[:-1]) + ("n",))
    feeds, want = feeds_and_reference(name, x, params, data_of(kind, shape))
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, row_program(cx, max_row))
    assert ("(online)" in rt.source) == (max_row == 2)
    # softmax's exp2, which its sum and its row loop both compute, is computed once: stored to
    # the output by the sum's loop, read back by the row's (row_kernel.h RowStash)
    stashed = name in ("softmax", "attention") and max_row == 1
    assert ("stored by the last reduction's loop" in rt.source) == stashed
    assert "__builtin_prefetch(" in rt.source  # the next row's input, while this one computes
    for t, v in feeds.items():
        rt.set_data(t, v)
    cx.set_dim("n", shape[-1])
    rt.execute(cx.dyn_map)
    assert_close(rt.get(y), want, rtol=1e-4, atol=1e-4)


# ---- CUDA: the warp-per-row kernels in the CPU emulator --------------------------------------

def emulate(cx, program, feeds, y, dims, workdir):
    """Runs `program` (of cx's graph) at `dims` in the CUDA emulator; returns y's value, flat."""
    cx.dyn_map.update(dims)
    return cuda_emu.run_program(cx, program, feeds, y, workdir)


@pytest.mark.skipif(cuda_emu.compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("shape", [(5, 37), (2, 3, 70)], ids=str)
@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_cuda_row_kernel_matches_torch_in_the_emulator(variant, shape, tmp_path_factory):
    name, kind, max_row = variant
    cx, x, y, params = build(name, tuple(shape[:-1]) + ("n",))
    feeds, want = feeds_and_reference(name, x, params, data_of(kind, shape))
    program = row_program(cx, max_row)
    src = _core.cuda_render(program.graph, "sm_90", _core.TuningChoice())
    assert "a warp per row" in src and ("(online)" in src) == (max_row == 2)
    got = emulate(cx, program, feeds, y, {"n": shape[-1]}, tmp_path_factory.getbasetemp())
    assert_close(got.reshape(want.shape), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_row_kernels_compile_with_nvrtc(arch):
    for name, max_row in [(n, 1) for n in GRAPHS] + [(n, 2) for n in ONLINE]:
        cx, _, _, _ = build(name, ("b", "n"))
        src = _core.cuda_render(row_program(cx, max_row).graph, arch, _core.TuningChoice())
        assert "a warp per row" in src
        assert _core.cuda_nvrtc_compile(src, arch, cuda.find_nvrtc()) > 0


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.gpu_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_gpu_row_kernel_matches_torch(variant):
    """On a real GPU: rows longer than a warp's stride many times over, odd length."""
    name, kind, max_row = variant
    shape = (33, 4103)
    cx, x, y, params = build(name, (33, "n"))
    feeds, want = feeds_and_reference(name, x, params, data_of(kind, shape))
    rt = lm.CudaRuntime()
    rt._load(cx, row_program(cx, max_row))
    for t, v in feeds.items():
        rt.set_data(t, v)
    cx.set_dim("n", shape[-1])
    rt.execute(cx.dyn_map)
    assert_close(rt.get(y), want, rtol=1e-4, atol=1e-4)
