"""Fused attention (kernel/attention.h, codegen/c/attention.cc): `attention 1` on the second
matmul of softmax(q @ k^T * scale + mask) @ v (the rule cpu-attention) computes the scores,
their max and sum in that matmul's kernel, query tiles streaming over key tiles with the online
softmax. The rule as this => that and on the graphs F.scaled_dot_product_attention and nn
attention build (with symbolic lengths); every fused kernel against torch on odd shapes, with
causal, additive and boolean masks, fully masked rows, large logits, GQA and the decode case;
random attention graphs against NativeRuntime; the CUDA rendering (the rule cuda-attention)
compiled by NVRTC and run in the CPU emulator against torch. Not the unfused kernels
(test_row_fusion.py)."""


import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import luminal as lm
import luminal.nn as nn
import luminal.nn.functional as F
from luminal import _core, cuda

import cuda_emu
from conftest import CPU_CACHE, assert_close
from matmul_cases import scheduled

CPU_RULES = _core.parse_rules(lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(), "cpu.rules")
RULE = next(r for r in CPU_RULES if r.name == "cpu-attention")
CUDA_RULES = _core.parse_rules(cuda.rewrite_rules("sm_90"), "cuda.rules")
CUDA_RULE = next(r for r in CUDA_RULES if r.name == "cuda-attention")


def saturate(cx, rules):
    g = _core.EGraph()
    roots = g.add_graph(cx._g)
    report = g.run(rules, _core.RunnerLimits())
    return g, roots, report


def attention_program(cx):
    """cx's graph with every SumReduce scheduled attention 1 (those whose cone is not
    attention lower as by default), as a program to load."""
    lines = []
    for line in _core.identity_program(cx._g).text().splitlines():
        if line.strip().startswith("(SumReduce"):
            line = line[:-1] + " (schedule (attention 1)))"
        lines.append(line)
    return _core.parse_program("\n".join(lines), cx._g)


def sdpa_graph(b, h, hk, s, t, d, mask=None, causal=False, scale=None, dv=None):
    """F.scaled_dot_product_attention over q (b, h, s, d), k (b, hk, t, d), v (b, hk, t, dv);
    `mask`: None, "float" (an additive (s, t) input) or "bool" (a (b, 1, s, t) input)."""
    cx = lm.Graph()
    q = cx.tensor((b, h, s, d), name="q")
    k = cx.tensor((b, hk, t, d), name="k")
    v = cx.tensor((b, hk, t, dv or d), name="v")
    inputs = {"q": q, "k": k, "v": v}
    m = None
    if mask == "float":
        m = inputs["mask"] = cx.tensor((s, t), name="mask")
    elif mask == "bool":
        m = inputs["mask"] = cx.tensor((b, 1, s, t), lm.bool_, name="mask")
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, scale=scale,
                                       enable_gqa=h != hk).output()
    return cx, inputs, y


def sdpa_data(shapes, mask, kind, seed=0):
    """Torch inputs for sdpa_graph: `kind` plain, large (|scores| ~ 100), masked (-inf in a
    float mask, False in a bool one) or fully_masked (the last row of every head sees no key)."""
    g = torch.Generator().manual_seed(seed)
    data = {n: torch.randn(shapes[n], generator=g) for n in ("q", "k", "v")}
    if kind == "large":
        data["q"] = data["q"] * 10
        data["k"] = data["k"] * 10
    if mask == "float":
        m = torch.randn(shapes["mask"], generator=g)
        if kind in ("masked", "fully_masked"):
            m = m.masked_fill(torch.rand(m.shape, generator=g) < 0.3, -float("inf"))
        if kind == "fully_masked":
            m[-1] = -float("inf")
        data["mask"] = m
    elif mask == "bool":
        m = torch.rand(shapes["mask"], generator=g) > 0.3
        if kind == "fully_masked":
            m[..., -1, :] = False
        data["mask"] = m
    return data


def torch_sdpa(data, causal, scale, gqa):
    q, k, v = data["q"], data["k"], data["v"]
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=data.get("mask"), is_causal=causal, scale=scale, enable_gqa=gqa)
    # torch's math kernel gives NaN where a row sees no key; sdpa (and we) give 0
    return torch.nan_to_num(out, nan=0.0)


