"""Runtime lowering rules (csrc/runtime/rules/*.rules): the kernel-level alternatives a runtime
offers as schedules attached to e-graph nodes. Every CPU rule as "this => that", the matmul
condition, program text with schedules, per-kernel tiles in the generated C, the search timing
the alternatives, and bad schedules refused."""

import numpy as np
import pytest
import torch

import luminal as lm
import luminal.nn.functional as F
from luminal import _core

from conftest import CPU_CACHE
from matmul_cases import scheduled

CPU_RULES = _core.parse_rules(lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(), "cpu.rules")
CPU_RULE_NAMES = [r.name for r in CPU_RULES]
MATMUL_RULES = [r for r in CPU_RULES if r.name.startswith("cpu-matmul-")]
WINOGRAD_RULES = [r for r in CPU_RULES if r.name.startswith("cpu-conv-winograd")]
INLINE_RULES = [r for r in CPU_RULES if r.name.startswith("cpu-inline-")]
STORE_RULES = [r for r in CPU_RULES
               if r.name.startswith("cpu-store-") and r.name != "cpu-store-rounded"]
# The bf16 dot products (rules/cpu_bf16.rules), on machines with AVX512-BF16 only, and on AMX
# tiles (rules/cpu_amx.rules), on machines with AMX-BF16 only.
BF16_RULES = [r for r in CPU_RULES
              if "bf16-dot" in r.name or "bf16-amx" in r.name or r.name == "cpu-store-rounded"]
THREAD_RULES = [r for r in CPU_RULES if r.name.startswith(("cpu-serial-", "cpu-two-threads-"))]
REDUCTIONS = {"sum": lambda x: x.sum(-1), "max": lambda x: x.amax(-1)}
WIDEN_RULES = [r for r in CPU_RULES if r.name.startswith("cpu-widen-")]
ROW_RULES = [r for r in CPU_RULES if r.name.startswith("cpu-row-")]
ATTENTION_RULES = [r for r in CPU_RULES if r.name == "cpu-attention"]
QUANT_DOT_RULES = [r for r in CPU_RULES if r.name == "cpu-quant-int8"]
# The int8 GEMM and its weight's row groups (rules/cpu_int8.rules), with AVX512-VNNI only, and
# on AMX tiles (rules/cpu_amx_int8.rules), with AMX-INT8 too.
INT8_GEMM_RULES = [r for r in CPU_RULES if r.name in ("cpu-quant-int8-gemm", "cpu-quant-int8-rows",
                                                      "cpu-quant-int8-amx",
                                                      "cpu-quant-int8-amx-rows")]
# The ops the inlining rules name: every unary op through one op-class rule ("(Unary:f ?x)"),
# Add and Mul by name. A class rule has a case per op of its class, named "rule:Op".
UNARY_OPS = [op for op in _core.OpKind.__members__.values()
             if _core.op_category(op) == _core.OpCategory.Unary]
INLINE_OPS = {
    "unary": None, "add": lambda x, y: x + y, "mul": lambda x, y: x * y,
}
CPU_RULE_CASES = [f"{n}:{op.name}" if n.endswith("-unary") else n
                  for n in CPU_RULE_NAMES for op in (UNARY_OPS if n.endswith("-unary") else [None])]


def schedule_of(rule):
    """The schedule a rule's right-hand side attaches, read from its text."""
    import re

    return [(n, int(v)) for n, v in re.findall(r"\((\w+) (\d+)\)", rule.text.split("schedule", 1)[1])
            if n != "Mul"]


def saturate(cx, rules):
    g = _core.EGraph()
    roots = g.add_graph(cx._g)
    lim = _core.RunnerLimits()
    report = g.run(rules, lim)
    return g, roots, report


def rewrites(rules, this, schedule):
    """Whether `rules` make `this` and `this` with `schedule` one class (never without them)."""
    that = scheduled(this, schedule)
    this.output()
    that.output()
    g, roots, _ = saturate(this.graph, [])
    assert not g.equivalent(*roots)
    g, roots, report = saturate(this.graph, rules)
    assert report.rejected_merges == 0
    return g.equivalent(*roots)


def matmul(cx, m=5, k=7, n=9):
    a = cx.tensor((m, k), name="a")
    b = cx.tensor((k, n), name="b")
    return a, b, a @ b


