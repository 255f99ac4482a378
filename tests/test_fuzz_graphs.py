"""A fuzzer of graphs with extreme dim values bound at execute (#19): random small graphs
over symbolic dims (elementwise ops, reductions of the input, views, constants the size of
the dims), executed with dims from 0 to 2**63 - 1 on NativeRuntime and CpuRuntime. Each run
raises ShapeError (a size that does not fit, data of the wrong count) or gives numpy's
answer; never a crash, a MemoryError or another exception. Deterministic (derandomized)."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import luminal as lm

if open("/proc/sys/vm/overcommit_memory").read().strip() == "1":
    pytest.skip("memory overcommitted always: a huge allocation would succeed, then kill",
                allow_module_level=True)

# Small values run; the large ones are past any machine's memory (2**40 f32 elements are
# 4 TiB) or past int64 in products, so nothing between allocates for real.
# Under ASan (make test-asan) only the sizes past the limit: its operator new aborts on an
# allocation the system's refuses with std::bad_alloc.
SANITIZED = bool(os.environ.get("LUMINAL_SANITIZED"))
UNALLOCATABLE = [] if SANITIZED else [2**40, 2**45 + 1]
DIM = st.sampled_from([0, 1, 2, 3, 5, *UNALLOCATABLE, 2**62, 2**63 - 1])
DATA = (2, 3)  # the input's data is always 2 x 3: other (a, b) are a ShapeError

# (name, luminal, numpy) for ops on a tensor of shape (a, b); reductions keep the dim.
OPS = [
    ("exp2", lambda t, x, c: t.exp2(), lambda t, x: np.exp2(t)),
    ("sin", lambda t, x, c: t.sin(), lambda t, x: np.sin(t)),
    ("add1", lambda t, x, c: t + 1.0, lambda t, x: t + 1.0),
    ("mulx", lambda t, x, c: t * x, lambda t, x: t * x),
    ("sum0", lambda t, x, c: t.sum(0, keepdim=True).expand(*t.shape),
     lambda t, x: np.broadcast_to(t.sum(0, keepdims=True), t.shape)),
    ("max1", lambda t, x, c: t.amax(1, keepdim=True).expand(*t.shape),
     lambda t, x: np.broadcast_to(t.max(1, keepdims=True), t.shape)),
    ("zeros", lambda t, x, c: t + c.zeros("a", "b"), lambda t, x: t + 0.0),
    ("flip", lambda t, x, c: t.transpose(0, 1).transpose(0, 1), lambda t, x: t),
]


def build(ops):
    cx = lm.Graph()
    x = cx.tensor(("a", "b"))
    t = x
    for name in ops:
        t = dict((o[0], o[1]) for o in OPS)[name](t, x, cx)
    # A constant-only output: its size is a, b alone (no data bounds it).
    big = (cx.zeros("a", "b") + 2.0).output()
    return cx, x, t.output(), big


def reference(ops, data):
    t = data
    for name in ops:
        t = dict((o[0], o[2]) for o in OPS)[name](t, data)
    return t


def run_case(runtime, ops, a, b):
    cx, x, out, big = build(ops)
    rt = cx.search(runtime, progress=False, cache=False)
    data = (np.arange(6, dtype=np.float32).reshape(DATA) - 2.5) / 4
    rt.set_data(x, data)
    try:
        rt.execute({"a": a, "b": b})
    except lm.ShapeError:
        assert (a, b) != DATA, "dims that fit raised"
        return
    assert (a, b) == DATA
    np.testing.assert_allclose(rt.get(out), reference(ops, data.astype(np.float64)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(rt.get(big), np.full(DATA, 2.0))


CASES = dict(ops=st.lists(st.sampled_from([o[0] for o in OPS]), min_size=1, max_size=4),
             a=DIM | st.just(2), b=DIM | st.just(3))


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_native_extreme_dims(ops, a, b):
    run_case(lm.NativeRuntime(), ops, a, b)


@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_cpu_extreme_dims(ops, a, b):
    from conftest import CpuRuntime

    run_case(CpuRuntime(), ops, a, b)


def test_extreme_dims_without_data_are_shape_errors():
    """Constants alone (no input bounds the dims): every (a, b) either runs or is a
    ShapeError naming the output; the huge ones are refused before anything is allocated."""
    from conftest import CpuRuntime

    for runtime in (lm.NativeRuntime(), CpuRuntime()):
        cx = lm.Graph()
        y = (cx.zeros("a", "b") * 3.0 + cx.ones("a", 1)).output()
        rt = cx.search(runtime, progress=False, cache=False)
        huge = [(2**40, 2**40), (2**62, 2), (2**63 - 1, 2**63 - 1)]
        for a, b in huge + [(d, 1) for d in UNALLOCATABLE]:
            with pytest.raises(lm.ShapeError, match="execute: "):
                rt.execute({"a": a, "b": b})
        rt.execute({"a": 2**40, "b": 0})  # empty: nothing to allocate or compute
        assert rt.get(y).shape == (2**40, 0)
        rt.execute({"a": 2, "b": 3})
        np.testing.assert_array_equal(rt.get(y), np.ones((2, 3)))
