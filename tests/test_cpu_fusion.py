"""CpuRuntime's lowering and matmul choices that make models fast, each checked against torch:
batch loops folded into a matmul's rows, reductions over a few elements unrolled and fused
(relu, maximum, clamp), views with symbolic row strides as affine indices, cheap nodes
recomputed by several kernels, and the vectorized NaN-propagating max."""

import re

import numpy as np
import pytest
import torch

import luminal as lm
from conftest import CPU_CACHE, assert_close


def _run(cx, feeds, dims=None):
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    for t, v in feeds.items():
        rt.set_data(t, v)
    for name, value in (dims or {}).items():
        cx.set_dim(name, value)
    rt.execute(cx.dyn_map)
    return rt


def test_linear_over_batch_and_sequence_is_one_matmul_of_all_rows():
    cx = lm.Graph()
    x = cx.tensor(("b", "s", 24))
    w = cx.tensor((40, 24))
    bias = cx.tensor((40,))
    y = (x @ w.T + bias).output()
    wd, bd = torch.randn(40, 24), torch.randn(40)
    rt = None
    for b, s in ((3, 5), (1, 7), (2, 1)):
        xd = torch.randn(b, s, 24)
        if rt is None:
            rt = _run(cx, {x: xd, w: wd, bias: bd}, {"b": b, "s": s})
        else:
            rt.set_data(x, xd)
            cx.set_dim("b", b)
            cx.set_dim("s", s)
            rt.execute(cx.dyn_map)
        assert_close(rt.get(y), xd @ wd.T + bd, rtol=1e-4, atol=1e-4)
    # B (the weight) is the same for every batch: one matmul over b * s rows packs it once
    assert "lm_batches = 1;" in rt.source


@pytest.mark.parametrize("case", ["bmm", "permuted_rows", "broadcast_a"])
def test_batched_matmuls_that_must_not_fold_rows(case):
    cx = lm.Graph()
    if case == "bmm":  # B differs per batch
        a_shape, b_shape = (3, 5, 6), (3, 6, 7)
    elif case == "permuted_rows":  # A's batches are not consecutive blocks of rows
        a_shape, b_shape = (5, 3, 6), (6, 7)
    else:  # A is the same for every batch, B differs
        a_shape, b_shape = (5, 6), (4, 6, 7)
    a, b = cx.tensor(a_shape), cx.tensor(b_shape)
    ad, bd = torch.randn(a_shape), torch.randn(b_shape)
    lhs, lhs_ref = (a.permute(1, 0, 2), ad.permute(1, 0, 2)) if case == "permuted_rows" \
        else (a, ad)
    y = (lhs @ b).output()
    rt = _run(cx, {a: ad, b: bd})
    assert_close(rt.get(y), lhs_ref @ bd, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_matmul_is_matched_once_and_the_c_gemm_takes_f32(dtype):
    # lowering marks both as matmuls (kernel/match.h); the C GEMM takes f32 operands only
    cx = lm.Graph()
    a, b = cx.tensor((8, 16), getattr(lm, dtype)), cx.tensor((16, 12), getattr(lm, dtype))
    y = (a @ b).output()
    ad = torch.randn(8, 16).to(getattr(torch, dtype))
    bd = torch.randn(16, 12).to(getattr(torch, dtype))
    rt = _run(cx, {a: ad, b: bd})
    assert "(matmul m=i0 n=i1)" in rt._rt.program_text()
    assert ("lm_mm_" in rt.source) == (dtype == "float32")
    want = (ad.float() @ bd.float()).to(ad.dtype).float()
    got = torch.from_numpy(np.asarray(rt.get(y))).float()
    assert_close(got, want, rtol=1e-2, atol=1e-2)


SPECIAL = torch.tensor([[-0.0, 0.0, float("nan"), -1.5, 2.5, float("inf"), -float("inf"), 3.0],
                        [1.0, -0.0, -2.0, float("nan"), 0.0, 7.0, -3.0, -0.0]])


@pytest.mark.parametrize("op", ["relu", "maximum", "minimum", "clamp", "sum3", "amax3"])
def test_small_reductions_unrolled_match_torch(op):
    cx = lm.Graph()
    x = cx.tensor((2, 8))
    z = cx.tensor((2, 8))
    zd = SPECIAL.flip(1)
    if op == "relu":
        out, ref = x.relu(), SPECIAL.relu()
    elif op == "maximum":
        out, ref = x.maximum(z), SPECIAL.maximum(zd)
    elif op == "minimum":
        out, ref = x.minimum(z), SPECIAL.minimum(zd)
    elif op == "clamp":
        out, ref = x.clamp(-1.0, 2.0), SPECIAL.clamp(-1.0, 2.0)
    elif op == "sum3":  # a sum over an axis of 3, -0.0 included
        out, ref = x[:, :6].reshape(2, 2, 3).sum(2), SPECIAL[:, :6].reshape(2, 2, 3).sum(2)
    else:
        out, ref = x[:, :6].reshape(2, 2, 3).amax(2), SPECIAL[:, :6].reshape(2, 2, 3).amax(2)
    y = (out * 2.0 + 1.0).output()
    rt = _run(cx, {x: SPECIAL, z: zd})
    got = torch.from_numpy(np.asarray(rt.get(y)))
    want = ref * 2.0 + 1.0
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(want))
    # the unrolled reduction fuses with the elementwise ops around it: no reduction loop left
    assert "(reduce " not in rt._rt.program_text()