def test_cpu_offers_matmul_tilings_and_inlining():
    assert len(MATMUL_RULES) >= 5
    assert sorted(r.name[len("cpu-inline-"):] for r in INLINE_RULES) == sorted(INLINE_OPS)
    assert sorted(r.name[len("cpu-store-"):] for r in STORE_RULES) == sorted(INLINE_OPS)
    assert sorted(r.name.rsplit("-", 1)[1] for r in THREAD_RULES) == sorted(list(REDUCTIONS) * 2)
    assert [r.name for r in WIDEN_RULES] == ["cpu-widen-cast", "cpu-widen-quantized"]
    assert sorted(r.name for r in ROW_RULES) == ["cpu-row-max", "cpu-row-online-max",
                                                 "cpu-row-sum"]
    assert len(ATTENTION_RULES) == 1
    assert len(QUANT_DOT_RULES) == 1
    assert [r.name for r in WINOGRAD_RULES] == ["cpu-conv-winograd", "cpu-conv-winograd-4"]
    assert len(INT8_GEMM_RULES) in (0, 2, 4)
    assert len(BF16_RULES) in (0, 7, 7 + 8)  # with AMX: its 8 too
    plain_matmul = [r for r in MATMUL_RULES if r not in BF16_RULES]
    assert len(plain_matmul) + len(INLINE_RULES) + len(STORE_RULES) + len(THREAD_RULES) + \
        len(WIDEN_RULES) + len(ROW_RULES) + len(ATTENTION_RULES) + len(QUANT_DOT_RULES) + \
        len(INT8_GEMM_RULES) + len(BF16_RULES) + len(WINOGRAD_RULES) == len(CPU_RULES)
    assert all(schedule_of(r) for r in CPU_RULES)


def cpu_rule_case(cx, name):
    """A tensor the rule applies to."""
    if name.startswith(("cpu-inline-unary:", "cpu-store-unary:")):
        return cx.tensor((3, 4))._unary(getattr(_core.OpKind, name.split(":")[1]))
    if name.startswith(("cpu-inline-", "cpu-store-")):
        x, y = cx.tensor((3, 4)), cx.tensor((3, 4))
        return INLINE_OPS[name.split("-", 2)[2]](x, y)
    if name.startswith(("cpu-serial-", "cpu-two-threads-", "cpu-row-")):
        return REDUCTIONS[name.rsplit("-", 1)[1]](cx.tensor((3, 4)))
    if name == "cpu-widen-cast":  # a bf16 weight read by an f32 matmul
        return cx.tensor((9, 7), lm.bfloat16).to(lm.float32)
    if name == "cpu-widen-quantized":  # a Q8_0 weight dequantized in the matmul's kernel
        return cx.tensor((9, 32), lm.dtype.q8_0).to(lm.float32)
    if name == "cpu-attention":  # softmax weights times values
        return cx.tensor((5, 7), name="s").softmax(-1) @ cx.tensor((7, 9), name="v")
    if name.startswith("cpu-quant-int8"):  # quantized activations times a Q4_0 weight
        w = cx.tensor((9, 64), lm.dtype.q4_0, parameter=True)
        return F.quantize_activations(cx.tensor((5, 64), name="x")) @ w.to(lm.float32).t()
    if name.endswith(("bf16-dot-half-product", "bf16-amx-half-product")):  # the f32 sum of a bf16 product
        a, b = cx.tensor((5, 7), lm.bfloat16), cx.tensor((7, 9), lm.bfloat16)
        return (a.unsqueeze(-1) * b.unsqueeze(-3)).to(lm.float32).sum(-2)
    if "bf16-dot" in name or "bf16-amx" in name:  # bf16 values widened to f32 (B a parameter for the panels)
        a = cx.tensor((5, 7), lm.bfloat16, "a")
        b = cx.tensor((7, 9), lm.bfloat16, "b", parameter="packed" in name)
        return a.to(lm.float32) @ b.to(lm.float32)
    if "prologue" in name:  # a norm's rows times a weight (a parameter for the panels)
        x = F.rms_norm(cx.tensor((5, 16), name="x"), (16,))
        return x @ cx.tensor((16, 9), name="w", parameter="packed" in name)
    if "window" in name or "winograd" in name:  # a convolution: its weight times its windows
        return F.conv2d(cx.tensor((1, 3, 6, 6), name="x"), cx.tensor((4, 3, 3, 3), name="w"),
                        padding=1)
    if name.startswith("cpu-matmul-packed-") or name == "cpu-matmul-packed":  # B a parameter
        return cx.tensor((5, 7), name="a") @ cx.tensor((7, 9), name="b", parameter=True)
    return matmul(cx)[2]


