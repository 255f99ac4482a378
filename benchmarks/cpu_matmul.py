"""The CPU benchmarks of matrix products (benchmarks/cpu.py runs them): matmul, GEMMs with a
parameter weight in f32 against numpy/OpenBLAS in its own process and in bf16 against torch's
bf16 (a bf16 model's Linear, x rounded to bf16), and the decode-shaped products: a Linear's and
the LM head's GEMV with f32 and bf16 weights, and in the GGUF block types."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import luminal as lm
from luminal.nn import Linear
from luminal.nn.functional import quantize_activations
from cpu_timing import NAN, compile_best, time_compiled, timeit, timeit_alternating

def bench_matmul(n, ctx):
    cx = lm.Graph()
    a, b = cx.tensor((n, n)), cx.tensor((n, n))
    c = (a @ b).output()
    an = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    bn = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, {a: an, b: bn})
    rt.execute()
    ref = an.astype(np.float64) @ bn.astype(np.float64)
    err = np.abs(rt.get(c) - ref).max() / np.abs(ref).max()
    assert err < 1e-4, f"matmul {n}: relative error {err}"
    at, bt = torch.from_numpy(an), torch.from_numpy(bn)
    flop = 2.0 * n ** 3 / 1e9
    reps = max(2, ctx.repeats // (4 if n >= 4096 else 1))
    lum = flop / timeit(lambda: rt.execute(), reps)
    tor = flop / timeit(lambda: torch.mm(at, bt), reps)
    nump = flop / timeit(lambda: an @ bn, reps)
    comp = flop / time_compiled(ctx.compiled(lambda x, y: x @ y), (at, bt), reps)
    return dict(name=f"matmul {n}^3 f32", unit="GFLOP/s", lm=lum, torch=tor, numpy=nump,
                compile=comp, note=f"tiles {choice}", target=("torch", 1.0))


NUMPY_GEMM = """
import json, sys, time, statistics
import numpy as np
try:
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(int(sys.argv[1]))
    blas = [(i.get("internal_api"), i.get("architecture")) for i in threadpool_info()
            if i.get("user_api") == "blas"]
except ImportError:
    blas = []
out = {"blas": blas}
for m, k, n, repeats in json.loads(sys.argv[2]):
    a = np.random.default_rng(0).standard_normal((m, k), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal((n, k), dtype=np.float32)
    a @ w.T
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < 0.3 and len(times) < 50):
        t0 = time.perf_counter()
        a @ w.T
        times.append(time.perf_counter() - t0)
    out[f"{m}x{k}x{n}"] = 2.0 * m * k * n / statistics.median(times) / 1e9