def run_fused(cx, inputs, y, data, dims=None):
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, attention_program(cx))
    assert "(attention rows=" in rt._rt.program_text()
    for name, t in inputs.items():
        rt.set_data(t, data[name])
    cx.dyn_map.update(dims or {})
    rt.execute(cx.dyn_map)
    return rt.get(y)


# ---- the rule: this => that, and where it fires ------------------------------------------------

@pytest.mark.parametrize("rule", [RULE, CUDA_RULE], ids=lambda r: r.name)
def test_attention_rule_this_gives_that(rule):
    cx = lm.Graph()
    x, v = cx.tensor((3, "n")), cx.tensor(("n", 5))
    this = x.softmax(-1) @ v
    that = scheduled(this, [("attention", 1)])
    this.output()
    that.output()
    g, (r_this, r_that), _ = saturate(cx, [])
    assert not g.equivalent(r_this, r_that)
    g, (r_this, r_that), report = saturate(cx, [rule])
    assert g.equivalent(r_this, r_that)
    assert report.rejected_merges == 0


def test_attention_rule_needs_softmax_weights():
    cx = lm.Graph()
    (cx.tensor((3, 4)) @ cx.tensor((4, 5))).output()
    (cx.tensor((3, 4)).exp2() @ cx.tensor((4, 5))).output()
    _, _, report = saturate(cx, [RULE])
    assert report.rules[0].applied == 1  # the second only


@pytest.mark.parametrize("mask,causal,gqa", [(None, False, False), (None, True, False),
                                             ("float", False, False), ("bool", False, True)])
def test_attention_rule_fires_on_sdpa_with_symbolic_lengths(mask, causal, gqa):
    cx = lm.Graph()
    q = cx.tensor(("b", 4, "s", 8))
    k = cx.tensor(("b", 2 if gqa else 4, "t", 8))
    v = cx.tensor(("b", 2 if gqa else 4, "t", 8))
    m = None
    if mask == "float":
        m = cx.tensor(("s", "t"))
    elif mask == "bool":
        m = cx.tensor(("b", 1, "s", "t"), lm.bool_)
    F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal,
                                   enable_gqa=gqa).output()
    _, _, report = saturate(cx, [RULE])
    assert report.rules[0].applied == 1


def test_attention_rule_fires_on_nn_attention():
    cx = lm.Graph()
    x = cx.tensor(("b", "s", 16), name="x")
    nn.MultiHeadAttention(16, 4, 2)(x, causal=True).output()
    _, _, report = saturate(cx, [RULE])
    assert report.rules[0].applied == 1


def test_the_search_space_holds_the_fused_and_the_unfused_program():
    cx, _, _ = sdpa_graph(1, 2, 2, "s", "s", 8, causal=True)
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = _core.SearchSpace(cx._g, rt.rewrite_rules(), _core.RunnerLimits(), rt._rt)
    assert [("attention", 1)] in space.schedules()
    texts = [p.text() for p in space.extract(64, {})]
    assert any("(attention 1)" in t for t in texts)
    assert any("(attention 1)" not in t for t in texts)


def test_the_cost_models_pick_on_the_cpu_is_fused():
    cx, _, _ = sdpa_graph(1, 4, 4, 256, 256, 64, causal=True)
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = _core.SearchSpace(cx._g, rt.rewrite_rules(), _core.RunnerLimits(), rt._rt)
    assert "(attention 1)" in space.extract(1, {})[0].text()


def test_a_bad_attention_schedule_is_refused():
    cx, _, _ = sdpa_graph(1, 2, 2, 8, 8, 8)
    text = attention_program(cx).text().replace("(attention 1)", "(attention 3)")
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    with pytest.raises(lm.LuminalError, match="attention must be 0 to 1"):
        rt._load(cx, _core.parse_program(text, cx._g))


# ---- every fused kernel against torch ------------------------------------------------------------

SHAPES = [  # b, h, hk, s, t, d: s and t not multiples of the 16-row and 64-key tiles
    (1, 2, 2, 37, 37, 16), (2, 4, 2, 5, 130, 8), (1, 1, 1, 70, 5, 64), (1, 3, 1, 1, 67, 32),
    (1, 4, 2, 150, 131, 16)]  # the last: three query tiles share each packed key tile
