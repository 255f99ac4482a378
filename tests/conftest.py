"""Shared test helpers: compile a graph on a runtime, feed it, read its outputs."""

import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest

import luminal as lm
from luminal.cuda import gpu_available

# One compile cache per test session, removed at exit (tests never touch ~/.cache).
CPU_CACHE = tempfile.mkdtemp(prefix="luminal-cpu-cache-")
atexit.register(shutil.rmtree, CPU_CACHE, True)
os.environ["LUMINAL_CPU_CACHE"] = CPU_CACHE  # for CpuRuntimes the tests do not make (the CLI's)


class CpuRuntime(lm.CpuRuntime):
    """lm.CpuRuntime with the session's compile cache."""

    def __init__(self, **kwargs):
        kwargs.setdefault("cache_dir", CPU_CACHE)
        super().__init__(**kwargs)


RUNTIMES = {"native": lm.NativeRuntime, "cpu": CpuRuntime}
if gpu_available():  # with a GPU, the CUDA runtime too (its tests are marked gpu)
    RUNTIMES["cuda"] = lambda: lm.CudaRuntime(cache_dir=CPU_CACHE)


@pytest.fixture(autouse=True, scope="session")
def _search_cache_in_tmp(tmp_path_factory):
    """Searches in tests cache into a temp dir, never ~/.cache."""
    os.environ["LUMINAL_SEARCH_CACHE"] = str(tmp_path_factory.mktemp("search-cache"))


@pytest.fixture(params=[pytest.param(k, marks=pytest.mark.gpu) if k == "cuda" else k
                        for k in sorted(RUNTIMES)])
def runtime(request):
    """Every runtime, so a test written once runs on all of them."""
    return RUNTIMES[request.param]


def unwritable_dir(tmp_path):
    """A cache directory path that cannot be written: read-only, or for root (who writes
    through permissions) a file where the directory should be."""
    if os.geteuid() == 0:
        blocked = tmp_path / "cache"
        blocked.write_text("not a directory")
    else:
        blocked = tmp_path / "ro"
        blocked.mkdir()
        blocked.chmod(0o500)
    return blocked


def run(cx, feeds, outputs, runtime=lm.NativeRuntime, dyn_map=None):
    """Marks ``outputs``, compiles ``cx`` on ``runtime``, sets ``feeds`` and executes.
    Returns the outputs as numpy arrays."""
    for t in outputs:
        t.output()
    rt = cx.search(runtime(), 1)
    for t, value in feeds.items():
        rt.set_data(t, value)
    rt.execute(dyn_map if dyn_map is not None else cx.dyn_map)
    return [rt.get(t) for t in outputs]


TOLERANCE = {
    lm.float32: dict(rtol=1e-5, atol=1e-6),
    lm.float16: dict(rtol=2e-3, atol=1e-3),
    lm.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    lm.int32: dict(rtol=0, atol=0),
    lm.bool_: dict(rtol=0, atol=0),
}


def assert_close(actual, expected, dtype=lm.float32, **overrides):
    """Compares with a torch tensor or numpy array: shape, then values within the dtype's
    tolerance (NaNs must match NaNs)."""
    if hasattr(expected, "detach"):
        expected = expected.detach().float().numpy() if expected.is_floating_point() \
            else expected.numpy()
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    tol = dict(TOLERANCE[dtype])
    tol.update(overrides)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               equal_nan=True, **tol)
