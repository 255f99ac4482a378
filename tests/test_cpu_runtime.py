"""CpuRuntime beyond the shared conformance tests: the compile cache (hits, per-kernel objects
shared between programs, corrupt objects, concurrent compiles, parallel compile jobs, compiler
errors), deterministic generated C, borrowed inputs and the memory accounting, dims that
change without a recompile, matmul tilings, and random graphs against NativeRuntime."""

import gc
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import luminal as lm
from luminal._core import OpKind
from conftest import CPU_CACHE, assert_close


def _counting_compiler(tmp_path, before=""):
    """A compiler wrapper that appends "compile" (an object, -c) or "link" to calls.log per
    call, runs the shell lines `before`, then runs cc."""
    log = tmp_path / "calls.log"
    script = tmp_path / "cc-wrapper"
    script.write_text(f"""#!/bin/sh
kind=link
for a in "$@"; do [ "$a" = -c ] && kind=compile; done
echo $kind >> '{log}'
{before}
exec cc "$@"
""")
    script.chmod(0o755)
    return str(script), log


def _calls(log, kind=None):
    lines = log.read_text().splitlines() if log.exists() else []
    return len([k for k in lines if kind is None or k == kind])


def _small_graph(scale=2.0):
    cx = lm.Graph()
    x = cx.tensor((3, 4))
    y = (x * scale + 1.0).exp2().sum(1).output()
    return cx, x, y


def _run_small(rt, cx, x, y, scale=2.0):
    data = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    rt = cx.search(rt)
    rt.set_data(x, data)
    rt.execute()
    assert_close(rt.get(y), np.exp2(data * scale + 1).sum(1))
    return rt


def _three_kernels(scale):
    """Three kernels (three outputs of different shapes); only the last depends on `scale`."""
    cx = lm.Graph()
    x = cx.tensor((5, 6))
    outs = [x.sin().sum(1).output(), (x * x).amax(0).output(), (x * scale + 1.0).sqrt().output()]
    return cx, x, outs


def _run_three(rt, scale):
    cx, x, outs = _three_kernels(scale)
    data = torch.rand(5, 6)
    rt = cx.search(rt)
    rt.set_data(x, data)
    rt.execute()
    for got, want in zip([rt.get(t) for t in outs],
                         [data.sin().sum(1), (data * data).amax(0), (data * scale + 1).sqrt()]):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    return rt


def test_cache_hit_does_not_invoke_the_compiler(tmp_path):
    compiler, log = _counting_compiler(tmp_path)
    cache = tmp_path / "cache"
    first = _run_small(lm.CpuRuntime(compiler=compiler, cache_dir=cache), *_small_graph())
    stats = first.last_compile_stats
    assert first._rt.compiled_fresh and stats.linked
    assert stats.kernels >= 1 and stats.objects_compiled == stats.kernels
    assert _calls(log, "compile") == stats.kernels and _calls(log, "link") == 1
    second = _run_small(lm.CpuRuntime(compiler=compiler, cache_dir=cache), *_small_graph())
    assert _calls(log) == stats.kernels + 1 and not second._rt.compiled_fresh
    assert not second.last_compile_stats.linked
    assert second.last_compile_stats.objects_compiled == 0
    cx, x, y = _small_graph(3.0)
    lm.CpuRuntime(compiler=compiler, cache_dir=cache)._load(cx)
    assert _calls(log, "link") == 2  # another program is another link (and compile)


def test_an_empty_cache_dir_keeps_no_files(tmp_path, monkeypatch):
    """cache_dir="" (no cache, as CudaRuntime's) compiles in a temporary directory that goes
    with the runtime, not in the working directory."""
    monkeypatch.chdir(tmp_path)
    rt = _run_small(lm.CpuRuntime(cache_dir=""), *_small_graph())
    scratch = rt._scratch.name
    assert os.listdir(scratch) and not os.listdir(tmp_path)
    del rt
    gc.collect()
    assert not os.path.exists(scratch)


def test_a_program_sharing_all_but_one_kernel_compiles_one_object(tmp_path):
    compiler, log = _counting_compiler(tmp_path)
    cache = tmp_path / "cache"
    first = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=cache), 2.0)
    assert first.last_compile_stats.kernels == 3
    assert first.last_compile_stats.objects_compiled == 3
    second = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=cache), 3.0)
    stats = second.last_compile_stats
    assert stats.kernels == 3 and stats.objects_compiled == 1 and stats.linked
    assert _calls(log, "compile") == 4 and _calls(log, "link") == 2


