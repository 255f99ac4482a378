"""CPU kernels that read quantized weights (codegen/c/quant.cc), against the interpreter's
dequantization (core/quant.h; itself checked against gguf-py in test_quant_dtype.py) on odd
shapes: K a multiple of the block, N odd, M = 1..8 (one program, symbolic M). The quantized
GEMV (the weight's Cast scheduled inline 1: cpu-widen-quantized) for few rows and the GEMM
with panels dequantized as they are packed for more (K past one k block, N past one panel,
M past the row tile, a folded batch and an epilogue), the default program
(an f32 copy dequantized by a generic kernel, then the f32 matmul), a batched and an epilogue
case, and a Gather of embedding rows dequantized in its kernel."""

import re

import numpy as np
import pytest
import torch

import luminal as lm
from luminal.weights.gguf import dequantize

from conftest import CpuRuntime
from matmul_cases import WIDTH, check, scheduled

QTYPES = [lm.dtype.q8_0, lm.dtype.q4_0, lm.dtype.q4_k, lm.dtype.q5_k, lm.dtype.q6_k]
GATHERED_BLOCKS = re.compile(r"lm_\w+_at\(\(const uint8_t\*\)b\d+, g\d+\)")
SCALE_AT = {lm.dtype.q8_0: [0], lm.dtype.q4_0: [0], lm.dtype.q4_k: [0, 2], lm.dtype.q5_k: [0, 2],
            lm.dtype.q6_k: [208]}  # byte offsets of each block's f16 scales