KINDS = ["plain", "large", "masked", "fully_masked"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("mask", [None, "causal", "float", "bool"])
@pytest.mark.parametrize("kind", KINDS)
def test_fused_sdpa_matches_torch(shape, mask, kind):
    b, h, hk, s, t, d = shape
    if mask in (None, "causal") and kind in ("masked", "fully_masked"):
        pytest.skip("no mask to mask with")
    causal = mask == "causal"
    mask = None if causal else mask
    cx, inputs, y = sdpa_graph(b, h, hk, s, t, d, mask, causal)
    shapes = {"q": (b, h, s, d), "k": (b, hk, t, d), "v": (b, hk, t, d),
              "mask": (s, t) if mask == "float" else (b, 1, s, t)}
    data = sdpa_data(shapes, mask, kind)
    want = torch_sdpa(data, causal, None, h != hk)
    assert_close(run_fused(cx, inputs, y, data), want, rtol=2e-4, atol=2e-4)


def test_fused_sdpa_with_symbolic_lengths_and_other_value_width():
    cx, inputs, y = sdpa_graph(2, 2, 2, "s", "t", 16, "float", scale=0.3, dv=24)
    for s, t in [(19, 77), (1, 5)]:
        shapes = {"q": (2, 2, s, 16), "k": (2, 2, t, 16), "v": (2, 2, t, 24), "mask": (s, t)}
        data = sdpa_data(shapes, "float", "masked", seed=s)
        want = torch_sdpa(data, False, 0.3, False)
        got = run_fused(cx, inputs, y, data, {"s": s, "t": t})
        assert_close(got, want, rtol=2e-4, atol=2e-4)


def test_fused_sdpa_packs_the_keys_of_heads_in_groups():
    """30 heads of 10 key tiles each: more than one pack holds (256 tiles of 64 keys of 64
    features), so the heads run in two groups, each packed, then attended."""
    b, h, s, d = 1, 30, 600, 64
    cx, inputs, y = sdpa_graph(b, h, h, s, s, d, causal=True)
    shapes = {"q": (b, h, s, d), "k": (b, h, s, d), "v": (b, h, s, d)}
    data = sdpa_data(shapes, None, "plain")
    want = torch_sdpa(data, True, None, False)
    assert_close(run_fused(cx, inputs, y, data), want, rtol=2e-4, atol=2e-4)


def test_attention_whose_values_move_with_the_queries_is_not_fused():
    """v read per query row (out[i] = sum_j p_ij v[i, j]): no tile of keys serves every query
    row, which the fused kernel's tiles need; it runs unfused, and right."""
    s, t, d = 70, 67, 16
    cx = lm.Graph()
    q, k = cx.tensor((s, d), name="q"), cx.tensor((t, d), name="k")
    v = cx.tensor((s, t, d), name="v")
    y = ((q @ k.transpose(0, 1)).softmax(-1).unsqueeze(-1) * v).sum(1).output()
    g = torch.Generator().manual_seed(0)
    data = {"q": torch.randn(s, d, generator=g), "k": torch.randn(t, d, generator=g),
            "v": torch.randn(s, t, d, generator=g)}
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, attention_program(cx))
    assert "(attention rows=" not in rt._rt.program_text()
    for name, tensor in {"q": q, "k": k, "v": v}.items():
        rt.set_data(tensor, data[name])
    rt.execute(cx.dyn_map)
    want = ((data["q"] @ data["k"].T).softmax(-1)[..., None] * data["v"]).sum(1)
    assert_close(rt.get(y), want, rtol=2e-4, atol=2e-4)


def test_fused_decode_one_query_over_symbolic_cached_keys():
    """The decode step: one query row per head over p keys, p symbolic, GQA."""
    cx, inputs, y = sdpa_graph(1, 8, 2, 1, "p", 64)
    for p in (1, 63, 200):
        shapes = {"q": (1, 8, 1, 64), "k": (1, 2, p, 64), "v": (1, 2, p, 64)}
        data = sdpa_data(shapes, None, "large", seed=p)
        got = run_fused(cx, inputs, y, data, {"p": p})
        assert_close(got, torch_sdpa(data, False, None, True), rtol=2e-4, atol=2e-4)


