"""Implicit GEMM (kernel/window.h): a convolution's matmul scheduled `window 1` gathers its B,
the windows of the input, as the GEMM packs its panels (codegen/c/window.cc), so the windows are
never stored. The rules as this => that and where they do not fire, every windowed kernel
against torch on odd shapes (strides, padding, dilation, groups, 1-D), the fallback where a scheduled matmul gathers nothing, and a search's pick."""

import numpy as np
import pytest
import torch

import luminal as lm
import luminal.nn.functional as F
from luminal import _core

from conftest import CPU_CACHE
from matmul_cases import scheduled
from test_runtime_rules import saturate, schedule_of

WINDOW = [("window", 1)]
CPU_RULES = _core.parse_rules(lm.CpuRuntime(cache_dir=CPU_CACHE).rewrite_rules(), "cpu.rules")
WINDOW_RULES = [r for r in CPU_RULES if "window" in r.name]


def test_window_rules_exist():
    assert {r.name for r in WINDOW_RULES} == {"cpu-matmul-window"}
    assert all(("window", 1) in schedule_of(r) for r in WINDOW_RULES)


@pytest.mark.parametrize("build", ["matmul", "pointwise_conv", "gather_of_data"])
def test_window_rules_skip_matmuls_without_windows(build):
    """No Gather, no window: a plain matmul, a pointwise conv (its input is its columns). The
    condition only asks for a Gather at Int indices, so one at indices read from memory (an
    embedding's rows) is offered too; the lowering reads it as a window where the indices are
    index arithmetic only, and lowers the rest as by default (the last test below)."""
    cx = lm.Graph()
    if build == "matmul":
        (cx.tensor((5, 7)) @ cx.tensor((7, 9))).output()
    elif build == "pointwise_conv":
        F.conv2d(cx.tensor((1, 3, 6, 6)), cx.tensor((4, 3, 1, 1))).output()
    else:
        table = cx.tensor((11, 7))
        rows = table[cx.tensor((9,), lm.int32)]  # (9, 7) gathered rows
        (cx.tensor((5, 7)) @ rows.t()).output()
    _, _, report = saturate(cx, WINDOW_RULES)
    fired = any(r.applied for r in report.rules)
    assert fired == (build == "gather_of_data")


# ---- every windowed kernel against torch -------------------------------------------------

def conv_case(nd, n, c, o, size, kernel, stride=1, padding=0, dilation=1, groups=1, seed=0):
    """conv{nd}d of an (n, c, *size) input and an (o, c // groups, *kernel) weight, torch's
    result in float64, and the graph's output before scheduling."""
    cx = lm.Graph()
    shape_x = (n, c) + (size,) * nd
    shape_w = (o, c // groups) + (kernel,) * nd
    x, w = cx.tensor(shape_x, name="x"), cx.tensor(shape_w, name="w", parameter=True)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    y = conv(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    gen = torch.Generator().manual_seed(seed)
    dx, dw = torch.randn(shape_x, generator=gen) * 10, torch.randn(shape_w, generator=gen)
    tconv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d,
             3: torch.nn.functional.conv3d}[nd]
    want = tconv(dx.double(), dw.double(), stride=stride, padding=padding, dilation=dilation,
                 groups=groups)
    return cx, {x: dx, w: dw}, y, want


def run_cpu(cx, feeds, out):
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx, None)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute({})
    return np.asarray(rt.get(out)), rt._rt.program_text(), rt.source


def run_searched(cx, feeds, out, budget):
    """The program a search of ``budget`` keeps (uncached) run on ``feeds``: its output of
    ``out`` and its program text."""
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE), budget, cache=False)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute({})
    return np.asarray(rt.get(out)), rt._rt.program_text()


def check(got, want):
    want = want.float().numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5 * scale)


# K past one k block (c * k * k = 288 > 256), N past one panel and not a multiple of it
# (positions 17 * 17), M not a multiple of the 6-row block, stride and dilation that skip
# input, padding on one side only, groups (a batch of matmuls), 1-D windows.
CASES = {
    "3x3_same": dict(nd=2, n=2, c=5, o=7, size=9, kernel=3, padding=1),
    "3x3_deep_k": dict(nd=2, n=1, c=32, o=13, size=17, kernel=3, padding=1),
    "7x7_stride2": dict(nd=2, n=2, c=3, o=8, size=20, kernel=7, stride=2, padding=3),
    "1x1_stride2": dict(nd=2, n=3, c=6, o=5, size=11, kernel=1, stride=2),
    "dilated_unpadded": dict(nd=2, n=1, c=4, o=6, size=12, kernel=3, dilation=2),
    "asymmetric_padding": dict(nd=2, n=2, c=3, o=4, size=8, kernel=4, padding="same"),
    "groups": dict(nd=2, n=2, c=8, o=6, size=7, kernel=3, padding=1, groups=2),
    "conv1d": dict(nd=1, n=2, c=80, o=12, size=37, kernel=3, stride=2, padding=1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_windowed_conv_matches_torch(name):
    cx, feeds, y, want = conv_case(**CASES[name])
    out = scheduled(y, WINDOW).output()
    got, program, source = run_cpu(cx, feeds, out)
    assert "b=window" in program, program
    assert "const int64_t r0 = pc + kk;" in source  # the panel gathered as it is packed
    assert "lm_wrun[lm_wruns++] = j;" in source  # as runs of copies (c/window.cc)
    check(got, want)
    # the default program stores the windows in a kernel of their own
    cx, feeds, y, _ = conv_case(**CASES[name])
    _, stored, _ = run_cpu(cx, feeds, y.output())
    assert "b=window" not in stored
    assert program.count("(kernel") == stored.count("(kernel") - 1, (program, stored)


def test_a_scheduled_matmul_without_windows_lowers_as_by_default():
    cx = lm.Graph()
    a, b = cx.tensor((5, 40), name="a"), cx.tensor((40, 9), name="b")
    out = scheduled(a @ b, WINDOW).output()
    da, db = torch.randn(5, 40), torch.randn(40, 9)
    got, program, _ = run_cpu(cx, {a: da, b: db}, out)
    assert "b=window" not in program and "(matmul" in program
    check(got, da.double() @ db.double())


def test_search_picks_a_correct_conv_program():
    """The search (candidates include the windowed matmul) keeps a program equal to torch."""
    cx, feeds, y, want = conv_case(**CASES["3x3_same"])
    got, _ = run_searched(cx, feeds, y.output(), 6)
    check(got, want)


def test_the_cost_models_pick_gathers_the_windows():
    """At budget 1 (the cost model's pick, no timing) a convolution's matmul reads its windows
    through the Gather: they are never stored (benchmarks/conv.py: 18-40% faster than the
    stored windows on ResNet-18's stem and 64- and 128-channel layers, within 6% on the rest).
    More output channels than the GEMV's rows, as any but a toy network's (for fewer the GEMV
    is priced below either)."""
    cx, feeds, y, want = conv_case(nd=2, n=2, c=16, o=24, size=12, kernel=3, padding=1)
    got, program = run_searched(cx, feeds, y.output(), 1)
    assert "b=window" in program
    check(got, want)
