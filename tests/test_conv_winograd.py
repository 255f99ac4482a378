"""Winograd's F(m x m, 3x3), m = 2 or 4 (kernel/winograd.h, codegen/c/winograd.cc): a 3x3
stride-1 convolution's window matmul scheduled `winograd m` beside `window 1` transforms tiles
and filters, multiplies them in (m + 2)^2 GEMMs and transforms back. Every such convolution against torch
on odd shapes (partial tiles, channels past no vector, out channels past a panel, padding 0 to
2, a non-square and a transposed input); the convolutions it does not take (stride, dilation,
groups, other kernels) lowered as the window matmul; the cost model's pick and a search."""

import pytest
import torch

import luminal as lm
import luminal.nn.functional as F
from luminal import _core

from matmul_cases import scheduled
from test_conv_window import CPU_RULES, check, run_cpu, run_searched
from test_runtime_rules import schedule_of

TILES = [2, 4]


def winograd(tile):
    return [("window", 1), ("winograd", tile)]


def test_the_winograd_rules_offer_both_tiles_beside_the_window():
    rules = [r for r in CPU_RULES if "winograd" in r.name]
    assert [r.name for r in rules] == ["cpu-conv-winograd", "cpu-conv-winograd-4"]
    for rule, tile in zip(rules, TILES):
        assert set(winograd(tile)) <= set(schedule_of(rule))


def conv(n, c, o, h, w, padding=1, stride=1, dilation=1, groups=1, kernel=3,
         transposed=False, seed=0):
    """The graph of conv2d of an (n, c, h, w) input (given as (n, c, w, h) and transposed where
    ``transposed``) by an (o, c // groups, kernel, kernel) weight, its feeds, its output, and
    torch's result in float64."""
    cx = lm.Graph()
    gen = torch.Generator().manual_seed(seed)
    dx = torch.randn(n, c, h, w, generator=gen) * 3
    dw = torch.randn(o, c // groups, kernel, kernel, generator=gen)
    if transposed:
        x = cx.tensor((n, c, w, h), name="x")
        feeds = {x: dx.transpose(2, 3).contiguous()}
        xin = x.permute(0, 1, 3, 2)
    else:
        x = cx.tensor((n, c, h, w), name="x")
        feeds = {x: dx}
        xin = x
    wt = cx.tensor(tuple(dw.shape), name="w", parameter=True)
    feeds[wt] = dw
    y = F.conv2d(xin, wt, stride=stride, padding=padding, dilation=dilation, groups=groups)
    want = torch.nn.functional.conv2d(dx.double(), dw.double(), stride=stride, padding=padding,
                                      dilation=dilation, groups=groups)
    return cx, feeds, y, want


CASES = {
    "same": dict(n=2, c=5, o=7, h=9, w=9),                # odd outputs: partial tiles
    "deep": dict(n=1, c=48, o=70, h=12, w=12),           # out channels past one panel
    "unpadded": dict(n=2, c=16, o=24, h=10, w=11, padding=0),
    "padding2": dict(n=3, c=3, o=4, h=8, w=8, padding=2),
    "wide": dict(n=1, c=8, o=16, h=5, w=23),
    "one_row": dict(n=2, c=4, o=6, h=1, w=9),            # a single output row
    "transposed": dict(n=2, c=6, o=10, h=9, w=14, transposed=True),  # columns not contiguous
}


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("name", list(CASES))
def test_every_winograd_conv_matches_torch(name, tile):
    cx, feeds, y, want = conv(**CASES[name])
    out = scheduled(y, winograd(tile)).output()
    got, program, source = run_cpu(cx, feeds, out)
    assert f"b=window winograd={tile}" in program, program
    assert f"Winograd F({tile}x{tile}, 3x3)" in source
    check(got, want)


NOT_TAKEN = {
    "stride2": dict(n=2, c=3, o=4, h=8, w=8, stride=2),
    "dilated": dict(n=1, c=4, o=6, h=12, w=12, dilation=2),
    "groups": dict(n=2, c=8, o=6, h=7, w=7, groups=2),
    "5x5": dict(n=1, c=3, o=5, h=9, w=9, kernel=5, padding=2),
}


@pytest.mark.parametrize("name", list(NOT_TAKEN))
def test_convolutions_winograd_does_not_take_run_the_window_matmul(name):
    cx, feeds, y, want = conv(**NOT_TAKEN[name])
    out = scheduled(y, winograd(2)).output()
    got, program, source = run_cpu(cx, feeds, out)
    assert "b=window" in program and "winograd" not in program, program
    assert "Winograd" not in source
    check(got, want)


def test_the_cost_models_pick_and_a_search_run_winograd_where_it_prices_below():
    """Budget 1 (the cost model's pick): a 32-channel layer over 128 tiles prices Winograd's 16
    GEMMs and transforms below the window GEMM; a search (candidates timed and checked
    against the interpreter) keeps a program equal to torch."""
    cx, feeds, y, want = conv(n=2, c=32, o=32, h=16, w=16)
    got, program = run_searched(cx, feeds, y.output(), 1)
    assert " winograd" in program
    check(got, want)
    cx, feeds, y, want = conv(n=2, c=32, o=32, h=16, w=16, seed=1)
    got, _ = run_searched(cx, feeds, y.output(), 4)
    check(got, want)


def test_the_cost_model_keeps_the_window_where_the_filters_transform_outweighs_the_tiles():
    """One 4x4 image through 256 -> 256 channels: 4 tiles (1 for F(4x4)) against 65536 filter
    pairs transformed on every call (benchmarks/conv.py: 512 -> 512 at one 7x7 image, 2.0 ms
    windowed against 4.7 ms F(2x2)); the cost model's pick is no Winograd there."""
    cx, feeds, y, want = conv(n=1, c=256, o=256, h=4, w=4)
    got, program = run_searched(cx, feeds, y.output(), 1)
    assert "winograd" not in program
    check(got, want)


def matmul_cycles(**case_and_schedule):
    """The runtime's estimate (cpu_kernel_work's matmul_cycles) of the convolution's kernel."""
    schedule = case_and_schedule.pop("schedule")
    cx, _, y, _ = conv(**case_and_schedule)
    scheduled(y, schedule).output()
    return sum(w.matmul_cycles for w in _core.cpu_kernel_work(cx._g, _core.TuningChoice(), {}))


def test_a_window_winograd_does_not_take_is_priced_as_the_window_matmul():
    """A stride-2 convolution scheduled winograd runs the window matmul (above) and is priced
    so; a 3x3 stride-1 one of 128 tiles is priced below it."""
    strided = dict(n=2, c=32, o=32, h=16, w=16, stride=2)
    assert matmul_cycles(**strided, schedule=winograd(2)) == \
        matmul_cycles(**strided, schedule=[("window", 1)])
    plain = dict(n=2, c=32, o=32, h=16, w=16)
    assert matmul_cycles(**plain, schedule=winograd(2)) < \
        matmul_cycles(**plain, schedule=[("window", 1)])
