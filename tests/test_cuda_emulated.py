"""The generated CUDA kernels run on the CPU through tests/cuda_emu.py and match torch: every
thread mapping of the CUDA renderer (grid-stride elementwise, serial and warp-shuffle
reductions with and without 16-byte loads, shared-memory tiled and tensor-core matmuls),
at sizes that leave partial tiles and misaligned rows; and every CUDA rule's schedule
(csrc/runtime/rules/cuda*.rules) attached to the reductions and matmuls it applies to. No GPU
needed; needs a C++20 compiler."""

import re

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core, cuda
from luminal.graph import GraphTensor

import cuda_emu

pytestmark = pytest.mark.skipif(cuda_emu.compiler() is None, reason="no C++ compiler")

TOL = {lm.float32: dict(rtol=1e-4, atol=1e-4), lm.float16: dict(rtol=1e-2, atol=1e-2),
       lm.bfloat16: dict(rtol=3e-2, atol=3e-2)}
TORCH = {lm.float32: torch.float32, lm.float16: torch.float16, lm.bfloat16: torch.bfloat16}


def _data(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(TORCH[dtype]).float()


def _matmul(m, k, n, dtype, transposed_b=False, batch=None):
    cx = lm.Graph()
    lead = (batch,) if batch else ()
    a = cx.tensor(lead + (m, k), dtype)
    if transposed_b:
        b = cx.tensor(lead + (n, k), dtype)
        out = a @ b.transpose(-1, -2)
    else:
        b = cx.tensor(lead + (k, n), dtype)
        out = a @ b
    out.output()
    da, db = _data(a.shape, dtype, 1), _data(b.shape, dtype, 2)
    ref = da @ (db.transpose(-1, -2) if transposed_b else db)
    return cx, {a: da, b: db}, [out], [ref], dtype


def _reduce(shape, dtype, op):
    cx = lm.Graph()
    x = cx.tensor(shape, dtype)
    out = (x.sum(-1) if op == "sum" else x.amax(-1)).output() if op != "softmax" else None
    dx = _data(shape, dtype, 3)
    if op == "softmax":
        e = (x - x.amax(-1, keepdim=True)).exp()
        out = (e / e.sum(-1, keepdim=True)).output()
        ref = torch.softmax(dx, -1)
    else:
        ref = dx.sum(-1) if op == "sum" else dx.max(-1).values
    return cx, {x: dx}, [out], [ref], dtype


def _gemv(k, n):
    """x @ W.T as a reduction: each bf16 product rounds to bf16 (like torch's bf16 mul), the
    sum accumulates in f32."""
    cx, feeds, outputs, _, dtype = _matmul(1, k, n, lm.bfloat16, True)
    da, db = list(feeds.values())
    prods = (da.to(torch.bfloat16)[:, None, :] * db.to(torch.bfloat16)[None, :, :]).float()
    return cx, feeds, outputs, [prods.sum(-1)], dtype


def _widened(k, n, wdtype):
    """x @ W.T for one row of f32 x and a 16-bit W: the Cast is read without a broadcast, so it
    is inlined and the matmul widens W as it loads it."""
    cx = lm.Graph()
    x = cx.tensor((1, k))
    w = cx.tensor((n, k), wdtype)
    out = (x @ w.to(lm.float32).t()).output()
    dx, dw = _data((1, k), lm.float32, 8), _data((n, k), wdtype, 9)
    return cx, {x: dx, w: dw}, [out], [dx @ dw.t()], lm.float32


def _layers(n_layers=3, k=128):
    """A residual stack whose layers share kernels (launched once per layer)."""
    cx = lm.Graph()
    x = cx.tensor((2, k))
    ws = [cx.tensor((k, k)) for _ in range(n_layers)]
    h = x
    dx = _data((2, k), lm.float32, 6)
    dws = [_data((k, k), lm.float32, 7 + i) * 0.05 for i in range(n_layers)]
    ref = dx
    for w, dw in zip(ws, dws):
        h = (h @ w.transpose(0, 1)).sin() + h
        ref = (ref @ dw.t()).sin() + ref
    h.output()
    feeds = {x: dx, **dict(zip(ws, dws))}
    return cx, feeds, [h], [ref], lm.float32


def _batched(b, m, k, n):
    """p @ v with v strided along the reduction (attention's second product)."""
    cx = lm.Graph()
    p = cx.tensor((b, m, k))
    v = cx.tensor((b, k, n))
    out = (p @ v).output()
    dp, dv = _data((b, m, k), lm.float32, 11), _data((b, k, n), lm.float32, 12)
    return cx, {p: dp, v: dv}, [out], [dp @ dv], lm.float32


def _column_sum(shape, dtype):
    cx = lm.Graph()
    x = cx.tensor(shape, dtype)
    out = x.sum(0).output()
    dx = _data(shape, dtype, 13)
    return cx, {x: dx}, [out], [dx.sum(0)], dtype


def _elementwise():
    cx = lm.Graph()
    x = cx.tensor((37, 29))
    y = cx.tensor((29,))
    out = ((x.exp() + y) * x.sin()).output()
    dx, dy = _data((37, 29), lm.float32, 4), _data((29,), lm.float32, 5)
    return cx, {x: dx, y: dy}, [out], [(dx.exp() + dy) * dx.sin()], lm.float32


CASES = {
    "elementwise": (_elementwise, {}),
    "sum_warp_vector_bf16": (lambda: _reduce((6, 256), lm.bfloat16, "sum"), {"cuda_reduce": 2}),
    "sum_warp_misaligned_f16": (lambda: _reduce((5, 203), lm.float16, "sum"), {"cuda_reduce": 2}),
    "max_warp_f32": (lambda: _reduce((7, 100), lm.float32, "max"), {"cuda_reduce": 2}),
    "sum_serial_f32": (lambda: _reduce((7, 100), lm.float32, "sum"), {"cuda_reduce": 1}),
    "softmax_f32": (lambda: _reduce((4, 96), lm.float32, "softmax"), {}),
    "matmul_tiled_f32": (lambda: _matmul(70, 50, 90, lm.float32), {"cuda_matmul": 2}),
    "matmul_tiled_bf16_bt": (lambda: _matmul(33, 40, 65, lm.bfloat16, True), {"cuda_matmul": 2}),
    "matmul_mma_bf16": (lambda: _matmul(130, 72, 136, lm.bfloat16), {"cuda_matmul": 3}),
    "matmul_mma_bf16_bt": (lambda: _matmul(40, 64, 136, lm.bfloat16, True), {"cuda_matmul": 3}),
    "matmul_mma_f16_k70": (lambda: _matmul(20, 70, 24, lm.float16), {"cuda_matmul": 3}),
    "matmul_mma_bf16_batched": (lambda: _matmul(24, 32, 16, lm.bfloat16, batch=2),
                                {"cuda_matmul": 3}),
    "gemv_warp_bf16": (lambda: _gemv(512, 48), {"cuda_matmul": 1}),
    "gemv_automatic_bf16": (lambda: _matmul(1, 512, 48, lm.bfloat16, True), {}),
    "matmul_tiled_widened_bf16": (lambda: _widened(70, 45, lm.bfloat16), {"cuda_matmul": 2}),
    "matmul_widened_f16_mma_asked": (lambda: _widened(40, 24, lm.float16), {"cuda_matmul": 3}),
    "gemv_widened_bf16": (lambda: _widened(200, 30, lm.bfloat16), {}),
    "shared_layer_kernels": (_layers, {}),
    "attention_pv_split": (lambda: _batched(2, 3, 80, 40), {}),
    "column_sum_split_bf16": (lambda: _column_sum((100, 37), lm.bfloat16), {"cuda_reduce": 3}),
}


# ---- every CUDA rule's schedule, on the node it rewrites -----------------------------------

RULES = _core.parse_rules(cuda.rewrite_rules("sm_90"), "cuda.rules")


def _schedule(rule):
    """The schedule a rule's right-hand side attaches, read from its text."""
    params = re.findall(r"\((cuda_\w+|inline|epilogue|row|attention) (\d+)\)", rule.text)
    return [(n, int(v)) for n, v in params]


def _scheduled(t, schedule):
    if not schedule:
        return t
    return GraphTensor(t.graph, t.graph._g.scheduled(t.id, schedule), t.st, t.dtype)


def _rows(shape, dtype, op, schedule, axis=-1):
    """A sum or max over `axis` whose reduce node carries `schedule` (a half sum reduces an f32
    Cast of its input, as hl_ops' sum does)."""
    cx = lm.Graph()
    x = cx.tensor(shape, dtype)
    dx = _data(shape, dtype, 21)
    if op == "max":
        out = _scheduled(x.amax(axis), schedule).output()
        return cx, {x: dx}, [out], [dx.amax(axis)], dtype
    out = _scheduled(x.to(lm.float32).sum(axis), schedule).to(dtype).output()
    return cx, {x: dx}, [out], [dx.sum(axis)], dtype


def _normalized_rows(shape, dtype, op, schedule):
    """x - max(x) or x / sum(x) over the last axis, the reduce node carrying `schedule`: with
    row 1 (cuda-row-*) one row kernel, a warp per row (codegen/cuda/row.cc)."""
    cx = lm.Graph()
    x = cx.tensor(shape, dtype)
    dx = _data(shape, dtype, 22)
    if op == "softmax":  # the max and sum of one row kernel, online under row 2
        e = (x - _scheduled(x.amax(-1, keepdim=True), schedule)).exp()
        out = (e / e.sum(-1, keepdim=True)).output()
        return cx, {x: dx}, [out], [torch.softmax(dx.to(TORCH[dtype]), -1).float()], dtype
    if op == "max":
        out = (x - _scheduled(x.amax(-1, keepdim=True), schedule)).output()
        ref = dx.to(TORCH[dtype]) - dx.to(TORCH[dtype]).amax(-1, keepdim=True)
        return cx, {x: dx}, [out], [ref.float()], dtype
    total = _scheduled(x.to(lm.float32).sum(-1, keepdim=True), schedule)
    out = (x.to(lm.float32) / total).to(dtype).output()
    return cx, {x: dx}, [out], [dx / dx.sum(-1, keepdim=True)], dtype


def _attention(b, h, s, t, d, causal, schedule):
    """F.scaled_dot_product_attention (f32), its second matmul carrying `schedule`: with
    attention 1 (cuda-attention) one kernel, a warp per query row (codegen/cuda/attention.cc)."""
    import luminal.nn.functional as LF

    cx = lm.Graph()
    q, k, v = cx.tensor((b, h, s, d)), cx.tensor((b, h, t, d)), cx.tensor((b, h, t, d))
    dq, dk, dv = (_data(x.shape, lm.float32, 30 + i) for i, x in enumerate((q, k, v)))
    out = _scheduled(LF.scaled_dot_product_attention(q, k, v, is_causal=causal), schedule)
    ref = torch.nn.functional.scaled_dot_product_attention(dq, dk, dv, is_causal=causal)
    return cx, {q: dq, k: dk, v: dv}, [out.output()], [ref], lm.float32


def _scheduled_matmul(m, k, n, dtype, schedule, transposed_b=False, doubled=False):
    """a @ b with the reduce node carrying `schedule`, built as hl_ops' matmul builds it (then
    doubled, exactly in any dtype: elementwise work an epilogue may take). As a reduction
    (cuda_matmul 1, metal_matmul 1) each half product rounds to its dtype (like torch's half mul) before the f32
    sum; the tiled and tensor-core kernels multiply exactly, like torch's matmul."""
    cx = lm.Graph()
    a = cx.tensor((m, k), dtype)
    b = cx.tensor((n, k) if transposed_b else (k, n), dtype)
    bt = b.transpose(0, 1) if transposed_b else b
    prod = a.unsqueeze(-1) * bt.unsqueeze(-3)
    if dtype == lm.float32:
        out = _scheduled(prod.sum(-2), schedule)
    else:
        out = _scheduled(prod.to(lm.float32).sum(-2), schedule).to(dtype)
    if doubled:
        out = out * 2
    out.output()
    da, db = _data(a.shape, dtype, 22), _data(b.shape, dtype, 23)
    dbt = db.t() if transposed_b else db
    ref = da @ dbt
    if dtype != lm.float32 and any(n.endswith("_matmul") and v == 1 for n, v in schedule):
        t = TORCH[dtype]
        ref = (da.to(t)[:, :, None] * dbt.to(t)[None, :, :]).float().sum(1)
    if doubled:
        ref = ref * 2
    return cx, {a: da, b: db}, [out], [ref], dtype


def _widened_linear(m, k, n, wdtype, schedule):
    """x @ W.T for an f32 x and a 16-bit W, as nn.Linear builds it, the Cast of W carrying
    `schedule`."""
    cx = lm.Graph()
    x = cx.tensor((m, k))
    w = cx.tensor((n, k), wdtype)
    out = (x @ _scheduled(w.to(lm.float32), schedule).t()).output()
    dx, dw = _data((m, k), lm.float32, 24), _data((n, k), wdtype, 25)
    return cx, {x: dx, w: dw}, [out], [dx @ dw.t()], lm.float32


def _rule_graphs(rule, s=None):
    """(label, builder) for the graphs `rule` applies to, by the node its left side matches,
    with the rule's schedule attached (or `s`). The GEMV's take W(n, k), contiguous along k."""
    s = _schedule(rule) if s is None else s
    lhs = rule.text.split("(schedule")[0]
    if lhs.strip().endswith("(Cast:c ?x)"):  # a half input widened to f32
        return [("bf16_linear", lambda: _widened_linear(3, 200, 37, lm.bfloat16, s)),
                ("f16_linear", lambda: _widened_linear(7, 72, 20, lm.float16, s))]
    if rule.name == "cuda-attention":  # softmax weights @ v (kernel/attention.h)
        return [("causal", lambda: _attention(1, 2, 9, 9, 40, True, s)),
                ("decode", lambda: _attention(2, 3, 1, 70, 16, False, s))]
    gemv = "cuda_matmul 4" in rule.text
    if "epilogue" in rule.name:  # the matmul's readers in its kernel (kernel/epilogue.h)
        dtype = lm.bfloat16 if "Cast" in lhs else lm.float32
        return [("doubled", lambda: _scheduled_matmul(40, 64, 48, dtype, s, True, doubled=True)),
                ("gemv_doubled",
                 lambda: _scheduled_matmul(1, 96, 40, dtype, s, True, doubled=True))]
    if "Cast" in lhs and gemv:
        return [("bf16", lambda: _scheduled_matmul(40, 64, 48, lm.bfloat16, s, True)),
                ("f16_few_rows", lambda: _scheduled_matmul(8, 70, 24, lm.float16, s, True))]
    if "Mul" in lhs and gemv:
        return [("f32", lambda: _scheduled_matmul(20, 200, 37, lm.float32, s, True)),
                ("gemv", lambda: _scheduled_matmul(1, 96, 40, lm.float32, s, True))]
    if "Cast" in lhs:  # a half matmul
        return [("bf16", lambda: _scheduled_matmul(40, 64, 48, lm.bfloat16, s, True)),
                ("f16_few_rows", lambda: _scheduled_matmul(8, 70, 24, lm.float16, s))]
    if "Mul" in lhs:  # an f32 matmul
        return [("f32", lambda: _scheduled_matmul(70, 50, 90, lm.float32, s)),
                ("gemv", lambda: _scheduled_matmul(1, 96, 40, lm.float32, s, True))]
    op = "max" if "MaxReduce" in lhs else "sum"
    if "(row 2)" in rule.text:  # f32 only: a half softmax's max is a half (match_online)
        return [("f32", lambda: _normalized_rows((7, 100), lm.float32, "softmax", s)),
                ("f32_odd", lambda: _normalized_rows((5, 203), lm.float32, "softmax", s))]
    if "(row 1)" in rule.text:
        return [("f32", lambda: _normalized_rows((7, 100), lm.float32, op, s)),
                ("bf16", lambda: _normalized_rows((6, 256), lm.bfloat16, op, s)),
                ("f16_misaligned", lambda: _normalized_rows((5, 203), lm.float16, op, s))]
    return [("f32", lambda: _rows((7, 100), lm.float32, op, s)),
            ("bf16", lambda: _rows((6, 256), lm.bfloat16, op, s)),
            ("f16_misaligned", lambda: _rows((5, 203), lm.float16, op, s)),
            ("columns", lambda: _rows((100, 37), lm.float32, op, s, axis=0))]


RULE_CASES = {f"{r.name}/{label}": (make, {}) for r in RULES for label, make in _rule_graphs(r)}
ALL_CASES = {**CASES, **RULE_CASES}


def _kernels(source):
    return "".join(source.split("\n/* k")[1:])


# What each schedule renders (in the kernels, not the prelude's helpers).
MARKS = {
    (("cuda_reduce", 1),): lambda k: "lm_lane" not in k,
    (("cuda_reduce", 2),): lambda k: "a warp per output, shuffle reduction" in k,
    (("cuda_reduce", 2), ("cuda_vector", 1)): lambda k: "shuffle reduction" in k
    and "lm_raw" not in k,
    (("cuda_reduce", 3),): lambda k: "8 warps split the reduction" in k,
    (("cuda_matmul", 1),): lambda k: "lm_as" not in k and "lm_acc" not in k,
    (("cuda_matmul", 2),): lambda k: "__shared__ float lm_as" in k,
    (("cuda_matmul", 3),): lambda k: "mma.sync" in k and "(lm_acc[i][j], lm_af[i]" in k,
    (("cuda_matmul", 4),): lambda k: "GEMV: a warp per" in k,
    (("cuda_matmul", 4), ("cuda_gemv_split", 4)): lambda k: "GEMV: 4 warps splitting k" in k,
    (("row", 1),): lambda k: k.count("writes b") == 1 and "a warp per row" in k,
    (("row", 2),): lambda k: "in one loop (online)" in k,
    # One kernel, the matmul reading W's 16-bit words.
    (("inline", 1),): lambda k: k.count("writes b") == 1 and "const uint16_t*" in k,
    # One kernel: the matmul and its reader (a half matmul's Cast back to 16 bits, a product).
    (("epilogue", 1),): lambda k: k.count("writes b") == 1,
    (("attention", 1),): lambda k: "attention, a warp per query row" in k,
}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_rule_schedule_renders_its_mapping(rule):
    """The rule cases run the mapping their schedule names (so they cannot pass vacuously),
    and differently from the automatic choice on at least one graph."""
    mark = MARKS[tuple(_schedule(rule))]
    changed = False
    for (label, make), (_, plain) in zip(_rule_graphs(rule), _rule_graphs(rule, [])):
        src = _kernels(cuda.render(make()[0], "sm_90"))
        assert mark(src), f"{rule.name}/{label}:\n{src}"
        changed = changed or src != _kernels(cuda.render(plain()[0], "sm_90"))
    assert changed, f"{rule.name} renders every graph as the automatic choice does"


def emulate_cases(emulator, cases, workdir):
    """Every case of ``cases`` ({name: (builder, choice)}) built and compiled in one
    ``emulator`` (cuda_emu.Emulated, metal_emu.Emulated): (the emulator, the built cases)."""
    built = {name: make() for name, (make, _) in cases.items()}
    items = [(built[n][0], cases[n][1], {}) for n in cases]
    return emulator(items, str(workdir)), built


def check_emulated_case(emulated, cases, name):
    """Case ``name``'s emulated outputs match torch's, every element written."""
    emu, built = emulated
    cx, feeds, outputs, refs, dtype = built[name]
    got = emu.run(list(cases).index(name), feeds, outputs)
    for g, r in zip(got, refs):
        r = r.to(TORCH[dtype]).double().numpy()
        assert not np.isnan(g).any(), "an output element was never written"
        np.testing.assert_allclose(g.reshape(r.shape), r, **TOL[dtype])


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    return emulate_cases(cuda_emu.Emulated, ALL_CASES, tmp_path_factory.mktemp("emu"))


@pytest.mark.parametrize("name", list(ALL_CASES))
def test_emulated_kernels_match_torch(name, emulated):
    check_emulated_case(emulated, ALL_CASES, name)


def test_mapping_chosen_as_asked():
    """The cases above run the mappings they name (so the suite cannot pass vacuously)."""
    from luminal import cuda

    src = {n: cuda.render(make()[0], "sm_90", choice) for n, (make, choice) in CASES.items()}
    assert "lm_mma_bf16(lm_acc" in src["matmul_mma_bf16"]
    assert "lm_mma_f16(lm_acc" in src["matmul_mma_f16_k70"]
    assert "__shared__ float lm_as" in src["matmul_tiled_f32"]
    assert "uint4 lm_raw" in src["sum_warp_vector_bf16"]
    assert "lm_warp_max(" in src["max_warp_f32"]
    assert "lm_warp_sum(v" in src["gemv_warp_bf16"] and "uint4 lm_raw" in src["gemv_warp_bf16"]
    assert "GEMV: a warp per 2 columns" in src["gemv_automatic_bf16"]
    assert "GEMV: a warp per 2 columns" in src["gemv_widened_bf16"]
    # An operand widened in the body: the tiled kernel converts it as it loads; tensor cores
    # take only two half operands.
    for name in ("matmul_tiled_widened_bf16", "matmul_widened_f16_mma_asked"):
        kernel = _kernels(src[name])
        assert "__shared__ float lm_as" in kernel and "_to_f32(b1[" in kernel, name
        assert "lm_mma_" not in kernel, name
    assert "lm_warp" not in src["sum_serial_f32"].split("/* k0")[1]
    assert "8 warps split the reduction" in src["attention_pv_split"]
    assert "8 warps split the reduction" in src["column_sum_split_bf16"]