def test_integer_maximum_unrolled():
    cx = lm.Graph()
    x = cx.tensor((6,), lm.int32)
    z = cx.tensor((6,), lm.int32)
    y = x.maximum(z).output()
    xd = torch.tensor([-5, 0, 2**31 - 1, -2**31, 7, 3], dtype=torch.int32)
    zd = torch.tensor([4, -1, 0, 5, 7, -9], dtype=torch.int32)
    rt = _run(cx, {x: xd, z: zd})
    assert rt.get(y).tolist() == xd.maximum(zd).tolist()


def test_symbolic_reshape_indexes_without_division():
    cx = lm.Graph()
    x = cx.tensor(("b", "s", 8))
    flat = x.reshape(-1, 8) * 3.0  # (b * s, 8) rows
    y = (flat.reshape(x.shape) + x).exp2().output()
    xd = torch.randn(3, 5, 8)
    rt = _run(cx, {x: xd}, {"b": 3, "s": 5})
    assert_close(rt.get(y), (xd * 3.0 + xd).exp2(), rtol=1e-5, atol=1e-5)
    # Each kernel's text, from its "/* name: writes bN */" line to the next unit's prelude.
    kernels = "".join(u.split("/* ---- ")[0] for u in rt.source.split(": writes ")[1:])
    assert "lm_exp2f(v" in kernels  # the kernel body was found
    assert " % " not in kernels and "lm_floordiv" not in kernels


@pytest.mark.parametrize("batch", [4, "b"])
def test_sum_over_merged_batch_axes_of_a_product_is_one_matmul(batch):
    """A weight gradient's form: the product of two (batch, seq, .) tensors summed over batch
    and sequence merged into one axis. The merged axis reads the fused product's batch and
    sequence axes as digits of one index, which recombine into an affine index: one matmul
    with K = batch * seq, not a reduction whose loads divide and take remainders."""
    cx = lm.Graph()
    x, g = cx.tensor((batch, 8, 6)), cx.tensor((batch, 8, 5))
    product = x.unsqueeze(-1) * g.unsqueeze(-2)  # (batch, 8, 6, 5)
    y = product.reshape(-1, 6, 5).sum(0).output()
    xd, gd = torch.randn(4, 8, 6), torch.randn(4, 8, 5)
    rt = _run(cx, {x: xd, g: gd}, {"b": 4} if batch == "b" else None)
    assert_close(rt.get(y), torch.einsum("bsi,bso->io", xd, gd), rtol=1e-4, atol=1e-4)
    text = rt._rt.program_text()
    assert "(matmul m=i0 n=i1)" in text
    indices = re.findall(r"\[([^\]]*)\]", text)
    assert indices and not any("//" in i or "%" in i for i in indices)


