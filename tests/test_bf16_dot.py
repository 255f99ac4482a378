"""The bf16 GEMM (schedule bf16_dot 1, codegen/c/bf16_dot.cc): a matmul of two bf16 values
multiplied in pairs of k by AVX512-BF16, checked against torch on odd shapes in both forms the
graph takes (bf16 tensors widened to f32; the f32 sum of a bf16 product), with a batch, an
epilogue and a strided B; offered as a rule only where the machine has it; refused by hand
where it does not; and Linear(activations="bf16") rounding x as a bf16 model does."""

import re

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core
from luminal.nn import Linear

from conftest import CpuRuntime
from matmul_cases import scheduled

_MACHINE = lm.CpuRuntime(cache_dir="")
HAS_DOT = _MACHINE.vector_width == 16 and "cpu-matmul-bf16-dot" in _MACHINE.rewrite_rules()
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="no AVX512-BF16 on this machine")
HAS_AMX = _MACHINE.vector_width == 16 and "cpu-matmul-bf16-amx" in _MACHINE.rewrite_rules()
needs_amx = pytest.mark.skipif(not HAS_AMX, reason="no AMX-BF16 on this machine")
# bf16_dot 1 (vdpbf16ps) and 2 (AMX tiles, tests/test_amx.py), each where the machine has it
DOTS = [pytest.param(1, marks=needs_dot, id="avx512bf16"), pytest.param(2, marks=needs_amx, id="amx")]
INSTRUCTION = {1: "vdpbf16ps", 2: "tdpbf16ps"}
SHAPES = [(1, 37, 45), (7, 64, 64), (13, 31, 130), (128, 100, 67), (513, 258, 70),
          (40, 1100, 33)]


def widened(t):
    """t (bf16) read as f32 in its reader's registers (the Cast scheduled inline 1)."""
    return scheduled(t.to(lm.float32), [("inline", 1)])


def bf16(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(torch.bfloat16)


def expected(a, b):
    """The exact products of the bf16 values summed in f64: the kernel's only freedom is the
    order of its f32 sum."""
    return (a.double() @ b.double()).numpy()


def close(got, want):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * scale)


def run(cx, inputs, out):
    rt = CpuRuntime()
    rt._load(cx)
    for node, data in inputs:
        rt.set_data(node, data)
    rt.execute({})
    return rt, rt.get(out)


@pytest.mark.parametrize("dot", DOTS)
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_widened_bf16_operands_match_torch(dot, m, k, n):
    """K of 1100 spans k blocks of 256 (AMX's last step partial)."""
    cx = lm.Graph()
    a = cx.tensor((m, k), lm.bfloat16, "a")
    b = cx.tensor((k, n), lm.bfloat16, "b")
    y = scheduled(widened(a) @ widened(b), [("bf16_dot", dot), ("tile_k", 256)]).output()
    at, bt = bf16((m, k), 0), bf16((k, n), 1)
    rt, got = run(cx, [(a, at), (b, bt)], y)
    assert INSTRUCTION[dot] in rt.source
    close(got, expected(at, bt))


@pytest.mark.parametrize("dot", DOTS)
@pytest.mark.parametrize("m,k,n", [(7, 33, 20), (64, 96, 80)])
def test_a_bf16_product_summed_in_f32_matches_torch(dot, m, k, n):
    cx = lm.Graph()
    a = cx.tensor((m, k), lm.bfloat16, "a")
    b = cx.tensor((k, n), lm.bfloat16, "b")
    product = (a.unsqueeze(-1) * b.unsqueeze(-3)).to(lm.float32)
    y = scheduled(product.sum(-2), [("bf16_dot", dot)]).output()
    at, bt = bf16((m, k), 2), bf16((k, n), 3)
    rt, got = run(cx, [(a, at), (b, bt)], y)
    assert INSTRUCTION[dot] in rt.source
    close(got, expected(at, bt))


