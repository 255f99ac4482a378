"""Gather indices out of range (#19): NativeRuntime raises; CpuRuntime's and CUDA's kernels
read 0 for them (no crash) and set the program's index fault, which the runtime turns into
the same ShapeError after the run (checked here in the CUDA emulator, tests/cuda_emu.py).
Indices a view masks away (padding around a gathered tensor) are not faults. Values are
checked against torch."""

import numpy as np
import pytest
import torch

import luminal as lm

import cuda_emu


def cpu():
    from conftest import CpuRuntime

    return CpuRuntime()


def embedding(vocab, dim, dtype=lm.float32):
    cx = lm.Graph()
    table = cx.tensor((vocab, dim), dtype)
    ids = cx.tensor(("s",), lm.int32)
    out = (table.index_select(0, ids) * 2.0).output()
    return cx, table, ids, out


def table_data(vocab, dim):
    return torch.randn(vocab, dim, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("make", [lm.NativeRuntime, cpu], ids=["native", "cpu"])
@pytest.mark.parametrize("dtype", [lm.float32, lm.float16, lm.bfloat16], ids=str)
def test_an_embedding_lookup_out_of_range_raises(make, dtype):
    vocab, dim = 37, 5
    cx, table, ids, out = embedding(vocab, dim, dtype)
    rt = cx.search(make(), progress=False, cache=False)
    weights = table_data(vocab, dim)
    rt.set_data(table, weights.numpy())
    for bad in ([1, vocab], [-1], [0, 2**31 - 1, 3], [vocab * dim]):
        rt.set_data(ids, np.array(bad, dtype=np.int32))
        with pytest.raises(lm.ShapeError, match="Gather: .*out of range"):
            rt.execute({"s": len(bad)})
    good = [0, vocab - 1, 5, 5, 17]
    rt.set_data(ids, np.array(good, dtype=np.int32))
    rt.execute({"s": len(good)})
    want = weights.to(torch.float32)[good] * 2.0
    tol = 1e-6 if dtype == lm.float32 else 2e-2
    torch.testing.assert_close(torch.from_numpy(np.asarray(rt.get(out), np.float32)),
                               want.to({lm.float32: torch.float32, lm.float16: torch.float16,
                                        lm.bfloat16: torch.bfloat16}[dtype]).float(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("make", [lm.NativeRuntime, cpu], ids=["native", "cpu"])
def test_a_gather_of_a_constant_reads_its_value_and_checks_its_indices(make):
    """index_fill's values are a broadcast constant, gathered (a constant is stored for that,
    so its indices are bounds-checked like any other)."""
    cx = lm.Graph()
    x = cx.tensor((3, 5))
    index = cx.tensor((3,), lm.int32)
    out = x.index_fill(1, index, -1.5).output()
    rt = cx.search(make(), progress=False, cache=False)
    data = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    rt.set_data(x, data)
    rt.set_data(index, np.array([4, 0, 4], dtype=np.int32))
    rt.execute(cx.dyn_map)
    torch.testing.assert_close(torch.from_numpy(rt.get(out)),
                               data.index_fill(1, torch.tensor([4, 0, 4]), -1.5))
    cx = lm.Graph()
    index = cx.tensor((3,), lm.int32)
    out = cx.constant(2.5).expand(4, 3).index_select(0, index).output()
    rt = cx.search(make(), progress=False, cache=False)
    rt.set_data(index, np.array([0, 3, 9], dtype=np.int32))
    with pytest.raises(lm.ShapeError, match="Gather: .*out of range"):
        rt.execute(cx.dyn_map)


@pytest.mark.parametrize("make", [lm.NativeRuntime, cpu], ids=["native", "cpu"])
def test_padding_around_a_gather_is_not_a_fault(make):
    """pad(gather(x, idx)): the padded elements read no index; only real ones are checked."""
    cx = lm.Graph()
    x = cx.tensor((6,))
    idx = cx.tensor((3,), lm.int32)
    out = x._gather(idx).pad((2, 1)).output()
    rt = cx.search(make(), progress=False, cache=False)
    rt.set_data(x, np.arange(6, dtype=np.float32) + 1)
    rt.set_data(idx, np.array([5, 0, 2], dtype=np.int32))
    rt.execute()
    np.testing.assert_array_equal(rt.get(out), [0, 0, 6, 1, 3, 0])
    rt.set_data(idx, np.array([5, 6, 2], dtype=np.int32))
    with pytest.raises(lm.ShapeError, match="out of range"):
        rt.execute()


@pytest.mark.skipif(cuda_emu.compiler() is None, reason="no C++ compiler")
def test_the_cuda_rendering_raises_the_index_fault(tmp_path):
    vocab, dim = 37, 5
    cx, table, ids, out = embedding(vocab, dim)
    weights = table_data(vocab, dim)
    items = [(cx, None, {"s": 3}), (cx, None, {"s": 3})]
    emu = cuda_emu.Emulated(items, str(tmp_path))
    good = [0, vocab - 1, 7]
    got = emu.run(0, {table: weights.numpy(), ids: np.array(good)}, [out])[0]
    torch.testing.assert_close(torch.from_numpy(got).float().reshape(3, dim), weights[good] * 2)
    for bad in ([0, vocab, 1], [-5, 0, 1]):
        with pytest.raises(lm.ShapeError, match="out of range"):
            emu.run(1, {table: weights.numpy(), ids: np.array(bad)}, [out])
    emu.run(1, {table: weights.numpy(), ids: np.array(good)}, [out])  # the flag was cleared


@pytest.mark.parametrize("make", [lm.NativeRuntime, cpu], ids=["native", "cpu"])
def test_index_arithmetic_gathers_are_views_only_where_they_stay_inside(make):
    """Gathers by sums of Iotas (what conv and pool windows are): one that stays inside the
    data reads it as a view (CpuRuntime: no bounds check), including with a negative step (a
    flip); one whose index runs past the data is still an index fault, as NativeRuntime says;
    one over a symbolic length keeps the run-time index and its check."""
    cx = lm.Graph()
    x = cx.tensor((4, 10))
    flip = x._gather(cx.iota(lm.Expr(39) - lm.Expr("z"), 40).reshape((4, 10))).output()
    window = x._gather(cx.iota(lm.Expr("z") % 8 + 2, 8).reshape((2, 4))
                       + cx.iota(lm.Expr("z") * 10, 3).reshape((3, 1, 1)).expand((3, 2, 4))
                       ).output()
    rt = cx.search(make(), progress=False, cache=False)
    xd = torch.randn(4, 10, generator=torch.Generator().manual_seed(1))
    rt.set_data(x, xd.numpy())
    rt.execute()
    flat = xd.reshape(-1)
    torch.testing.assert_close(torch.from_numpy(rt.get(flip)), flat.flip(0).reshape(4, 10))
    want = torch.stack([flat[10 * b + 2: 10 * b + 10].reshape(2, 4) for b in range(3)])
    torch.testing.assert_close(torch.from_numpy(rt.get(window)), want)
    past = lm.Graph()
    y = past.tensor((10,))
    y._gather(past.iota(lm.Expr("z") + 5, 10)).output()
    rt = past.search(make(), progress=False, cache=False)
    rt.set_data(y, np.arange(10, dtype=np.float32))
    with pytest.raises(lm.ShapeError, match="Gather: .*out of range"):
        rt.execute()
    ok = lm.Graph()
    y = ok.tensor((10,))
    symbolic = y._gather(ok.iota(lm.Expr("z") * 2, "n")).output()
    rt = ok.search(make(), progress=False, cache=False)
    rt.set_data(y, np.arange(10, dtype=np.float32))
    rt.execute({"n": 5})
    assert rt.get(symbolic).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    with pytest.raises(lm.ShapeError, match="Gather: .*out of range"):
        rt.execute({"n": 6})