@pytest.mark.parametrize("name", CPU_RULE_CASES)
def test_cpu_rule_this_gives_that(name):
    cx = lm.Graph()
    rule = next(r for r in CPU_RULES if r.name == name.split(":")[0])
    if name == "cpu-store-rounded":  # the rounding stored, its Cast to f32 widened in readers
        x = cx.tensor((5, 7), name="x")
        this = x.to(lm.bfloat16).to(lm.float32)
        that = scheduled(scheduled(x.to(lm.bfloat16), [("inline", 0)]).to(lm.float32),
                         [("inline", 1)])
    else:
        this = cpu_rule_case(cx, name)
        that = scheduled(this, schedule_of(rule))
    this.output()
    that.output()
    g, (r_this, r_that), _ = saturate(cx, [])
    assert not g.equivalent(r_this, r_that)
    g, (r_this, r_that), report = saturate(cx, [rule])
    assert g.equivalent(r_this, r_that), str(g)
    assert report.rejected_merges == 0


def test_every_cpu_rule_fires_on_a_batched_transposed_matmul_and_softmax():
    cx = lm.Graph()
    a = cx.tensor((2, 6, 4))
    b = cx.tensor((2, 5, 4), lm.bfloat16, parameter=True)  # widened to f32 by the matmul
    scores = a @ b.transpose(1, 2)
    (scores.softmax(-1) + scores.sqrt().log2().sin()).output()
    (scores.softmax(-1) @ cx.tensor((2, 5, 3))).output()
    q = cx.tensor((5, 32), lm.dtype.q4_0, parameter=True)  # dequantized in the matmul
    (cx.tensor((6, 32)) @ q.to(lm.float32).t()).output()
    (F.quantize_activations(cx.tensor((6, 32))) @ q.to(lm.float32).t()).output()
    (F.rms_norm(cx.tensor((6, 32)), (32,)) @ cx.tensor((32, 5), parameter=True)).output()
    # a bf16 model's Linear (x rounded to bf16) and a bf16 matmul (the f32 sum of its product)
    (cx.tensor((6, 4)).to(lm.bfloat16).to(lm.float32) @ b[0].to(lm.float32).t()).output()
    (cx.tensor((6, 4), lm.bfloat16) @ cx.tensor((4, 5), lm.bfloat16)).output()
    F.conv2d(cx.tensor((1, 3, 6, 6)), cx.tensor((4, 3, 3, 3)), padding=1).output()
    _, _, report = saturate(cx, CPU_RULES)
    applied = {r.name: r.applied for r in report.rules}
    assert all(applied[n] > 0 for n in CPU_RULE_NAMES), applied


@pytest.mark.parametrize("source,target", [(lm.float32, lm.bfloat16), (lm.int32, lm.float32),
                                           (lm.bfloat16, lm.float16)], ids=str)
def test_widening_is_offered_only_for_casts_of_16_bit_floats(source, target):
    """cpu-widen-cast's condition (half ?x): an f32 or int source is not widened."""
    cx = lm.Graph()
    cast = cx.tensor((3, 4), source).to(target)
    cast.output()
    _, _, report = saturate(cx, WIDEN_RULES)
    applied = {r.name: r.applied > 0 for r in report.rules}
    assert applied == {"cpu-widen-cast": source == lm.bfloat16, "cpu-widen-quantized": False}


@pytest.mark.parametrize("dtype,fires", [(lm.float32, False), (lm.bfloat16, False),
                                         (lm.dtype.q8_0, True), (lm.dtype.q6_k, True)], ids=str)