def test_fused_nn_attention_matches_torch():
    """nn.MultiHeadAttention (GQA, causal) with its attention fused, against torch's sdpa on
    the same projections."""
    torch.manual_seed(0)
    layer = nn.MultiHeadAttention(32, 4, 2)
    cx = lm.Graph()
    x = cx.tensor((2, "s", 32), name="x")
    y = layer(x, causal=True).output()
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, attention_program(cx))
    assert "(attention rows=" in rt._rt.program_text()
    weights = {name: torch.randn(tuple(p.shape)) * 0.3 for name, p in layer.named_parameters()}
    layer.load_state_dict(rt, weights)
    data = torch.randn(2, 13, 32)
    rt.set_data(x, data)
    cx.set_dim("s", 13)
    rt.execute(cx.dyn_map)

    def proj(name, heads):
        return (data @ weights[f"{name}.weight"].T).view(2, 13, heads, 8).transpose(1, 2)

    q, k, v = proj("q_proj", 4), proj("k_proj", 2), proj("v_proj", 2)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                         enable_gqa=True)
    want = o.transpose(1, 2).reshape(2, 13, 32) @ weights["o_proj.weight"].T
    assert_close(rt.get(y), want, rtol=2e-4, atol=2e-4)


# ---- random attention graphs: every program the rule produces matches NativeRuntime --------

@settings(max_examples=8, deadline=None)
@given(st.integers(1, 2), st.sampled_from([(1, 1), (2, 2), (4, 2)]), st.integers(1, 40),
       st.integers(5, 90), st.sampled_from([5, 16, 33]),
       st.sampled_from([None, "causal", "float", "bool"]), st.sampled_from([None, 0.05, 2.0]),
       st.integers(0, 1000))
def test_random_attention_programs_match_native(b, heads, s, t, d, mask, scale, seed):
    from luminal.search.check import _run
    from luminal.search.check import random_inputs

    h, hk = heads
    causal = mask == "causal"
    cx, inputs, y = sdpa_graph(b, h, hk, s, t, d, None if causal else mask, causal, scale)
    feeds = random_inputs(cx._g, {}, seed)
    native = _core.NativeRuntime()
    native.compile(cx._g)
    want = _run(native, cx._g.inputs(), cx._g.outputs(), feeds, {})
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = _core.SearchSpace(cx._g, RULE.text, _core.RunnerLimits(), rt._rt)
    fused = 0
    for program in space.extract(4, {}):
        rt._rt.compile(program.graph)
        fused += "(attention rows=" in rt._rt.program_text()
        got = _run(rt._rt, program.inputs, program.outputs, feeds, {})
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_, rtol=2e-4, atol=2e-4, equal_nan=True)
    assert fused >= 1  # the generic rules (hoisting a reciprocal) may give it more than one form


# ---- CUDA: NVRTC for sm_80 / sm_90, and the CPU emulator against torch -------------------------




@pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("mask", [None, "causal", "float"])
def test_cuda_attention_compiles_with_nvrtc(arch, mask):
    cx, _, _ = sdpa_graph(1, 4, 2, "s", "s", 64, None if mask == "causal" else mask,
                          mask == "causal")
    src = _core.cuda_render(attention_program(cx).graph, arch, _core.TuningChoice())
    assert "attention, a warp per query row" in src
    assert _core.cuda_nvrtc_compile(src, arch, cuda.find_nvrtc()) > 0


@pytest.mark.skipif(cuda_emu.compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("mask,kind", [(None, "large"), ("causal", "plain"),
                                       ("float", "fully_masked"), ("bool", "masked")])
def test_cuda_attention_matches_torch_in_the_emulator(mask, kind, tmp_path_factory):
    b, h, hk, s, t, d = 1, 2, 1, 5, 37, 40  # d over a warp: two features per lane, one idle
    causal = mask == "causal"
    mask = None if causal else mask
    cx, inputs, y = sdpa_graph(b, h, hk, s, t, d, mask, causal)
    shapes = {"q": (b, h, s, d), "k": (b, hk, t, d), "v": (b, hk, t, d),
              "mask": (s, t) if mask == "float" else (b, 1, s, t)}
    data = sdpa_data(shapes, mask, kind)
    program = attention_program(cx)
    src = _core.cuda_render(program.graph, "sm_90", _core.TuningChoice())
    assert "attention, a warp per query row" in src
    feeds = {inputs[n]: v for n, v in data.items()}
    got = cuda_emu.run_program(cx, program, feeds, y, tmp_path_factory.getbasetemp())
    want = torch_sdpa(data, causal, None, h != hk)
    assert_close(got.reshape(want.shape), want, rtol=2e-4, atol=2e-4)