def test_identical_kernels_are_one_object():
    """Two kernels that differ only in which buffers they touch render as one unit."""
    cx = lm.Graph()
    x, w = cx.tensor((4, 8)), cx.tensor((4, 8))
    a, b = (x * 2.0).sin().output(), (w * 2.0).sin().output()
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    assert rt._rt.program_text().count("(kernel ") == 2
    assert rt.last_compile_stats.kernels == 1
    xd, wd = torch.randn(4, 8), torch.randn(4, 8)
    rt.set_data(x, xd)
    rt.set_data(w, wd)
    rt.execute()
    assert_close(rt.get(a), (xd * 2).sin())
    assert_close(rt.get(b), (wd * 2).sin())


def test_corrupt_cached_objects_are_rebuilt(tmp_path):
    compiler, log = _counting_compiler(tmp_path)
    cache = tmp_path / "cache"
    rt = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=cache), 2.0)
    del rt
    programs = [p for p in os.listdir(cache) if p.endswith(".so")]
    objects = sorted(p for p in os.listdir(cache) if p.endswith(".o"))
    assert len(programs) == 1 and len(objects) == 3
    # A damaged program: relinked from the cached objects, nothing compiled.
    (cache / programs[0]).write_bytes(b"not an ELF object")
    rt = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=cache), 2.0)
    assert rt.last_compile_stats.objects_compiled == 0 and rt.last_compile_stats.linked
    del rt
    # A damaged (garbage) object: that one is compiled again.
    os.remove(cache / programs[0])
    (cache / objects[0]).write_bytes(b"\x7fELF garbage")
    rt = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=cache), 2.0)
    assert rt.last_compile_stats.objects_compiled == 1
    del rt
    # A whole object of another kernel in its place: its seal (disk_cache.h) does not hold, so
    # that one is compiled again.
    os.remove(cache / programs[0])
    (cache / objects[0]).write_bytes((cache / objects[1]).read_bytes())
    rt = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=cache), 2.0)
    assert rt.last_compile_stats.objects_compiled == 1
    assert _calls(log, "compile") == 3 + 1 + 1
    assert not [p for p in os.listdir(cache) if ".tmp." in p]


def test_two_processes_compiling_the_same_program_both_succeed(tmp_path):
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        import numpy as np, luminal as lm
        cx = lm.Graph()
        x = cx.tensor((64,))
        y = (x * x + 3.0).sqrt().output()
        z = (x + 1.0).sin().sum(0).output()
        rt = cx.search(lm.CpuRuntime(cache_dir={str(cache)!r}, threads=1))
        rt.set_data(x, np.arange(64, dtype=np.float32))
        rt.execute()
        assert np.allclose(rt.get(y), np.sqrt(np.arange(64.0) ** 2 + 3)), rt.get(y)
        assert np.allclose(rt.get(z), np.sin(np.arange(64.0) + 1).sum(), atol=1e-4), rt.get(z)
        print("ok")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip().splitlines()[-1] == "ok"
    assert len([p for p in os.listdir(cache) if p.endswith(".so")]) == 1
    assert len([p for p in os.listdir(cache) if p.endswith(".o")]) == 2
    assert not [p for p in os.listdir(cache) if ".tmp." in p]