print(json.dumps(out))
"""


def numpy_gemm_rates(shapes, ctx) -> dict:
    """GFLOP/s of numpy/OpenBLAS for x (m, k) @ W.T (W (n, k)) per (m, k, n), timed in a child
    process without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set on some machines for old OpenBLAS
    builds; they slow a current one), so only numpy's process runs without them."""
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    jobs = [(m, k, n, max(2, ctx.repeats // (4 if m * k * n >= 2 ** 34 else 1)))
            for m, k, n in shapes]
    done = subprocess.run([sys.executable, "-c", NUMPY_GEMM, str(ctx.threads), json.dumps(jobs)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def bench_gemm(m, k, n, ctx):
    """y = x @ W.T for x (m, k) and a parameter W (n, k), as nn.Linear holds it: the search
    may lay W out once as its GEMM's panels (pack_b). GFLOP/s against numpy/OpenBLAS timed in
    its own process (numpy_gemm_rates) and torch in this one."""
    cx = lm.Graph()
    x = cx.tensor((m, k))
    w = cx.tensor((n, k), parameter=True)
    y = (x @ w.t()).output()
    xn = np.random.default_rng(0).standard_normal((m, k), dtype=np.float32)
    wn = np.random.default_rng(1).standard_normal((n, k), dtype=np.float32)
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, {x: xn, w: wn})
    rt.execute()
    ref = xn.astype(np.float64) @ wn.astype(np.float64).T
    err = np.abs(rt.get(y) - ref).max() / np.abs(ref).max()
    assert err < 1e-4, f"gemm {m}x{k}x{n}: relative error {err}"
    flop = 2.0 * m * k * n / 1e9
    reps = max(2, ctx.repeats // (4 if m * k * n >= 2 ** 34 else 1))
    xt, wt = torch.from_numpy(xn), torch.from_numpy(wn)
    with torch.no_grad():
        lum, tor = (flop / t for t in timeit_alternating(
            [lambda: rt.execute(), lambda: F.linear(xt, wt)], reps))
    nump = ctx.numpy_gemm.get(f"{m}x{k}x{n}", NAN)
    packed = rt.memory()["packed_input_bytes"] / 1e6
    return dict(name=f"gemm {m}x{k}x{n} param", unit="GFLOP/s", lm=lum, torch=tor, numpy=nump,
                compile=NAN, note=f"{choice}; panels {packed:.0f} MB", target=("numpy", 0.95))


def bench_gemm_bf16(m, k, n, ctx):
    """A bf16 model's Linear at prefill: x (m, k) rounded to bf16 (Linear(activations='bf16'))
    times a bf16 parameter W (n, k). The search may multiply bf16 pairs in hardware
    (bf16_dot, where the machine has AVX512-BF16) or widen both to f32. GFLOP/s against torch's
    bf16 F.linear (oneDNN) on the same bf16 values."""
    cx = lm.Graph()
    x = cx.tensor((m, k))
    lin = Linear(k, n, bias=False, dtype=lm.bfloat16, activations="bf16")
    y = lin(x).output()
    w = lin.weight.tensor(cx)
    gen = torch.Generator().manual_seed(0)
    xt = torch.randn(m, k, generator=gen)
    wt = (torch.randn(n, k, generator=gen) / math.sqrt(k)).bfloat16()
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, {x: xt, w: wt})
    rt.execute()
    ref = xt.bfloat16().double() @ wt.double().T
    err = float((torch.from_numpy(rt.get(y)).double() - ref).abs().max() / ref.abs().max())
    assert err < 1e-4, f"gemm bf16 {m}x{k}x{n}: relative error {err}"
    flop = 2.0 * m * k * n / 1e9
    reps = max(2, ctx.repeats)
    xb = xt.bfloat16()
    with torch.no_grad():
        lum, tor = (flop / t for t in timeit_alternating(
            [lambda: rt.execute(), lambda: F.linear(xb, wt)], reps))
    dot = "bf16_dot" in (cx.last_search_report.winner_program or "")
    return dict(name=f"gemm {m}x{k}x{n} bf16", unit="GFLOP/s", lm=lum, torch=tor, numpy=NAN,
                compile=NAN, note=f"{choice}; {'bf16 dot products' if dot else 'widened'}",
                target=("torch", 1.2))


def bench_gemv(n, k, wdtype, ctx):
    """y = x @ W.T for one row x (1, k) and W (n, k) as nn.Linear holds it, f32 or bf16 (read
    by the f32 matmul, widened in the kernel): a decode step's Linear, or with n = 128256 the
    LM head. Rates are W's bytes in the row's dtype per call, so every ratio is one of times;
    numpy multiplies the f32 W, torch W in the row's dtype (x in it too)."""
    bf16 = wdtype == "bf16"
    cx = lm.Graph()
    x = cx.tensor(("s", k))
    w = cx.tensor((n, k), lm.bfloat16 if bf16 else lm.float32)
    y = (x @ (w.to(lm.float32) if bf16 else w).t()).output()
    cx.set_dim("s", 1)
    gen = torch.Generator().manual_seed(0)
    xt = torch.randn(1, k, generator=gen)
    wf = torch.randn(n, k, generator=gen) / math.sqrt(k)
    wt = wf.bfloat16() if bf16 else wf
    wn = wt.float().numpy() if bf16 else wf.numpy()
    xn = xt.numpy()
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, {x: xt, w: wt})
    rt.execute(cx.dyn_map)
    ref = xn.astype(np.float64) @ wn.astype(np.float64).T
    err = np.abs(rt.get(y) - ref).max() / np.abs(ref).max()
    assert err < 1e-4, f"gemv {n}x{k} {wdtype}: relative error {err}"
    gb = wt.numel() * wt.element_size() / 1e9
    reps = max(5, ctx.repeats)
    lum = gb / timeit(lambda: rt.execute(cx.dyn_map), reps)
    xw = xt.bfloat16() if bf16 else xt
    with torch.no_grad():
        tor = gb / timeit(lambda: F.linear(xw, wt), reps)
    nump = gb / timeit(lambda: xn @ wn.T, reps)
    pct = 100 * lum / ctx.read_bandwidth
    name = ("LM head" if n > 65536 else "gemv") + f" 1x{k}@{k}x{n} {wdtype}"
    arena = rt._rt.arena_bytes / 1e6
    return dict(name=name, unit="GB/s", lm=lum, torch=tor, numpy=nump, compile=NAN,
                note=f"{pct:.0f}% of {ctx.read_bandwidth:.1f} GB/s read; arena {arena:.0f} MB; "
                     f"{choice}", target=("numpy", 1.0), pct=pct, pct_target=90)


def _quantized_linear(m, k, n, kind, acts, ctx):
    """x (m, k) times W (n, k) in GGUF block type `kind` (weights/quantize.py from random
    normals), read from its blocks in the kernel, times x as it is (acts "f32") or x's Q8_0
    round trip (acts "q8"), searched (budget 4) at m rows and checked against float64 numpy
    on the dequantized W: (runtime, raw W, W dequantized, x)."""
    from luminal.weights.gguf import dequantize
    from luminal.weights.quantize import quantize

    qtype = lm.dtype.to_dtype(kind)
    cx = lm.Graph()
    x = cx.tensor(("s", k))
    w = cx.tensor((n, k), qtype, name="w", parameter=True)
    a = quantize_activations(x) if acts == "q8" else x
    y = (a @ w.to(lm.float32).t()).output()
    cx.set_dim("s", m)
    rng = np.random.default_rng(0)
    raw = quantize(rng.standard_normal((n, k), dtype=np.float32) / math.sqrt(k), qtype)
    wn = dequantize(raw, qtype)
    xn = rng.standard_normal((m, k), dtype=np.float32)
    rt = cx.search(lm.CpuRuntime(threads=ctx.threads, cache_dir=ctx.cache), 4, cache=False,
                   progress=False)
    rt.set_storage(w, raw)
    rt.set_data(x, xn)
    rt.execute(cx.dyn_map)
    ref = xn.astype(np.float64) @ wn.astype(np.float64).T
    err = np.abs(rt.get(y) - ref).max() / np.abs(ref).max()
    assert err < (2e-2 if acts == "q8" else 1e-4), f"{m}x{k}@{k}x{n} {kind}: relative error {err}"
    return cx, rt, raw, wn, xn


def bench_qgemv(n, k, kind, acts, ctx):
    """bench_gemv's decode Linear with W in a GGUF block type (_quantized_linear), times x as
    it is (acts "f32": the f32 quantized GEMV) or x's Q8_0 round trip (acts "q8": the int8 dot
    products, as GGUF models run by default). Rates are the quantized bytes per call, so every
    ratio is one of times; numpy and torch multiply W dequantized to f32 by x."""
    cx, rt, raw, wn, xn = _quantized_linear(1, k, n, kind, acts, ctx)
    gb = raw.nbytes / 1e9
    reps = max(5, ctx.repeats)
    lum = gb / timeit(lambda: rt.execute(cx.dyn_map), reps)
    wt, xt = torch.from_numpy(wn), torch.from_numpy(xn)
    with torch.no_grad():
        tor = gb / timeit(lambda: F.linear(xt, wt), reps)
    nump = gb / timeit(lambda: xn @ wn.T, reps)
    pct = 100 * lum / ctx.read_bandwidth
    report = cx.last_search_report
    winner = ("int8 dot products" if "lm_qdot4" in rt.source else
              "quantized GEMV" if "lm_qgemv" in rt.source else "dequantized copy")
    return dict(name=f"gemv 1x{k}@{k}x{n} {kind} {acts}", unit="GB/s", lm=lum, torch=tor, numpy=nump,
                compile=NAN, note=f"{pct:.0f}% of {ctx.read_bandwidth:.1f} GB/s read; "
                f"{raw.nbytes / 1e6:.1f} MB; {winner} of {len(report.candidates)} candidates; "
                f"torch and numpy read f32", target=("numpy", 1.0), pct=pct, pct_target=80)


def bench_qgemm(m, k, n, kind, ctx):
    """A GGUF model's Linear at prefill: x (m, k)'s Q8_0 round trip times W (n, k) in a GGUF
    block type (_quantized_linear), which the search may multiply in the int8 GEMM (int8_gemm,
    on a machine with AVX512-VNNI) or in the f32 GEMM on x's round trip dequantized. GFLOP/s
    against torch's f32 and bf16 F.linear of the dequantized W (what a torch user runs), and
    numpy's f32."""
    cx, rt, raw, wn, xn = _quantized_linear(m, k, n, kind, "q8", ctx)
    flop = 2.0 * m * k * n / 1e9
    reps = max(2, ctx.repeats)
    wt, xt = torch.from_numpy(wn), torch.from_numpy(xn)
    wb, xb = wt.bfloat16(), xt.bfloat16()
    with torch.no_grad():
        lum, tor, bf = (flop / t for t in timeit_alternating(
            [lambda: rt.execute(cx.dyn_map), lambda: F.linear(xt, wt),
             lambda: F.linear(xb, wb)], reps))
    nump = flop / timeit(lambda: xn @ wn.T, reps)
    winner = "int8 GEMM" if "lm_qmm_" in rt.source else "f32 GEMM"
    return dict(name=f"gemm {m}x{k}x{n} {kind} q8", unit="GFLOP/s", lm=lum, torch=tor,
                numpy=nump, compile=NAN, note=f"{winner}; torch bf16 {bf:.0f} GFLOP/s "
                f"({lum / bf:.2f}x); torch and numpy multiply W dequantized",
                target=("torch", 1.2))
