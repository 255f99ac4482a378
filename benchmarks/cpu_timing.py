"""What the CPU benchmarks share: timing a call, searching a graph's space on CpuRuntime for its
fastest program, and torch.compile where it is available."""

from __future__ import annotations

import statistics
import sys
import time

import torch

import luminal as lm

NAN = float("nan")


def timeit(fn, repeats: int, min_time: float = 0.3) -> float:
    """Median seconds of fn() after one warm-up, over `repeats` runs (more if they are fast)."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < min_time and len(times) < 50):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timeit_alternating(fns, repeats: int, min_time: float = 0.3) -> list:
    """Median seconds of each of `fns`, run in turns (one call of each a round, after one
    warm-up each), over `repeats` rounds (more if they are fast): on a machine whose speed
    drifts within a minute, engines timed one after the other compare the drift, not the
    engines; in turns each sees the same phases."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    start = time.perf_counter()
    while len(times[0]) < repeats or (time.perf_counter() - start < min_time * len(fns)
                                      and len(times[0]) < 50):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def compile_best(cx, threads, cache, repeats, feeds, budget=8):
    """Searches the graph's space on CpuRuntime (the matmul tilings of its rules, timed) and
    returns the runtime loaded with the winner and a description of it."""
    rt = lm.CpuRuntime(threads=threads, cache_dir=cache)
    cx.build_search_space(lm.CpuRuntime)
    cx.search(rt, budget, cache=False, progress=False)
    for t, v in feeds.items():
        rt.set_data(t, v)
    report = cx.last_search_report
    return rt, report.candidates[report.winner].choice


def try_compile(fn):
    try:
        compiled = torch.compile(fn)
        return compiled
    except Exception as e:  # noqa: BLE001 - any failure means "not available here"
        print(f"  torch.compile unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def time_compiled(compiled, args, repeats):
    if compiled is None:
        return NAN
    try:
        return timeit(lambda: compiled(*args), repeats)
    except Exception as e:  # noqa: BLE001
        print(f"  torch.compile failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
        return NAN
