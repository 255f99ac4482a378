"""The CUDA runtime's parts that need no GPU: the dlopen loader's error paths, NVRTC
discovery, launch-dimension arithmetic and the device arena's layout."""

import os

import pytest

import luminal as lm
from luminal import _core, cuda

THREAD, WARP, TILE, SPLIT = 0, 1, 2, 3


def test_missing_driver_library_is_a_device_error():
    with pytest.raises(lm.DeviceError, match="cannot load the driver library.*no_such_libcuda"):
        lm.CudaRuntime(driver_library="/nonexistent/no_such_libcuda.so.1")


def test_not_a_driver_library_is_a_device_error():
    libc = "libc.so.6"
    with pytest.raises(lm.DeviceError, match="no entry point cuInit"):
        lm.CudaRuntime(driver_library=libc)


@pytest.mark.skipif(cuda.gpu_available(), reason="a GPU is present")
def test_cuda_runtime_without_gpu_is_a_device_error():
    with pytest.raises(lm.DeviceError, match="CUDA"):
        lm.CudaRuntime()
    assert not cuda.gpu_available()


def test_missing_nvrtc_is_a_device_error():
    cx = lm.Graph()
    cx.tensor((4,)).exp().output()
    with pytest.raises(lm.DeviceError, match="(?s)cannot load NVRTC.*nowhere/libnvrtc"):
        cuda.codegen_check(cx, "sm_90", nvrtc_library="/nowhere/libnvrtc.so.13")


@pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")
def test_nvrtc_found_in_the_wheel():
    path = cuda.find_nvrtc()
    assert os.path.exists(path) and "libnvrtc.so" in os.path.basename(path)
    assert "builtins" not in path
    major, minor, archs = _core.cuda_nvrtc_info(path)
    assert major >= 12 and "sm_80" in archs and "sm_90" in archs


def dims(mode, items=1, m=1, n=1, batch=1, tile=(1, 1), block=256, env=None, sms=132):
    grid, blk, empty = _core.cuda_launch_dims(mode, block, lm.Expr(items), lm.Expr(m), lm.Expr(n),
                                              lm.Expr(batch), tile[0], tile[1], env or {}, sms)
    return tuple(grid), tuple(blk), empty


def test_thread_per_item_grid_covers_items_and_is_capped():
    assert dims(THREAD, items=1000) == ((4, 1, 1), (256, 1, 1), False)
    assert dims(THREAD, items=256) == ((1, 1, 1), (256, 1, 1), False)
    # Grid-stride kernels: at most 32 blocks per multiprocessor.
    assert dims(THREAD, items=10**9, sms=132)[0] == (132 * 32, 1, 1)
    assert dims(THREAD, items=0) == ((1, 1, 1), (256, 1, 1), True)


def test_warp_per_item_grid_has_one_warp_per_item():
    assert dims(WARP, items=8) == ((1, 1, 1), (256, 1, 1), False)
    assert dims(WARP, items=9) == ((2, 1, 1), (256, 1, 1), False)
    assert dims(WARP, items=100, block=128) == ((25, 1, 1), (128, 1, 1), False)


def test_split_reduce_grid_has_32_outputs_per_block():
    assert dims(SPLIT, items=4096) == ((128, 1, 1), (256, 1, 1), False)
    assert dims(SPLIT, items=33) == ((2, 1, 1), (256, 1, 1), False)


def test_tile_grid_over_columns_rows_batch():
    assert dims(TILE, m=130, n=64, batch=3, tile=(128, 128)) == ((1, 2, 3), (256, 1, 1), False)
    assert dims(TILE, m=4096, n=4096, tile=(64, 64)) == ((64, 64, 1), (256, 1, 1), False)
    assert dims(TILE, m=0, n=5, tile=(64, 64))[2] is True
    with pytest.raises(lm.ShapeError, match="exceeds"):
        dims(TILE, m=64, n=64, batch=70000, tile=(64, 64))


def test_symbolic_launch_dims_follow_the_dyn_map():
    s = lm.Expr("d0")
    grid, _, _ = _core.cuda_launch_dims(THREAD, 256, s * 64, lm.Expr(1), lm.Expr(1), lm.Expr(1),
                                        1, 1, {"d0": 10}, 132)
    assert tuple(grid) == (3, 1, 1)
    with pytest.raises(lm.ShapeError, match="d0"):
        _core.cuda_launch_dims(THREAD, 256, s, lm.Expr(1), lm.Expr(1), lm.Expr(1), 1, 1, {}, 132)


def _layout(cx, dyn_map=None):
    rows, total = _core.cuda_arena_layout(cx._g, dyn_map or {})
    return rows, total


def test_arena_layout_no_live_overlap_and_aligned():
    cx = lm.Graph()
    x = cx.tensor(("s", 64))
    w = cx.tensor((64, 64))
    h = x
    for _ in range(4):  # a chain of materialized temps: matmul, then a broadcast reader
        h = (h @ w).exp()
        h = h + h.sum(-1, keepdim=True)
    h.output()
    (x * 2).output()
    rows, total = _layout(cx, {"s": 5})
    assert total % 256 == 0
    placed = [(r, off, size, first, last) for r, off, size, first, last in rows if r != 0]
    assert any(r == 2 for r, *_ in placed), "expected temporaries"
    for role, off, size, first, last in placed:
        assert off % 64 == 0 and off + size <= total
        if role == 1:
            assert off % 256 == 0
    for i, (ri, oi, si, fi, li) in enumerate(placed):
        for rj, oj, sj, fj, lj in placed[i + 1:]:
            overlap_bytes = oi < oj + sj and oj < oi + si
            overlap_time = not (li < fj or lj < fi)
            outputs = ri == 1 or rj == 1
            assert not (overlap_bytes and (overlap_time or outputs)), (ri, oi, si, rj, oj, sj)
    for role, off, *_ in rows:
        assert (off == -1) == (role == 0)  # inputs live in their own allocations


def test_arena_layout_grows_with_symbolic_dims():
    cx = lm.Graph()
    x = cx.tensor(("s", 32))
    (x.exp() + x.sum(-1, keepdim=True)).output()
    _, small = _layout(cx, {"s": 2})
    _, large = _layout(cx, {"s": 200})
    assert large > small