def test_cheap_node_read_by_two_kernels_is_recomputed():
    cx = lm.Graph()
    x = cx.tensor((4, 16))
    t = x * 2.0 + 1.0  # read by a reduction and by an elementwise output
    s = t.sum(1).output()
    e = (t * t).output()
    xd = torch.randn(4, 16)
    rt = _run(cx, {x: xd})
    td = xd * 2.0 + 1.0
    assert_close(rt.get(s), td.sum(1), rtol=1e-5, atol=1e-5)
    assert_close(rt.get(e), td * td, rtol=1e-5, atol=1e-5)
    assert rt._rt.program_text().count("(kernel ") == 2  # no kernel of its own for t


@pytest.mark.parametrize("nan_at", [None, 0, 5, 36])
def test_row_max_propagates_nan_like_torch(nan_at):
    cx = lm.Graph()
    x = cx.tensor((3, 37))  # 4 blocks of 8 lanes and a tail of 5
    y = x.amax(1).output()
    xd = torch.randn(3, 37)
    xd[2] = -float("inf")
    if nan_at is not None:
        xd[0, nan_at] = float("nan")
    rt = _run(cx, {x: xd})
    got = torch.from_numpy(np.asarray(rt.get(y)))
    want = xd.amax(1)
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(want))


def test_reduction_fused_into_a_cat_piece_reads_only_inside_the_piece():
    """cat([x, max_pool(x)]) (YOLOv8's SPPF): the pool's window max runs at every element of
    the joined kernel, so its loads must carry the piece's mask; unmasked, the channels of
    the first piece read far before the pooled input (a segfault at 224x224 and up)."""
    import re

    from luminal.nn.functional import max_pool2d

    cx = lm.Graph()
    x = cx.tensor((1, 16, 24, 24))
    y = lm.cat([x, max_pool2d(x, 5, 1, 2)], 1).output()
    xd = torch.randn(1, 16, 24, 24)
    rt = _run(cx, {x: xd})
    assert_close(rt.get(y), torch.cat([xd, torch.nn.functional.max_pool2d(xd, 5, 1, 2)],
                                      1).numpy())
    joined = [k for k in rt.source.split("/* ---- ") if "lm_fmax_nan(" in k and "i1 < 32" in k]
    loads = [line for k in joined for line in k.splitlines()
             if "r0" in line and re.search(r"\bb\d+\[", line)]
    assert loads and all("?" in line for line in loads), loads


@pytest.mark.parametrize("op", ["conv", "max_pool", "avg_pool"])
def test_a_window_gather_reads_its_input_as_a_view(op):
    """A conv's or a pool's window (nn/_grid.gather_linear: a flat index that is a sum of
    broadcast Iotas) is read straight through the padded view: the index is recomputed in the
    gather's kernel and simplified there, so no index tensor is stored, and the load has no
    run-time index, no division of a flat index and no bounds check."""
    import luminal.nn.functional as F

    cx = lm.Graph()
    x = cx.tensor((2, 3, 11, 9))
    w = cx.tensor((4, 3, 3, 3))
    if op == "conv":
        y = F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2)).output()
    elif op == "max_pool":
        y = F.max_pool2d(x, 3, stride=2, padding=1).output()
    else:
        y = F.avg_pool2d(x, (2, 3), stride=1, padding=(1, 1)).output()
    xd, wd = torch.randn(2, 3, 11, 9), torch.randn(4, 3, 3, 3)
    rt = _run(cx, {x: xd, w: wd} if op == "conv" else {x: xd})
    tf = torch.nn.functional
    want = {"conv": lambda: tf.conv2d(xd, wd, stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
            "max_pool": lambda: tf.max_pool2d(xd, 3, stride=2, padding=1),
            "avg_pool": lambda: tf.avg_pool2d(xd, (2, 3), stride=1, padding=(1, 1))}[op]()
    assert_close(rt.get(y), want, rtol=1e-5, atol=1e-5)
    text = rt._rt.program_text()
    assert "(bind " not in text  # a Gather's run-time index
    buffers = [line for line in text.splitlines() if line.startswith("  (buffer")]
    assert buffers and not [line for line in buffers if " int " in line]  # no index tensor
