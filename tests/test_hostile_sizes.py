"""Buffer sizes that do not fit (#19): dims whose element count or byte size passes int64, or
passes what a buffer may hold (core/sizes.h), on NativeRuntime, CpuRuntime, CUDA's planning
and the C API. Each is a ShapeError naming the tensor and its dims' values, never a wrapped
size that writes past a short buffer (a segfault), a MemoryError or a std::bad_alloc. Runs
that might kill the process run in a subprocess."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import luminal as lm
from luminal import _core

DTYPES = [lm.float32, lm.float16, lm.bfloat16, lm.int32, lm.bool_]


def runtimes():
    from conftest import CpuRuntime

    return [lm.NativeRuntime(), CpuRuntime()]


def in_subprocess(code: str) -> str:
    """Runs ``code`` in a fresh Python; its stdout, after checking that it was not killed."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_square_of_two_to_the_31_is_a_shape_error(dtype):
    """zeros(s, s) with s = 2**31: 2**62 elements, 2**62 to 2**64 bytes (wrapped to 0 bytes
    for f32 before, and the kernel wrote into an empty buffer)."""
    for runtime in runtimes():
        cx = lm.Graph()
        y = cx.zeros("s", "s", dtype=dtype).output()
        rt = cx.search(runtime, progress=False, cache=False)
        with pytest.raises(lm.ShapeError, match=r"execute: output %\d+ of shape \(s, s\) and "
                                                r"dtype \w+ with s = 2147483648: .*256 TiB"):
            rt.execute({"s": 2**31})
        rt.execute({"s": 3})  # the same program still runs with dims that fit
        np.testing.assert_array_equal(rt.get(y), np.zeros((3, 3)))


@pytest.mark.parametrize("dims,values", [
    (("a", "b", "c"), {"a": 2**21, "b": 2**21, "c": 2**21}),      # 2**63 elements
    (("a", "b", "c", "d"), {"a": 2**16, "b": 2**16, "c": 2**16, "d": 2**16}),  # 2**64
    (("a", 5, "b"), {"a": 2**31 + 1, "b": 2**31 + 7}),
])
def test_products_of_several_dims_past_int64_are_shape_errors(dims, values):
    for runtime in runtimes():
        cx = lm.Graph()
        (cx.zeros(*dims, dtype=lm.bool_) + 1.0).output()
        rt = cx.search(runtime, progress=False, cache=False)
        with pytest.raises(lm.ShapeError, match="execute: .* with a = "):
            rt.execute(values)


def test_a_static_shape_past_the_limit_is_a_shape_error():
    """Constant dims: 2**64 elements is refused while the search's e-graph sizes the nodes
    (the symbolic arithmetic is checked); 2**50 elements fit int64 and reach execute."""
    for runtime in runtimes():
        cx = lm.Graph()
        cx.zeros(2**32, 2**32).output()
        with pytest.raises(lm.ShapeError, match="integer overflow"):
            cx.search(runtime, progress=False, cache=False)
        cx = lm.Graph()
        cx.zeros(2**25, 2**25).output()
        rt = cx.search(runtime, progress=False, cache=False)
        with pytest.raises(lm.ShapeError, match=r"execute: output .*\(33554432, 33554432\)"):
            rt.execute()


def test_a_size_the_machine_cannot_allocate_is_a_shape_error():
    """2**44 f32 elements (64 TiB) fit the size checks but no machine's memory: the failed
    allocation is a ShapeError naming the output, not MemoryError: std::bad_alloc."""
    if open("/proc/sys/vm/overcommit_memory").read().strip() == "1":
        pytest.skip("memory overcommitted always: the allocation would succeed, then kill")
    if os.environ.get("LUMINAL_SANITIZED"):
        pytest.skip("ASan's operator new aborts where the system's throws std::bad_alloc")
    out = in_subprocess("""
        import luminal as lm
        from luminal import CpuRuntime
        for runtime in (lm.NativeRuntime(), CpuRuntime(cache_dir="")):
            cx = lm.Graph()
            cx.zeros("s", 2**22).output()
            rt = cx.search(runtime, 1, progress=False, cache=False)
            try:
                rt.execute({"s": 2**22})
            except lm.ShapeError as e:
                print(type(e).__name__, e)
    """)
    lines = [line for line in out.splitlines() if line.startswith("ShapeError")]
    assert len(lines) == 2, out
    for line in lines:
        assert line.startswith("ShapeError execute: output"), line
        assert "with s = 4194304" in line and "could not be allocated" in line, line