@pytest.mark.parametrize("dot", DOTS)
def test_a_batched_linear_with_an_epilogue_and_a_transposed_weight_matches_torch(dot):
    cx = lm.Graph()
    x = cx.tensor((3, 11, 40), lm.bfloat16, "x")
    w = cx.tensor((50, 40), lm.bfloat16, "w", parameter=True)
    bias = cx.tensor((50,), name="bias")
    mm = scheduled(widened(x) @ widened(w).t(), [("bf16_dot", dot), ("epilogue", 1)])
    y = (mm + bias).relu().output()
    xt, wt, bt = bf16((3, 11, 40), 4), bf16((50, 40), 5), torch.randn(50)
    rt, got = run(cx, [(x, xt), (w, wt), (bias, bt)], y)
    assert INSTRUCTION[dot] in rt.source
    want = np.maximum(expected(xt, wt.T) + bt.double().numpy(), 0)
    close(got, want)


def prefill_linear():
    """A Linear of a bf16 model's shape at prefill (x of 96 rows rounded to bf16)."""
    cx = lm.Graph()
    x = cx.tensor((96, 256), name="x")
    lin = Linear(256, 192, bias=False, dtype=lm.bfloat16, activations="bf16")
    return cx, x, lin, lin(x).output()


def search_prefill_linear(cx, x, lin, y, runtime):
    """Searches prefill_linear's graph (budget 64): no candidate may be wrong, and the
    program kept matches torch. Returns the search's report."""
    rt = cx.search(runtime, 64, cache=False, progress=False)
    report = cx.last_search_report
    assert not [c for c in report.candidates if c.status == "wrong"], report
    xt, wt = torch.randn(96, 256), bf16((192, 256), 6)
    rt.set_data(x, xt)
    rt.set_data(lin.weight.tensor(cx), wt)
    rt.execute({})
    close(rt.get(y), expected(xt.to(torch.bfloat16), wt.T))
    return report


@needs_dot
def test_the_search_times_the_bf16_dot_and_keeps_a_correct_program():
    """The bf16 dot products are among the candidates the search verifies and times for
    prefill_linear, and what it keeps matches torch."""
    cx, x, lin, y = prefill_linear()
    cx.build_search_space(lm.CpuRuntime)
    runtime = CpuRuntime()
    pool = cx._search_space.build(cx, runtime.rewrite_rules(), runtime._rt).extract(64, {})
    assert any("(bf16_dot 1)" in p.text() for p in pool)
    report = search_prefill_linear(cx, x, lin, y, runtime)
    # Among those checked and timed: the rounding stored as bf16 words, which the matmul reads
    # and multiplies in pairs. (Which candidate wins is the timer's: on a loaded machine any of
    # a dozen within noise of each other, the rounding recomputed in A's loads among them; the
    # untimed pick's preference is test_the_cost_models_pick_stores_the_rounding_...)
    assert any("bf16_dot=1" in c.choice and "inline=0" in c.choice and c.status == "ok"
               for c in report.candidates), report


@needs_dot
def test_the_cost_models_pick_stores_the_rounding_the_bf16_dot_reads():
    """Untimed (budget 1), a bf16 Linear at prefill (x rounded to bf16) takes the bf16 dot
    products on the rounding stored as bf16 words (inline 0): the model prices that rounding's
    pass below the default's, which recomputes it in the matmul's every load of A."""
    cx = lm.Graph()
    x = cx.tensor((130, 192), name="x")
    lin = Linear(192, 96, bias=False, dtype=lm.bfloat16, activations="bf16")
    y = lin(x).output()
    rt = cx.search(CpuRuntime(), 1, cache=False, progress=False)
    winner = cx.last_search_report.winner_program
    # bf16_dot 1, or 2 (AMX tiles, tests/test_amx.py) where the machine has them
    assert re.search(r"\(bf16_dot [12]\)", winner) and "(Cast bf16" in winner, winner
    rounding = next(line for line in winner.splitlines() if "(Cast bf16" in line)
    assert "(inline 0)" in rounding, winner
    xt, wt = torch.randn(130, 192), bf16((96, 192), 9)
    rt.set_data(x, xt)
    rt.set_data(lin.weight.tensor(cx), wt)
    rt.execute({})
    close(rt.get(y), expected(xt.to(torch.bfloat16), wt.T))


