"""The innermost loop of an elementwise kernel split into blocks where its index divides the loop
variable (kernel/block_split.h): attention's heads merged back into rows (a permute, then a
reshape), a transposed block copy, each against torch on symbolic rows; kernels already in order keep
their one loop."""

import numpy as np
import pytest
import torch

import luminal as lm

from conftest import CpuRuntime


def run(cx, feeds, out, dims):
    rt = CpuRuntime()
    rt._load(cx)
    for node, data in feeds:
        rt.set_data(node, data)
    rt.execute(dims)
    return rt, rt.get(out)


@pytest.mark.parametrize("rows", [1, 5, 33])
def test_heads_merged_into_rows_run_in_blocks_and_match_torch(rows):
    """(heads, s, 64) parts added, scaled per (head, row) and merged into (s, heads * 64), as
    an attention's output: the index divides the merged column by 64 (the head)."""
    cx = lm.Graph()
    a = cx.tensor((8, "s", 64), name="a")
    b = cx.tensor((8, "s", 64), name="b")
    scale = cx.tensor((8, "s", 1), name="scale")
    y = ((a + b) * scale).permute(1, 0, 2).reshape("s", 512).output()
    g = torch.Generator().manual_seed(0)
    at, bt = torch.randn(8, rows, 64, generator=g), torch.randn(8, rows, 64, generator=g)
    st = torch.randn(8, rows, 1, generator=g)
    rt, got = run(cx, [(a, at), (b, bt), (scale, st)], y, {"s": rows})
    assert "i1o < 8" in rt.source, rt.source
    want = ((at + bt) * st).permute(1, 0, 2).reshape(rows, 512)
    np.testing.assert_array_equal(got, want.numpy())


def test_a_transposed_block_copy_runs_in_blocks():
    """(4, 16, 32) with its first two axes swapped: columns in blocks of 32 read in order."""
    cx = lm.Graph()
    x = cx.tensor((4, "s", 32), name="x")
    y = (x.permute(1, 0, 2).reshape("s", 128) * 2.0).output()
    xt = torch.randn(4, 16, 32)
    rt, got = run(cx, [(x, xt)], y, {"s": 16})
    assert "i1o < 4" in rt.source
    np.testing.assert_array_equal(got, (xt.permute(1, 0, 2).reshape(16, 128) * 2).numpy())


def test_kernels_in_order_keep_one_loop():
    """x * 2 + 1 reads in order, x.t() in steps of s: both move by a constant step already."""
    cx = lm.Graph()
    x = cx.tensor(("s", 64), name="x")
    y = (x * 2.0 + 1.0).output()
    z = (x.t() * 1.0).output()
    xt = torch.randn(3, 64)
    rt, _ = run(cx, [(x, xt)], y, {"s": 3})
    assert "i1o" not in rt.source and "i0o" not in rt.source
    np.testing.assert_array_equal(rt.get(y), (xt * 2 + 1).numpy())
    np.testing.assert_array_equal(rt.get(z), xt.t().numpy())
