"""The bf16 GEMM on AMX tiles (schedule bf16_dot 2, codegen/c/amx.cc): what it does beside the
bf16 dot products' tests, which tests/test_bf16_dot.py runs for it too (odd shapes, both forms
of the product, a batch with an epilogue, a weight laid out once): a transposed A (staged
through the stack), the GEMV path for few rows, the search timing it and the cost model's pick;
offered as rules only where the machine has AMX and the dot products are allowed; refused
where it cannot run or with a block of its own."""

import numpy as np
import pytest
import torch

import luminal as lm
from luminal.nn import Linear

from conftest import CpuRuntime
from matmul_cases import scheduled
from test_bf16_dot import (bf16, close, expected, needs_amx, needs_dot, prefill_linear, run,
                           search_prefill_linear, widened)



@needs_amx
@pytest.mark.parametrize("m", [5, 40])
def test_a_transposed_a_is_staged_and_matches_torch(m):
    """A read along m (ak != 1) cannot be a tile's rows: each step is staged on the stack."""
    cx = lm.Graph()
    at_ = cx.tensor((70, m), lm.bfloat16, "at")
    b = cx.tensor((70, 50), lm.bfloat16, "b")
    y = scheduled(widened(at_).t() @ widened(b), [("bf16_dot", 2)]).output()
    a_t, bt = bf16((70, m), 10), bf16((70, 50), 11)
    rt, got = run(cx, [(at_, a_t), (b, bt)], y)
    assert "tdpbf16ps" in rt.source
    close(got, expected(a_t.T, bt))


@needs_amx
def test_few_rows_of_a_block_take_the_dot_products_on_the_same_panels():
    """A block of up to kAmxFewRows real rows (a decode step; a prompt's last rows) runs the
    bf16 dot products' micro-kernel of its rows on the weight's pair panels, not the tiles' 32
    rows: every M from 1 to 4 and a last block of 1 to 4 rows past 32, against torch."""
    cx = lm.Graph()
    x = cx.tensor(("m", 96), lm.bfloat16, "x")
    w = cx.tensor((70, 96), lm.bfloat16, "w", parameter=True)
    y = scheduled(widened(x) @ widened(w).t(), [("bf16_dot", 2), ("pack_b", 1),
                                                ("tile_k", 1024)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "tdpbf16ps" in rt.source and "lm_mmbf_4x32(" in rt.source
    wt = bf16((70, 96), 3)
    rt.set_data(w, wt)
    for m in (1, 2, 3, 4, 5, 33, 36, 37):
        xt = bf16((m, 96), m)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        close(rt.get(y), expected(xt, wt.T))


@needs_amx
def test_the_search_times_amx_tiles_and_keeps_a_correct_program():
    """The AMX tiles are among the candidates the search verifies and times for
    prefill_linear, and what it keeps matches torch."""
    report = search_prefill_linear(*prefill_linear(), CpuRuntime())
    assert any("bf16_dot=2" in c.choice and c.status == "ok" for c in report.candidates), report


@needs_amx
def test_the_cost_models_pick_takes_amx_tiles_for_a_prefill():
    cx = lm.Graph()
    x = cx.tensor((130, 192), name="x")
    lin = Linear(192, 96, bias=False, dtype=lm.bfloat16, activations="bf16")
    y = lin(x).output()
    rt = cx.search(CpuRuntime(), 1, cache=False, progress=False)
    winner = cx.last_search_report.winner_program
    assert "(bf16_dot 2)" in winner, winner
    xt, wt = torch.randn(130, 192), bf16((96, 192), 9)
    rt.set_data(x, xt)
    rt.set_data(lin.weight.tensor(cx), wt)
    rt.execute({})
    close(rt.get(y), expected(xt.to(torch.bfloat16), wt.T))


def test_amx_rules_are_offered_only_with_16_wide_vectors_and_dot_products():
    assert "cpu-matmul-bf16-amx" not in lm.CpuRuntime(cache_dir="", vector_width=8).rewrite_rules()
    assert "cpu-matmul-bf16-amx" not in CpuRuntime(dot_products=False).rewrite_rules()


def _amx_matmul(schedule):
    cx = lm.Graph()
    a = cx.tensor((5, 7), lm.bfloat16, "a")
    b = cx.tensor((7, 9), lm.bfloat16, "b")
    scheduled(widened(a) @ widened(b), schedule).output()
    return cx


def test_amx_is_refused_where_it_cannot_run():
    with pytest.raises(lm.CompileError, match="bf16_dot 2 needs 16-wide vectors"):
        CpuRuntime(vector_width=8)._load(_amx_matmul([("bf16_dot", 2)]))
    with pytest.raises(lm.CompileError, match="dot_products"):
        CpuRuntime(dot_products=False)._load(_amx_matmul([("bf16_dot", 2)]))
    with pytest.raises(lm.CompileError, match="bf16_dot must be 0, 1 or 2"):
        CpuRuntime()._load(_amx_matmul([("bf16_dot", 3)]))


@needs_amx
def test_amx_takes_no_block_of_its_own():
    with pytest.raises(lm.CompileError, match="AMX's 32 x 32 block"):
        CpuRuntime()._load(_amx_matmul([("bf16_dot", 2), ("tile_m", 8)]))


@pytest.mark.parametrize("bf16_dot", [pytest.param(1, marks=needs_dot),
                                      pytest.param(2, marks=needs_amx)])
@pytest.mark.parametrize("m", [1, 7, 16, 17, 40])
def test_few_rows_stream_b_through_the_gemv_and_match_torch(bf16_dot, m):
    """gemv_rows with the bf16 dot products (a tied LM head, whose weight is not laid out as
    panels): up to 16 rows the GEMV, A's bf16 words widened as they are copied; past them the
    dot products' GEMM. One program, M bound at run time."""
    cx = lm.Graph()
    x = cx.tensor(("m", 96), lm.bfloat16, "x")
    w = cx.tensor((70, 96), lm.bfloat16, "w")
    schedule = [("bf16_dot", bf16_dot), ("gemv_rows", 16)]
    y = scheduled(widened(x) @ widened(w).t(), schedule).output()
    xt, wt = bf16((m, 96), 12), bf16((70, 96), 13)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_gemv_" in rt.source
    rt.set_data(x, xt)
    rt.set_data(w, wt)
    rt.execute({"m": m})
    close(rt.get(y), expected(xt, wt.T))