def test_the_rule_is_offered_only_where_the_machine_multiplies_bf16_pairs():
    rules = lm.CpuRuntime(cache_dir="", vector_width=8).rewrite_rules()
    assert "cpu-matmul-bf16-dot" not in rules


def test_bf16_dot_is_refused_where_it_cannot_run():
    cx = lm.Graph()
    a = cx.tensor((5, 7), lm.bfloat16, "a")
    b = cx.tensor((7, 9), lm.bfloat16, "b")
    scheduled(widened(a) @ widened(b), [("bf16_dot", 1)]).output()
    rt = CpuRuntime(vector_width=8)
    with pytest.raises(lm.CompileError, match="bf16_dot 1 needs 16-wide vectors"):
        rt._load(cx)


def test_linear_rounds_x_to_bf16_only_for_a_bf16_weight():
    for wdtype, rounds in [(lm.bfloat16, True), (lm.float32, False)]:
        cx = lm.Graph()
        x = cx.tensor((4, 8), name="x")
        Linear(8, 3, bias=False, dtype=wdtype, activations="bf16")(x).output()
        text = str(cx._g)
        assert ("Cast bf16 %0" in text) == rounds, text
    with pytest.raises(lm.DTypeError, match="activations must be one of"):
        Linear(8, 3, activations="bf8")


@pytest.mark.parametrize("dot", DOTS)
@pytest.mark.parametrize("m,k,n,depth", [(1, 37, 45, 256), (7, 64, 70, 1024), (130, 257, 200, 64),
                                         (513, 96, 64, 256), (513, 2049, 100, 2048)])
def test_a_weight_laid_out_once_as_pairs_matches_torch(dot, m, k, n, depth):
    """pack_b with bf16_dot: the weight's k pairs laid out at set_data (odd K: the last pair's
    high half 0; K past a k block of `depth`), read by every M; its bytes are the padded
    panels' (64 wide for bf16_dot 1, AMX's 32 for 2)."""
    cx = lm.Graph()
    x = cx.tensor((m, k), lm.bfloat16, "x")
    w = cx.tensor((n, k), lm.bfloat16, "w", parameter=True)
    schedule = [("bf16_dot", dot), ("pack_b", 1), ("tile_k", depth)]
    y = scheduled(widened(x) @ widened(w).t(), schedule).output()
    xt, wt = bf16((m, k), 7), bf16((n, k), 8)
    rt, got = run(cx, [(x, xt), (w, wt)], y)
    assert "lm_panels32" in rt.source and INSTRUCTION[dot] in rt.source
    width = {1: 64, 2: 32}[dot]
    assert rt.memory()["packed_input_bytes"] == -(-n // width) * width * (k + k % 2) * 2
    close(got, expected(xt, wt.T))


def test_without_dot_products_no_rule_offers_them_and_the_kernels_build_without_them():
    """dot_products=False ($LUMINAL_CPU_DOT_PRODUCTS=0): the switch that runs the paths of a
    machine without AVX512-BF16 and VNNI on one that has them, so those paths can be tested."""
    rt = CpuRuntime(dot_products=False)
    assert not rt.dot_products
    assert "cpu-matmul-bf16-dot" not in rt.rewrite_rules()
    assert "-mno-avx512vnni" in _core.cpu_compile_flags(rt.vector_width, False)
    cx = lm.Graph()
    a = cx.tensor((5, 7), lm.bfloat16, "a")
    b = cx.tensor((7, 9), lm.bfloat16, "b")
    scheduled(widened(a) @ widened(b), [("bf16_dot", 1)]).output()
    with pytest.raises(lm.CompileError, match="dot_products"):
        rt._load(cx)
    with pytest.raises(ValueError, match="dot_products must be True or False"):
        CpuRuntime(dot_products="no")