def test_cuda_planning_checks_sizes():
    """cuda_launch_plan and the CUDA arena layout (what CudaRuntime plans before it allocates)
    refuse the same sizes, without a GPU."""
    cx = lm.Graph()
    cx.zeros("s", "s").output()
    with pytest.raises(lm.ShapeError, match=r"cuda_launch_plan: output %\d+ .*s = 2147483648"):
        _core.cuda_launch_plan(cx._g, "sm_90", _core.TuningChoice(), {"s": 2**31}, 1)
    with pytest.raises(lm.ShapeError, match="256 TiB"):
        _core.cuda_arena_layout(cx._g, {"s": 2**31})
    launches, buffers, dims = _core.cuda_launch_plan(cx._g, "sm_90", _core.TuningChoice(),
                                                     {"s": 5}, 1)
    assert [b[3] for b in buffers if b[0] == 1] == [25]


C_PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include "luminal.h"
int main(void) {
  lm_graph* g = lm_graph_new();
  lm_tensor* c = lm_constant(g, 1.0, LM_F32);
  lm_tensor* row = lm_insert_axis(g, c, 0, INT64_C(1) << 31);
  lm_tensor* square = lm_insert_axis(g, row, 0, INT64_C(1) << 31);
  lm_output(g, square);
  lm_runtime* rt = lm_native_runtime_new(g);
  lm_status status = lm_execute(rt, 0, NULL, NULL);
  printf("%s\t%s\n", lm_status_name(status), lm_last_error());
  printf("%lld\n", (long long)lm_output_numel(rt, square));
  lm_runtime_free(rt);
  lm_graph_free(g);
  return 0;
}
"""


def test_the_c_api_reports_a_size_past_the_limit(tmp_path):
    from test_c_api import _build_and_run

    source = tmp_path / "sizes.c"
    source.write_text(C_PROGRAM)
    run = _build_and_run(str(source), tmp_path)
    assert run.returncode == 0, run.stderr
    status, message = run.stdout.splitlines()[0].split("\t")
    assert status == "LM_SHAPE_ERROR"
    assert "output" in message and "(2147483648, 2147483648)" in message


# ---- the search's check inputs ---------------------------------------------------------

def lookup_graph(vocab, dim=64):
    cx = lm.Graph()
    table = cx.tensor((vocab, dim))
    ids = cx.tensor((3,), lm.int32)
    (table.index_select(0, ids) * 2.0).output()
    return cx


@pytest.mark.parametrize("vocab,message", [
    (2**42, "needs more than 256 TiB"),
    (2**38, "do not fit in this machine's memory"),
])
def test_check_inputs_too_big_to_draw_are_a_shape_error(vocab, message):
    """An absurd vocabulary: the search's random check inputs for the table cannot be drawn.
    A ShapeError naming the input, not numpy's MemoryError."""
    if "memory" in message and open("/proc/sys/vm/overcommit_memory").read().strip() == "1":
        pytest.skip("memory overcommitted always: the draw would succeed, then kill")
    cx = lookup_graph(vocab)
    with pytest.raises(lm.ShapeError, match=f"search: input '.*' of shape \\({vocab}, 64\\).*"
                                            f"{message}"):
        cx.search(lm.NativeRuntime(), 2, progress=False, cache=False)


def test_check_inputs_are_drawn_once_in_their_storage_dtype():
    """The search's check inputs hold each input once per input set in its own dtype: no
    float64 copies of the weights (a multi-GB spike for a real model). Peak numpy memory of
    a budget-2 search of a lookup in a 16 MiB f32 table (bf16: 8 MiB) stays under two copies
    of the table (the ordinary set and the base of the extra sets) and some slack."""
    import tracemalloc

    for dtype, itemsize in ((lm.float32, 4), (lm.bfloat16, 2)):
        cx = lm.Graph()
        table = cx.tensor((65536, 64), dtype)
        ids = cx.tensor((3,), lm.int32)
        (table.index_select(0, ids) * 2.0).output()
        table_bytes = 65536 * 64 * itemsize
        tracemalloc.start()
        try:
            cx.search(lm.NativeRuntime(), 2, progress=False, cache=False)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2 * table_bytes + (4 << 20), (dtype, peak, table_bytes)