def test_quantized_condition_this_gives_that(dtype, fires):
    """(quantized ?x): the block dtypes only."""
    rule = _core.parse_rules("(rule q-only (Cast:c ?x) (schedule ((inline 1)) (Cast:c ?x))"
                             " (if (quantized ?x)))", "test")
    x = lm.Graph().tensor((4, 256), dtype)
    assert rewrites(rule, x.to(lm.float16), [("inline", 1)]) == fires


@pytest.mark.parametrize("build", [
    lambda cx, x: (x * x).sum(-1),                       # a row dot product: no broadcast
    lambda cx, x: (x * cx.tensor((6, 1)).expand(6, 8)).sum(-1),
    lambda cx, x: x.sum(-1),
], ids=["sum-of-squares", "broadcast-one-side", "plain-sum"])
def test_no_tiling_for_reductions_that_are_not_matmuls(build):
    cx = lm.Graph()
    x = cx.tensor((6, 8))
    build(cx, x).output()
    _, _, report = saturate(cx, MATMUL_RULES)
    assert all(r.applied == 0 for r in report.rules)


def test_matmul_with_padded_operand_is_not_tiled():
    cx = lm.Graph()
    a = cx.tensor((4, 3))
    b = cx.tensor((5, 6))
    (a.pad((0, 2)) @ b).output()  # a read through padding
    _, _, report = saturate(cx, MATMUL_RULES)
    assert all(r.applied == 0 for r in report.rules)


def test_program_text_keeps_schedules():
    cx = lm.Graph()
    _, _, y = matmul(cx)
    y2 = scheduled(y, [("tile_m", 4), ("tile_n", 16)])
    y2.output()
    program = _core.identity_program(cx._g)
    back = _core.parse_program(program.text(), cx._g)
    assert back.text() == program.text()
    assert "(schedule (tile_m 4) (tile_n 16))" in program.text()


TILING_RULES = {width: [r for r in _core.parse_rules(_core.cpu_rewrite_rules(width), "cpu.rules")
                        if "tile_m" in r.text] for width in (8, 16)}


@pytest.mark.parametrize("width", [8, 16])
def test_every_tiling_of_either_vector_width_matches_torch(width):
    """The tilings offered on machines of 8-wide and of 16-wide vectors (cpu_rewrite_rules):
    each runs on any machine (a 16-wide vector as two 8-wide ones) and matches torch on a
    shape no block divides, B a parameter for the packed ones."""
    names = {r.name for r in TILING_RULES[width]}
    assert len(names) >= 5 and any("packed" in n for n in names)
    other = 8 if width == 16 else 16
    assert not names & {r.name for r in TILING_RULES[other]}
    for rule in TILING_RULES[width]:
        cx = lm.Graph()
        a = cx.tensor((29, 37), name="a")
        b = cx.tensor((37, 71), name="b", parameter="pack_b" in rule.text)
        y = scheduled(a @ b, schedule_of(rule)).output()
        rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
        rt._load(cx)
        data = {t: torch.randn(t.shape) for t in (a, b)}
        for t, v in data.items():
            rt.set_data(t, v)
        rt.execute()
        np.testing.assert_allclose(rt.get(y), (data[a] @ data[b]).numpy(), rtol=1e-4,
                                   atol=1e-4, err_msg=rule.name)


@pytest.mark.parametrize("width", ["8", "16"])
def test_the_vector_width_can_be_set_by_the_environment(width):
    """LUMINAL_CPU_VECTOR_WIDTH picks the tilings CpuRuntime offers and its default block."""
    import os
    import subprocess
    import sys

    code = ("import luminal as lm; from luminal import _core; rt = lm.CpuRuntime(); "
            "print(rt.vector_width); "
            "print(rt.rewrite_rules() == _core.cpu_rewrite_rules(%s, rt.dot_products))" % width)
    env = dict(os.environ, LUMINAL_CPU_VECTOR_WIDTH=width)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[-2:] == [width, "True"]


@pytest.mark.parametrize("width", [8, 16])
def test_the_vector_width_can_be_passed_in(width):
    """CpuRuntime(vector_width=...) picks the tilings it offers and the C it renders, whatever
    the machine (C++ reads no environment: the width comes down in the runtime's options)."""
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE, vector_width=width)
    assert rt.vector_width == width
    assert rt.rewrite_rules() == _core.cpu_rewrite_rules(width, rt.dot_products)
    cx = lm.Graph()
    a, b, y = matmul(cx, 13, 11, 40)
    y.output()
    rt._load(cx)
    assert f"_v{width}" in rt.source
    with pytest.raises(ValueError):
        lm.CpuRuntime(cache_dir=CPU_CACHE, vector_width=4)


