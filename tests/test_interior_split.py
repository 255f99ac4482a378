"""The CPU's split of a padded view's innermost loop (kernel/interior.h): the part of each row
where every padding mask holds reads without the masks, the rows' ends with them. Checked
against torch where the interior is wide, narrow, empty, moves with another loop (a
convolution's window offset), runs backwards (a flip of a pad) and has a symbolic length."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import luminal as lm
import luminal.nn.functional as LF
from conftest import CPU_CACHE, assert_close

SPLIT = "every padding mask holds"


def _run(cx, feeds, out):
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute(cx.dyn_map)
    return rt, rt.get(out)


@pytest.mark.parametrize("width", [1, 2, 3, 5, 19, 40])
@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 1, 1), (1, 2, 2), (2, 3, 1)])
def test_padded_conv2d_matches_torch(width, stride, padding, dilation):
    torch.manual_seed(width * 7 + stride)
    xd = torch.randn(2, 3, 6, width)
    wd = torch.randn(4, 3, 3, 3)
    cx = lm.Graph()
    x, w = cx.tensor(xd.shape), cx.tensor(wd.shape)
    try:
        ref = F.conv2d(xd, wd, stride=stride, padding=padding, dilation=dilation)
    except RuntimeError:
        pytest.skip("torch refuses this geometry")
    y = LF.conv2d(x, w, stride=stride, padding=padding, dilation=dilation).output()
    rt, got = _run(cx, {x: xd, w: wd}, y)
    assert_close(got, ref, rtol=1e-4, atol=1e-4)
    if width >= 3:
        assert SPLIT in rt.source  # the im2col's rows


@pytest.mark.parametrize("shape", [(1, 2, 9, 9), (2, 3, 16, 17), (1, 4, 3, 2), (1, 1, 1, 1)])
def test_max_and_avg_pool_with_padding_match_torch(shape):
    xd = torch.randn(shape)
    cx = lm.Graph()
    x = cx.tensor(shape)
    mx = LF.max_pool2d(x, 3, stride=2, padding=1).output()
    av = LF.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False).output()
    rt, got = _run(cx, {x: xd}, mx)
    assert_close(got, F.max_pool2d(xd, 3, stride=2, padding=1), rtol=0, atol=0)
    assert_close(rt.get(av), F.avg_pool2d(xd, 3, stride=2, padding=1, count_include_pad=False),
                 rtol=1e-5, atol=1e-6)


def test_a_pool_reads_minus_infinity_and_nan_as_torch_does():
    xd = torch.randn(1, 2, 20, 20)
    xd[0, 0, 3, 4] = float("nan")
    xd[0, 1, :, :5] = float("-inf")
    cx = lm.Graph()
    x = cx.tensor(xd.shape)
    y = LF.max_pool2d(x, 3, stride=1, padding=1).output()
    rt, got = _run(cx, {x: xd}, y)
    ref = F.max_pool2d(xd, 3, stride=1, padding=1)
    np.testing.assert_array_equal(np.isnan(got), torch.isnan(ref).numpy())
    keep = ~torch.isnan(ref)
    np.testing.assert_array_equal(got[keep.numpy()], ref[keep].numpy())
    assert SPLIT in rt.source


def test_a_flipped_pad_has_its_interior_backwards():
    # The pad's masks on the flipped row are conditions on W + P - 1 - i: they bound i from
    # above and below with a negative coefficient.
    xd = torch.randn(3, 4, 30)
    cx = lm.Graph()
    x = cx.tensor(xd.shape)
    y = (x.pad_zeros([2, 5]).flip(-1) * 2.0 + 1.0).output()
    rt, got = _run(cx, {x: xd}, y)
    assert_close(got, F.pad(xd, (2, 5)).flip(-1) * 2.0 + 1.0, rtol=0, atol=0)
    assert SPLIT in rt.source


def test_a_pad_of_a_symbolic_row_is_right_at_every_length():
    cx = lm.Graph()
    x = cx.tensor((2, "w"))
    y = (x.pad_zeros([3, 2]) + 1.0).output()
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    assert SPLIT in rt.source
    for w in (1, 2, 7, 64):
        xd = torch.randn(2, w)
        rt.set_data(x, xd)
        cx.set_dim("w", w)
        rt.execute(cx.dyn_map)
        assert_close(rt.get(y), F.pad(xd, (3, 2)) + 1.0, rtol=0, atol=0)