def random_weight(dtype, rows, k, seed=0):
    """Raw random blocks with finite, modest scales (f16 1/64, bits 0x2400)."""
    values, nbytes = lm._core.block_values(dtype), lm._core.block_bytes(dtype)
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (rows, k // values, nbytes), dtype=np.uint8)
    for at in SCALE_AT[dtype]:
        raw[:, :, at] = 0x00
        raw[:, :, at + 1] = 0x24
    return raw.reshape(rows, k // values * nbytes)


def linear(k, n, dtype, inline=True, batch=None):
    cx = lm.Graph()
    x = cx.tensor(("m", k) if batch is None else (batch, "m", k))
    w = cx.tensor((n, k), dtype, name="w", parameter=True)
    wf = w.to(lm.float32)
    if inline:
        wf = scheduled(wf, [("inline", 1)])
    return cx, x, w, x @ wf.t()


def run_rows(rt, x, y, w, raw, ms, batch=None):
    rt.set_storage(w, raw)
    wt = torch.from_numpy(dequantize(raw, w.dtype)).double()
    k = wt.shape[1]
    for m in ms:
        xt = torch.randn(m, k) if batch is None else torch.randn(batch, m, k)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(y), xt.double() @ wt.T)


@pytest.mark.parametrize("dtype", QTYPES, ids=str)
@pytest.mark.parametrize("blocks,n", [(1, 1), (1, 7), (3, 13)])
def test_quantized_gemv_matches_the_interpreter_for_every_m(dtype, blocks, n):
    k = blocks * lm._core.block_values(dtype)
    cx, x, w, y = linear(k, n, dtype)
    y = y.output()
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qgemv_4x2_v{WIDTH}_{lm.dtype.name(dtype)}" in rt.source
    run_rows(rt, x, y, w, random_weight(dtype, n, k), range(1, 9))


@pytest.mark.parametrize("dtype", QTYPES, ids=str)
def test_default_program_dequantizes_into_an_f32_copy(dtype):
    k = lm._core.block_values(dtype)
    cx, x, w, y = linear(k, 5, dtype, inline=False)
    y = y.output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qgemv" not in rt.source and f"lm_{lm.dtype.name(dtype)}_at(" in rt.source
    run_rows(rt, x, y, w, random_weight(dtype, 5, k, seed=1), (1, 3, 8))


@pytest.mark.parametrize("dtype", QTYPES, ids=str)
def test_many_rows_take_the_gemm_with_dequantizing_panels(dtype):
    """M past kQuantGemvRows: the packed GEMM, its panels dequantized from the blocks; K spans
    two k blocks of 256 or more (a partial last one for Q8_0/Q4_0), N 37 leaves a ragged
    panel, and M = 13 and 40 leave ragged row tiles."""
    block = lm._core.block_values(dtype)
    k = 320 if block == 32 else 3 * block
    cx, x, w, y = linear(k, 37, dtype)
    y = y.output()
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_{lm.dtype.name(dtype)}_tile_v{WIDTH}(" in rt.source and "lm_qgemv" in rt.source
    run_rows(rt, x, y, w, random_weight(dtype, 37, k, seed=7), (5, 13, 40, 2))


@pytest.mark.parametrize("dtype", QTYPES, ids=str)
@pytest.mark.parametrize("width", [4, 16])
def test_vector_widths_of_the_gemv_and_the_gemm(dtype, width):
    """4 lanes (SSE4.1's widening loads) and 16 (AVX-512's, or GCC's generic ones)."""
    block = lm._core.block_values(dtype)
    k = 2 * block
    cx, x, w, y = linear(k, 7, dtype)
    y = scheduled(y, [("vector_width", width)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qgemv_4x1_v{width}_" in rt.source and f"_tile_v{width}(" in rt.source
    run_rows(rt, x, y, w, random_weight(dtype, 7, k, seed=8), (1, 3, 9))


@pytest.mark.parametrize("dtype", [lm.dtype.q8_0, lm.dtype.q4_k], ids=str)
def test_quantized_gemv_folds_a_batch_and_runs_an_epilogue(dtype):
    k = 2 * lm._core.block_values(dtype)
    cx, x, w, y = linear(k, 9, dtype, batch=2)
    y = scheduled(y, [("epilogue", 1)])
    out = (y * 0.5).relu().output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qgemv" in rt.source
    raw = random_weight(dtype, 9, k, seed=2)
    rt.set_storage(w, raw)
    wt = torch.from_numpy(dequantize(raw, dtype)).double()
    for m in (1, 4, 11):  # 2 x 11 rows: the GEMM path
        xt = torch.randn(2, m, k)
        rt.set_data(x, xt)
        rt.execute({"m": m})
        check(rt.get(out), torch.relu((xt.double() @ wt.T) * 0.5))


@pytest.mark.parametrize("dtype", QTYPES, ids=str)
def test_embedding_rows_dequantized_in_the_gather(dtype):
    k = lm._core.block_values(dtype)
    cx = lm.Graph()
    ids = cx.tensor(("m",), lm.int32)
    table = cx.tensor((11, k), dtype, name="table", parameter=True)
    rows = scheduled(table.to(lm.float32), [("inline", 1)]).index_select_tensor(0, ids)
    y = rows.output()
    rt = CpuRuntime()
    rt._load(cx)
    assert GATHERED_BLOCKS.search(rt.source)  # the Gather reads blocks: no f32 copy of the table
    raw = random_weight(dtype, 11, k, seed=3)
    rt.set_storage(table, raw)
    idx = np.array([3, 0, 10, 3, 7], np.int32)
    rt.set_data(ids, idx)
    rt.execute({"m": 5})
    np.testing.assert_array_equal(rt.get(y), dequantize(raw, dtype)[idx])


def test_a_tied_embedding_is_gathered_and_multiplied_from_its_blocks():
    """One Cast read by the embedding's Gather and the LM head's matmul (tied weights): both
    read the quantized table, neither an f32 copy."""
    cx = lm.Graph()
    ids = cx.tensor((1,), lm.int32)
    table = cx.tensor((37, 64), lm.dtype.q4_0, name="table", parameter=True)
    wf = scheduled(table.to(lm.float32), [("inline", 1)])
    h = wf.index_select_tensor(0, ids).reshape(1, 64)
    y = (h @ wf.t()).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qgemv" in rt.source and GATHERED_BLOCKS.search(rt.source)
    raw = random_weight(lm.dtype.q4_0, 37, 64, seed=6)
    rt.set_storage(table, raw)
    rt.set_data(ids, np.array([5], np.int32))
    rt.execute()
    wt = torch.from_numpy(dequantize(raw, lm.dtype.q4_0)).double()
    check(rt.get(y), wt[5:6] @ wt.T)


def test_a_misaligned_slice_of_the_dequantized_weight_takes_the_generic_kernel():
    """w.to(f32)[:, 5:37] starts mid-block: the GEMV declines, the loop nest reads it."""
    cx = lm.Graph()
    x = cx.tensor(("m", 32))
    w = cx.tensor((3, 64), lm.dtype.q8_0, name="w", parameter=True)
    wf = scheduled(w.to(lm.float32), [("inline", 1)])[:, 5:37]
    y = (x @ wf.t()).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qgemv" not in rt.source
    raw = random_weight(lm.dtype.q8_0, 3, 64, seed=4)
    rt.set_storage(w, raw)
    wt = torch.from_numpy(dequantize(raw, lm.dtype.q8_0)).double()[:, 5:37]
    xt = torch.randn(2, 32)
    rt.set_data(x, xt)
    rt.execute({"m": 2})
    check(rt.get(y), xt.double() @ wt.T)


def test_search_checks_and_times_the_quantized_gemv_against_the_f32_copy(tmp_path):
    """The search's check sets hold valid blocks (check.random_blocks): both the
    default and the dequantize-in-kernel candidates are verified, and the winner is right."""
    cx, x, w, y = linear(256, 33, lm.dtype.q4_k, inline=False)
    y = y.output()
    cx.set_dim("m", 1)
    cx.build_search_space(lm.CpuRuntime)
    rt = cx.search(CpuRuntime(), 4, cache_dir=str(tmp_path), progress=False)
    report = cx.last_search_report
    assert "wrong" not in str(report) and "not checked" not in str(report)
    assert "inline=1" in str(report)
    run_rows(rt, x, y, w, random_weight(lm.dtype.q4_k, 33, 256, seed=5), (1, 3))