def test_each_kernel_gets_its_own_tiles_and_matches_torch():
    cx = lm.Graph()
    a, b, y = matmul(cx, 13, 11, 40)
    c = cx.tensor((40, 24), name="c")
    y = scheduled(y, [("tile_m", 2), ("tile_n", 32), ("vector_width", 8)])
    z = scheduled(y @ c, [("tile_m", 8), ("tile_n", 8), ("vector_width", 8)])
    z.output()
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx)
    assert "lm_mm_2x32_v8" in rt.source and "lm_mm_8x8_v8" in rt.source
    data = {t: torch.randn(t.shape) for t in (a, b, c)}
    for t, v in data.items():
        rt.set_data(t, v)
    rt.execute()
    want = data[a] @ data[b] @ data[c]
    np.testing.assert_allclose(rt.get(z), want.numpy(), rtol=1e-4, atol=1e-4)


# ---- combining the fastest kernels -----------------------------------------------------------

def two_matmuls(cx):
    a = cx.tensor((8, 16), name="a")
    b = cx.tensor((16, 24), name="b")
    c = cx.tensor((24, 32), name="c")
    return a, b, c, (a @ b) @ c


def test_kernel_times_name_every_kernel_by_its_node():
    cx = lm.Graph()
    a, b, c, y = two_matmuls(cx)
    y = y.output()
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx)
    data = {t: torch.randn(t.shape) for t in (a, b, c)}
    for t, v in data.items():
        rt.set_data(t, v)
    times = rt._rt.kernel_times({})
    assert rt._rt.can_time_kernels()
    roots = [n for n, _ in times]
    assert len(set(roots)) == len(roots) and all(s >= 0 for _, s in times)
    ops = [cx._g.node_op(n) for n in roots]
    assert ops.count(lm._core.OpKind.SumReduce) == 2  # one kernel per matmul
    want = data[a] @ data[b] @ data[c]  # the timed run computed the outputs
    np.testing.assert_allclose(rt.get(y), want.numpy(), rtol=1e-4, atol=1e-4)
    assert not lm.NativeRuntime()._rt.can_time_kernels()


def test_combination_takes_each_class_fastest_schedule():
    from luminal.search.extract import _combine

    cx = lm.Graph()
    *_, y = two_matmuls(cx)
    y.output()
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = _core.SearchSpace(cx._g, rt.rewrite_rules(), _core.RunnerLimits(), rt._rt)
    programs = space.extract(16, {})
    reduces = {}  # class -> [(program, node, schedule)]
    for p, prog in enumerate(programs):
        for node in prog.graph.topo_order():
            if prog.graph.node_op(node) == lm._core.OpKind.SumReduce:
                reduces.setdefault(prog.node_class[node], []).append(
                    (p, node, prog.graph.node_schedule(node)))
    assert len(reduces) == 2
    first, second = sorted(reduces)
    # Made-up timings: in each matmul's class one tiling (one of this machine's tiling rules,
    # a different one per class) is fastest.
    def tilings(cls):
        return sorted({tuple(sch) for _, _, sch in reduces[cls] if sch and sch[0][0] == "tile_m"})
    fast = {first: tilings(first)[0], second: tilings(second)[-1]}
    assert fast[first] != fast[second]
    def seconds(cls, schedule):
        return 1.0 if tuple(schedule) == fast[cls] else 2.0
    kernel_times = []
    for p, prog in enumerate(programs):
        times = [(node, seconds(cls, sch)) for cls, uses in reduces.items()
                 for q, node, sch in uses if q == p]
        kernel_times.append((p, times))
    chosen = _combine(programs, kernel_times)
    text = {cls: " ".join(f"({n} {v})" for n, v in fast[cls]) for cls in fast}
    assert chosen[first] == text[first] and chosen[second] == text[second]
    combined = space.extract_choosing(chosen, {})
    got = {combined.node_class[n]: combined.graph.node_schedule(n)
           for n in combined.graph.topo_order()
           if combined.graph.node_op(n) == lm._core.OpKind.SumReduce}
    assert tuple(got[first]) == fast[first] and tuple(got[second]) == fast[second]