def test_freeing_a_threaded_runtime_does_not_crash():
    """Closing the last program must leave the OpenMP runtime (and its threads) in place."""
    script = textwrap.dedent(f"""
        import gc, numpy as np, luminal as lm
        cx = lm.Graph()
        x = cx.tensor((256, 256))
        y = (x.sin() * 2.0).output()
        rt = cx.search(lm.CpuRuntime(cache_dir={CPU_CACHE!r}, threads=2))
        rt.set_data(x, np.ones((256, 256), np.float32))
        rt.execute()
        del rt
        gc.collect()
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "ok"


def test_compile_jobs_bounds_the_compilers_running_at_once(tmp_path):
    """Each compile marks itself running for 0.3 s and logs how many were running."""
    running = tmp_path / "running"
    running.mkdir()
    seen = tmp_path / "seen.log"
    before = (f"touch '{running}'/$$; ls '{running}' | wc -l >> '{seen}'; sleep 0.3; "
              f"rm '{running}'/$$")
    compiler, log = _counting_compiler(tmp_path, before)
    for jobs, scale in ((1, 2.0), (3, 3.0)):
        seen.write_text("")
        cx, x, outs = _three_kernels(scale)
        # Only the scale-dependent kernel is new the second time: use new caches instead.
        rt = lm.CpuRuntime(compiler=compiler, cache_dir=tmp_path / f"cache{jobs}",
                           compile_jobs=jobs)
        _run_three(rt, scale)
        counts = [int(n) for n in seen.read_text().split()]
        assert len(counts) == 4  # three objects and the link
        assert max(counts) <= jobs
        if jobs == 3:
            assert max(counts) >= 2
    with pytest.raises(ValueError):
        lm.CpuRuntime(compile_jobs=0)


def test_compiler_error_names_the_message_and_the_source(tmp_path):
    script = tmp_path / "bad-cc"
    script.write_text("#!/bin/sh\necho 'error: the compiler says no' >&2\nexit 3\n")
    script.chmod(0o755)
    cx, x, y = _small_graph()
    with pytest.raises(lm.CompileError, match="the compiler says no") as info:
        cx.search(lm.CpuRuntime(compiler=str(script), cache_dir=tmp_path / "cache"))
    path = re.search(r"generated source: (\S+\.c)\)", str(info.value)).group(1)
    assert os.path.exists(path) and "void lm_k" in open(path).read()


def test_one_kernel_failing_to_compile_names_its_source(tmp_path, monkeypatch):
    """A compiler that rejects only the kernel calling sqrtf (while LM_TEST_REJECT is set):
    the error names that unit, and the others are cached."""
    before = ("[ -n \"$LM_TEST_REJECT\" ] && for a in \"$@\"; do case \"$a\" in *.c) "
              "if grep -q 'sqrtf(v' \"$a\"; then echo 'error: no square roots today' >&2; "
              "exit 1; fi;; esac; done")
    compiler, log = _counting_compiler(tmp_path, before)
    monkeypatch.setenv("LM_TEST_REJECT", "1")
    with pytest.raises(lm.CompileError, match="no square roots today") as info:
        _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=tmp_path / "cache"), 2.0)
    path = re.search(r"generated source: (\S+\.c)\)", str(info.value)).group(1)
    assert "compiling kernel lm_k" in str(info.value)
    assert "sqrtf(v" in open(path).read()
    assert _calls(log, "link") == 0
    # The two kernels that compiled are cached: once it accepts, only the third is compiled.
    monkeypatch.delenv("LM_TEST_REJECT")
    rt = _run_three(lm.CpuRuntime(compiler=compiler, cache_dir=tmp_path / "cache"), 2.0)
    assert rt.last_compile_stats.objects_compiled == 1


def test_missing_compiler_is_a_compile_error(tmp_path):
    cx, x, y = _small_graph()
    with pytest.raises(lm.CompileError, match="not found"):
        cx.search(lm.CpuRuntime(compiler="no-such-cc-here", cache_dir=tmp_path))


def test_generated_c_is_deterministic_and_has_no_includes():
    sources = []
    for _ in range(2):
        cx = lm.Graph()
        x = cx.tensor(("s", 8))
        w = cx.tensor((8, 5))
        y = ((x @ w).exp() + x[:, :5].pad_zeros((0, 0))).amax(1).output()
        rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
        sources.append(rt.source)
    assert sources[0] == sources[1]
    assert "#include" not in sources[0]
    assert "lm_run" in sources[0]


def test_inputs_are_borrowed_not_copied():
    cx = lm.Graph()
    x = cx.tensor((4,))
    y = (x + 1.0).output()
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    data = np.zeros(4, dtype=np.float32)
    rt.set_data(x, data)
    data[:] = [1, 2, 3, 4]  # seen by execute: the runtime reads the caller's buffer
    rt.execute()
    assert rt.get(y).tolist() == [2, 3, 4, 5]
    rt.set_data(x, np.full(4, 7.0, dtype=np.float32))  # a temporary: kept alive by the runtime
    import gc

    gc.collect()
    rt.execute()
    assert rt.get(y).tolist() == [8, 8, 8, 8]
    rt.set_data(x, [1, 1, 1, 1])  # lists and other layouts still work (converted first)
    rt.execute()
    assert rt.get(y).tolist() == [2, 2, 2, 2]


def test_memory_counts_each_input_once_by_kind():
    cx = lm.Graph()
    x = cx.tensor(("s", 100), name="x")
    w = cx.tensor((100,), lm.bfloat16, name="w")
    y = ((x * w).exp() * (x * w).exp().sum(1, keepdim=True)).output()
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    rt._load(cx)  # the graph as written, nothing set yet
    assert rt.memory() == {"borrowed_input_bytes": 0, "owned_input_bytes": 0,
                           "packed_input_bytes": 0, "arena_bytes": 0, "output_bytes": 0}
    rt.set_data(x, np.ones((3, 100), np.float32))
    rt.set_data(w, torch.ones(100, dtype=torch.bfloat16))
    rt.set_data(x, np.ones((5, 100), np.float32))  # replaces the first: counted once
    rt.execute({"s": 5})
    use = rt.memory()
    assert use["borrowed_input_bytes"] == 5 * 100 * 4 + 100 * 2  # bf16 stays 16-bit
    assert use["owned_input_bytes"] == 0
    assert use["output_bytes"] == rt.get(y).nbytes == 5 * 100 * 4
    assert use["arena_bytes"] >= rt._rt.arena_bytes > 0


def test_changing_a_dim_reuses_the_compiled_code(tmp_path):
    compiler, log = _counting_compiler(tmp_path)
    cx = lm.Graph()
    x = cx.tensor(("s", 6))
    w = cx.tensor((6, 3))
    h = (x @ w).exp()
    y = (h / h.sum(1, keepdim=True)).output()
    rt = cx.search(lm.CpuRuntime(compiler=compiler, cache_dir=tmp_path / "cache"))
    wd = torch.randn(6, 3)
    rt.set_data(w, wd)
    for s in (1, 5, 40, 0, 3):
        xd = torch.randn(s, 6)
        cx.set_dim("s", s)
        rt.set_data(x, xd)
        rt.execute(cx.dyn_map)
        assert_close(rt.get(y), torch.softmax(xd @ wd, 1), rtol=1e-5, atol=1e-6)
    assert _calls(log, "link") == 1  # one compile of the program, for every value of s


def test_gather_out_of_range_is_a_shape_error():
    """An index out of range reads 0 (no crash) and raises after the run, as NativeRuntime
    raises; the next run with good indices is right."""
    cx = lm.Graph()
    x, idx = cx.tensor(4), cx.tensor(4, lm.int32)
    out = x._gather(idx).output()
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    rt.set_data(x, [1, 2, 3, 4])
    for bad in ([3, 4, 0, 0], [0, -1, 0, 0]):
        rt.set_data(idx, bad)
        with pytest.raises(lm.ShapeError, match="Gather: an index is out of range"):
            rt.execute()
    rt.set_data(idx, [3, 2, 1, 0])
    rt.execute()
    assert rt.get(out).tolist() == [4, 3, 2, 1]


def test_arena_reuses_dead_buffers():
    cx = lm.Graph()
    x = cx.tensor((256,))
    y = x
    for _ in range(6):  # each step is read twice, so each is its own buffer
        y = y * y + y
    y.output()
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    rt.set_data(x, np.full(256, 0.1, dtype=np.float32))
    rt.execute()
    expected = np.full(256, 0.1, dtype=np.float32)
    for _ in range(6):
        expected = expected * expected + expected
    assert_close(rt.get(y), expected)
    assert 0 < rt._rt.arena_bytes <= 2 * 256 * 4


def test_threads_option():
    cx = lm.Graph()
    x = cx.tensor((300, 300))
    y = (x.sin() * 2.0).sum(1).output()
    data = torch.randn(300, 300)
    for threads in (1, 2, 3):
        rt = cx.search(lm.CpuRuntime(threads=threads, cache_dir=CPU_CACHE))
        rt.set_data(x, data)
        rt.execute()
        assert_close(rt.get(y), (data.sin() * 2).sum(1), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        lm.CpuRuntime(threads=0)


MATMUL_SHAPES = [
    ((37, 53), (53, 29), False),   # no dim a multiple of a tile
    ((3, 64, 40), (40, 48), False),  # batched, broadcast B
    ((70, 33), (45, 33), True),    # B transposed (x @ w.T)
    ((6, 3, 20), (6, 20, 300), False),  # few rows, many (batch, n block) tasks
    ((4, 0), (0, 5), False),       # empty k: zeros
]


@pytest.mark.parametrize("a_shape,b_shape,transpose", MATMUL_SHAPES)
def test_matmul_tilings_match_torch(a_shape, b_shape, transpose):
    """Every tiling the CPU rules offer (one program per schedule, from the search space) is
    a register-blocked kernel that matches torch."""
    cx = lm.Graph()
    a = cx.tensor(a_shape)
    b = cx.tensor(b_shape)
    y = (a @ (b.T if transpose else b)).output()
    ad, bd = torch.randn(a_shape), torch.randn(b_shape)
    expected = ad @ (bd.T if transpose else bd)
    rt = lm.CpuRuntime(cache_dir=CPU_CACHE)
    space = lm._core.SearchSpace(cx._g, rt.rewrite_rules(), lm._core.RunnerLimits(), rt._rt)
    programs = space.extract(16, {})
    tiled = 0 not in a_shape  # an empty product is no matmul kernel
    schedules = {str(p.graph.node_schedule(n)) for p in programs for n in p.graph.topo_order()}
    assert len(schedules) >= (6 if tiled else 1)  # the unscheduled default and 5 rules
    for program in programs:
        rt._load(cx, program)
        assert ("lm_mm_" in rt.source) == tiled
        rt.set_data(a, ad)
        rt.set_data(b, bd)
        rt.execute()
        assert_close(rt.get(y), expected, rtol=1e-4, atol=1e-4)


def test_unknown_tuning_parameter_is_a_compile_error():
    cx, x, y = _small_graph()
    choice = lm._core.TuningChoice()
    choice.params = [("tile_q", 4)]
    with pytest.raises(lm.CompileError, match="tile_q"):
        lm.CpuRuntime(cache_dir=CPU_CACHE)._rt.compile(cx._g, choice)


# ---- random graphs: CpuRuntime against NativeRuntime --------------------------------------

UNARY = [OpKind.Exp2, OpKind.Sin, OpKind.Sqrt, OpKind.Recip, OpKind.Log2]
BINARY = [OpKind.Add, OpKind.Mul, OpKind.Mod, OpKind.LessThan]


@st.composite
def random_graphs(draw):
    """A recipe: input shape and a list of steps over a pool of (3, 4)-shaped tensors."""
    steps = []
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce", "view", "cast", "gather"]))
        a = draw(st.integers(0, 50))
        b = draw(st.integers(0, 50))
        steps.append((kind, a, b, draw(st.integers(0, 3))))
    return steps


def _build(steps):
    cx = lm.Graph()
    x = cx.tensor((3, 4))
    y = cx.tensor((3, 4))
    pool = [x, y, x.permute(1, 0).permute(1, 0)]
    for kind, a, b, k in steps:
        t = pool[a % len(pool)]
        u = pool[b % len(pool)]
        if kind == "unary":
            t = t.abs() + 0.5 if UNARY[k % 5] in (OpKind.Log2, OpKind.Sqrt) else t
            pool.append(t._unary(UNARY[(k + a) % 5]))
        elif kind == "binary":
            op = BINARY[k]
            if op == OpKind.Mod:
                u = u.abs() + 1.0
            r = t._binary(op, u)
            pool.append(r._cast(lm.float32) if op == OpKind.LessThan else r)
        elif kind == "reduce":
            op = OpKind.SumReduce if k % 2 else OpKind.MaxReduce
            pool.append(t._reduce(op, k % 2).unsqueeze(k % 2).expand(3, 4))
        elif kind == "view":
            views = [t.flip(1), t[:, 1:].pad_zeros((0, 1)), t.T.reshape(3, 4), t[:1].expand(3, 4)]
            pool.append(views[k])
        elif kind == "cast":
            dtype = [lm.float16, lm.bfloat16, lm.int32, lm.float32][k]
            pool.append((t * 4.0)._cast(dtype)._cast(lm.float32))
        else:
            idx = cx.iota(lm.Expr("z") * (k + 1) % 12, 12).reshape(3, 4)
            pool.append(t._gather(idx))
    return cx, x, y, pool[3:] or [x + y]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_random_graphs_match_native(steps):
    results = []
    data = [torch.randn(3, 4, generator=torch.Generator().manual_seed(s)) for s in (1, 2)]
    for runtime in (lm.NativeRuntime(), lm.CpuRuntime(cache_dir=CPU_CACHE)):
        cx, x, y, outs = _build(steps)
        for t in outs:
            t.output()
        rt = cx.search(runtime)
        rt.set_data(x, data[0])
        rt.set_data(y, data[1])
        rt.execute()
        results.append([rt.get(t) for t in outs])
    for got, want in zip(results[1], results[0]):
        assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_float_to_int_to_float_gives_positive_zero():
    """(float)(int)x must not become truncf(x): -0.4 -> 0 -> +0.0, so 1/x is +inf."""
    cx = lm.Graph()
    x = cx.tensor((3,))
    y = x._cast(lm.int32)._cast(lm.float32)._unary(OpKind.Recip).output()
    rt = cx.search(lm.CpuRuntime(cache_dir=CPU_CACHE))
    data = torch.tensor([-0.4, 0.4, -0.0])
    rt.set_data(x, data)
    rt.execute()
    assert rt.get(y).tolist() == data.to(torch.int32).float().reciprocal().tolist()


@pytest.mark.parametrize("size", [4, 16])
def test_a_reduction_over_a_relu_of_a_padded_pair_compiles(size):
    # relu is a max over the pair (x, 0); lowering the pair's padded place left values the
    # store did not need, which once ended up last after the reduction and were stored
    # (uncompilable C: the loop's constants read after the loop).
    from luminal.nn import functional as F
    from conftest import CpuRuntime, run

    cx = lm.Graph()
    x = cx.tensor((1, 8, size, size), lm.float32, "x")
    m = cx.tensor((8,), lm.float32, "m")
    out = F.adaptive_avg_pool2d((x - m.reshape(1, 8, 1, 1)).relu(), 1)
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((1, 8, size, size)).astype(np.float32)
    mv = rng.standard_normal(8).astype(np.float32)
    got, = run(cx, {x: xv, m: mv}, [out], CpuRuntime)
    want = torch.nn.functional.adaptive_avg_pool2d(
        torch.relu(torch.from_numpy(xv) - torch.from_numpy(mv).reshape(1, 8, 1, 1)), 1)
    assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_precompile_compiles_the_kernel_objects_and_links_nothing(tmp_path):
    """Runtime.precompile (the search's kernels compiled ahead): every kernel object, no link;
    the candidate's compile then compiles no object, only links, and runs right."""
    compiler, log = _counting_compiler(tmp_path)
    rt = lm.CpuRuntime(compiler=compiler, cache_dir=tmp_path / "cache")
    cx, x, outs = _three_kernels(2.0)
    prepared = rt._rt.prepare(cx._g, lm._core.TuningChoice())
    rt._rt.precompile(prepared)
    assert _calls(log, "compile") == 3 and _calls(log, "link") == 0
    rt._rt.compile_prepared(prepared)
    stats = rt.last_compile_stats
    assert stats.objects_compiled == 0 and stats.linked
    assert _calls(log, "compile") == 3 and _calls(log, "link") == 1
    rt._load(cx)  # the same program: from the cache
    assert _calls(log) == 4
    data = torch.rand(5, 6)
    rt.set_data(x, data)
    rt.execute()
    assert_close(rt.get(outs[2]), (data * 2 + 1).sqrt(), rtol=1e-5, atol=1e-6)


def test_a_search_compiles_its_candidates_kernels_before_it_runs_one(tmp_path, monkeypatch):
    """The search hands each distinct candidate to precompile as the extraction takes it,
    and every one of them is done before the first candidate is compiled and run."""
    from luminal.search import driver, precompile

    events = []
    compile_ahead = precompile.Precompiler._compile
    monkeypatch.setattr(precompile.Precompiler, "_compile",
                        lambda self, p: (compile_ahead(self, p), events.append("ahead")))
    prepared_of = driver.prepared_of
    monkeypatch.setattr(driver, "prepared_of",
                        lambda *a: (events.append("compile"), prepared_of(*a))[1])
    rt = lm.CpuRuntime(cache_dir=tmp_path / "cache")
    cx = lm.Graph()
    a = cx.tensor((64, 64))
    b = cx.tensor((64, 64))
    y = ((a @ b).relu() + 1.0).output()
    cx.search(rt, budget=3, cache=False)
    assert events.count("ahead") >= 2 and "compile" in events
    assert events.index("compile") > max(i for i, e in enumerate(events) if e == "ahead")
    da, db = torch.rand(64, 64), torch.rand(64, 64)
    rt.set_data(a, da)
    rt.set_data(b, db)
    rt.execute()
    assert_close(rt.get(y), (da @ db).relu() + 1.0, rtol=1e-4, atol=1e-4)