def test_cpu_space_prices_tilings_with_the_runtime_kernel_cost():
    """The space asks the runtime it was built with what a tiling costs (its KernelCost);
    without one, every tiling of a matmul costs what the reduction as written costs. (The
    8-wide tilings, which every machine can run, are the rules here.)"""
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    cx = lm.Graph()
    matmul(cx, m=96, k=64, n=96)[2].output()

    def costs(runtime):
        space = _core.SearchSpace(cx._g, _core.cpu_rewrite_rules(8), _core.RunnerLimits(),
                                  runtime)
        found = space.extract(16, {})
        square = [p.cost for p in found if "(tile_m 8) (tile_n 8)" in p.text()]
        return found[0].cost, square[0]

    default, square = costs(rt._rt)
    assert square > default  # an 8 x 8 block waits on its loads (c/schedule.cc)
    default, square = costs(None)
    assert square == pytest.approx(default)


def test_inlined_softmax_takes_fewer_kernels_and_matches_torch():
    cx = lm.Graph()
    x = cx.tensor((6, 40), name="x")
    e = (x - x.amax(-1, keepdim=True)).exp()
    y = (e / e.sum(-1, keepdim=True)).output()
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    # The same graph with the exp stored (inline 0) and recomputed by its two readers
    # (inline 1): rebuild it from program text.
    program = _core.identity_program(cx._g)
    text = program.text()
    line = next(l for l in text.splitlines() if l.strip().startswith("(Exp2"))
    kernels = []
    for choice in (0, 1):
        rewritten = _core.parse_program(
            text.replace(line, line[:-1] + f" (schedule (inline {choice})))"), cx._g)
        assert any(rewritten.graph.node_schedule(n) == [("inline", choice)]
                   for n in rewritten.graph.topo_order())
        rt._load(cx, rewritten)
        kernels.append(rt.source.count("#pragma omp parallel"))
    assert kernels[1] < kernels[0]
    data = torch.randn(6, 40)
    rt.set_data(x, data)
    rt.execute()
    np.testing.assert_allclose(rt.get(y), torch.softmax(data, -1).numpy(), rtol=1e-5, atol=1e-6)


# ---- random graphs: every program the CPU rules make computes the graph ----------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def graphs_with_matmuls(draw):
    """Elementwise chains whose nodes are read several times, reductions, and matmuls."""
    cx = lm.Graph()
    pool = [cx.tensor((4, 6)), cx.tensor((4, 6))]
    for _ in range(draw(st.integers(2, 6))):
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        kind = draw(st.sampled_from(["add", "mul", "exp", "sqrt", "recip", "sum", "matmul"]))
        if kind == "add":
            pool.append(a + b)
        elif kind == "mul":
            pool.append(a * b)
        elif kind == "exp":
            pool.append((a * 0.5).exp())
        elif kind == "sqrt":
            pool.append((a * a + 1.0).sqrt())
        elif kind == "recip":
            pool.append((a * a + 1.0).reciprocal())
        elif kind == "sum":
            pool.append(a - a.sum(-1, keepdim=True))
        else:
            pool.append((a @ b.T) @ a * 0.1)
    (pool[-1] + pool[-2]).output()
    pool[-1].sum(0).output()
    return cx


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs_with_matmuls(), st.integers(0, 2 ** 16))
def test_every_cpu_program_computes_the_graph(cx, seed):
    from luminal.search.check import _run
    from luminal.search.check import random_inputs as _random_inputs

    feeds = _random_inputs(cx._g, {}, seed)
    native = _core.NativeRuntime()
    native.compile(cx._g)
    want = _run(native, cx._g.inputs(), cx._g.outputs(), feeds, {})
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = _core.SearchSpace(cx._g, rt.rewrite_rules(), _core.RunnerLimits(), rt._rt)
    for program in space.extract(5, {}):
        rt._rt.compile(program.graph)
        got = _run(rt._rt, program.inputs, program.outputs, feeds, {})
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=program.text())
