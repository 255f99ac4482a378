"""CpuRuntime against torch eager (same thread count), numpy and torch.compile, side by side
in one run: matmul, GEMMs with a parameter weight (1024^3, 4096^3 and the prefill shapes
128x2048x8192, 128x8192x2048) against numpy/OpenBLAS timed in its own process, decode-shaped
matrix-vector products (a Linear's and the LM head's, f32 and bf16 weights, and a Linear's in
the GGUF block types, as a fraction of the read bandwidth measured in the same run), a fused elementwise chain, softmax,
log_softmax, layer_norm and rms_norm over (4096, 4096) (as a fraction of the copy bandwidth of
the same run), Linear + bias + GELU and a SwiGLU MLP (matmul epilogues), rms_norm + Linear with
the norm in the matmul's kernel (its prologue) and without (128 and 1 rows), causal attention
(32 heads, head_dim 64, s = 128, 512, 2048: the fused attention kernel against torch eager's
scaled_dot_product_attention) and a Llama-style decoder block. Prints one table of rates and ratios. Usage: python benchmarks/cpu.py [--quick]
[--no-compile] [--threads N]
[--only NAME...] (benchmarks whose name starts with one of them: matmul, gemm, gemv, ...)."""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

import luminal as lm
from bandwidth import read_bandwidth
from cpu_matmul import (bench_gemm, bench_gemm_bf16, bench_gemv, bench_matmul, bench_qgemm,
                        bench_qgemv, numpy_gemm_rates)
from cpu_timing import NAN, compile_best, timeit, time_compiled, try_compile

# ---- luminal graphs written from primitives / hl_ops ----------------------------------------

def lm_softmax(x, dim=-1):
    e = (x - x.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


def lm_layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    c = x - mean
    var = (c * c).mean(-1, keepdim=True)
    return c * (var + eps).sqrt().reciprocal() * w + b


def lm_rms_norm(x, w, eps=1e-6):
    return x * ((x * x).mean(-1, keepdim=True) + eps).sqrt().reciprocal() * w


def lm_silu(x):
    return x * (1.0 + (-x).exp()).reciprocal()


def lm_decoder(x, p, heads, mask):
    s, h = x.shape
    hd = h // heads
    a = lm_rms_norm(x, p["n1"])
    q = (a @ p["wq"].T).reshape(s, heads, hd).permute(1, 0, 2)
    k = (a @ p["wk"].T).reshape(s, heads, hd).permute(1, 0, 2)
    v = (a @ p["wv"].T).reshape(s, heads, hd).permute(1, 0, 2)
    att = lm_softmax((q @ k.transpose(1, 2)) * (1.0 / math.sqrt(hd)) + mask)
    o = (att @ v).permute(1, 0, 2).reshape(s, h)
    x = x + o @ p["wo"].T
    b = lm_rms_norm(x, p["n2"])
    return x + (lm_silu(b @ p["w1"].T) * (b @ p["w3"].T)) @ p["w2"].T


def torch_decoder(x, p, heads, mask):
    s, h = x.shape
    hd = h // heads
    a = F.rms_norm(x, (h,), p["n1"], 1e-6)
    q = F.linear(a, p["wq"]).view(s, heads, hd).transpose(0, 1)
    k = F.linear(a, p["wk"]).view(s, heads, hd).transpose(0, 1)
    v = F.linear(a, p["wv"]).view(s, heads, hd).transpose(0, 1)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    x = x + F.linear(o.transpose(0, 1).reshape(s, h), p["wo"])
    b = F.rms_norm(x, (h,), p["n2"], 1e-6)
    return x + F.linear(F.silu(F.linear(b, p["w1"])) * F.linear(b, p["w3"]), p["w2"])


# ---- benchmarks ---------------------------------------------------------------------------

def bench_elementwise(ctx):
    n = 16 * 1024 * 1024
    cx = lm.Graph()
    x, y = cx.tensor((n,)), cx.tensor((n,))
    out = (x * (1.0 + (-x).exp()).reciprocal() + y).output()  # x * sigmoid(x) + y
    xn = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    yn = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    rt = cx.search(lm.CpuRuntime(threads=ctx.threads, cache_dir=ctx.cache))
    rt.set_data(x, xn)
    rt.set_data(y, yn)
    rt.execute()
    xt, yt = torch.from_numpy(xn), torch.from_numpy(yn)
    np.testing.assert_allclose(rt.get(out), (xt * torch.sigmoid(xt) + yt).numpy(), rtol=1e-5,
                               atol=1e-5)
    gb = 3 * n * 4 / 1e9

    def numpy_chain():
        return xn * (1.0 / (1.0 + np.exp(-xn))) + yn

    lum = gb / timeit(lambda: rt.execute(), ctx.repeats)
    tor = gb / timeit(lambda: xt * torch.sigmoid(xt) + yt, ctx.repeats)
    nump = gb / timeit(numpy_chain, max(3, ctx.repeats // 2))
    comp = gb / time_compiled(ctx.compiled(lambda a, b: a * torch.sigmoid(a) + b), (xt, yt),
                              ctx.repeats)
    pct = 100 * lum / ctx.bandwidth
    return dict(name="x*sigmoid(x)+y 16M f32", unit="GB/s", lm=lum, torch=tor, numpy=nump,
                compile=comp, note=f"{pct:.0f}% of {ctx.bandwidth:.1f} GB/s copy",
                target=("torch", 2.0), pct=pct, pct_target=70)


def lm_log_softmax(x, dim=-1):
    shifted = x - x.amax(dim, keepdim=True)
    return shifted - shifted.exp().sum(dim, keepdim=True).log()


def _row_graph(kind, x, w, b, cols):
    """The library's own op over the rows, where this version has it, else ours above."""
    try:
        from luminal.nn import functional as LF

        ops = {"softmax": lambda: LF.softmax(x, -1), "log_softmax": lambda: LF.log_softmax(x, -1),
               "layer_norm": lambda: LF.layer_norm(x, (cols,), w, b),
               "rms_norm": lambda: LF.rms_norm(x, (cols,), w, 1e-6)}
        return ops[kind]()
    except (ImportError, AttributeError):
        ops = {"softmax": lambda: lm_softmax(x), "log_softmax": lambda: lm_log_softmax(x),
               "layer_norm": lambda: lm_layer_norm(x, w, b), "rms_norm": lambda: lm_rms_norm(x, w)}
        return ops[kind]()


def bench_rows(kind, ctx):
    """A normalization over the rows of (4096, 4096): GB/s of its input and output bytes, as a
    fraction of the copy bandwidth of the same run (one read and one write is the floor; the
    row kernels, kernel/row_kernel.h, read each row once and write it once)."""
    rows, cols = 4096, 4096
    cx = lm.Graph()
    x = cx.tensor((rows, cols))
    w, b = cx.tensor((cols,)), cx.tensor((cols,))
    out = _row_graph(kind, x, w, b, cols).output()
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((rows, cols), dtype=np.float32)
    wn = rng.standard_normal(cols, dtype=np.float32)
    bn = rng.standard_normal(cols, dtype=np.float32)
    rt = cx.search(lm.CpuRuntime(threads=ctx.threads, cache_dir=ctx.cache))
    rt.set_data(x, xn)
    params = {"softmax": (), "log_softmax": (), "layer_norm": ((w, wn), (b, bn)),
              "rms_norm": ((w, wn),)}[kind]
    for t, v in params:
        rt.set_data(t, v)
    rt.execute()
    xt, wt, bt = (torch.from_numpy(v) for v in (xn, wn, bn))
    if kind == "softmax":
        fn = lambda t: torch.softmax(t, -1)  # noqa: E731
        args = (xt,)

        def numpy_fn():
            e = np.exp(xn - xn.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)
    elif kind == "log_softmax":
        fn = lambda t: torch.log_softmax(t, -1)  # noqa: E731
        args = (xt,)

        def numpy_fn():
            s = xn - xn.max(-1, keepdims=True)
            return s - np.log(np.exp(s).sum(-1, keepdims=True))
    elif kind == "layer_norm":
        fn = lambda t, w_, b_: F.layer_norm(t, (cols,), w_, b_)  # noqa: E731
        args = (xt, wt, bt)

        def numpy_fn():
            m = xn.mean(-1, keepdims=True)
            c = xn - m
            return c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * wn + bn
    else:
        fn = lambda t, w_: F.rms_norm(t, (cols,), w_, 1e-6)  # noqa: E731
        args = (xt, wt)

        def numpy_fn():
            return xn / np.sqrt((xn * xn).mean(-1, keepdims=True) + 1e-6) * wn
    np.testing.assert_allclose(rt.get(out), fn(*args).numpy(), rtol=1e-4, atol=1e-4)
    kernels = rt._rt.program_text().count("(kernel ")
    gb = 2 * rows * cols * 4 / 1e9
    lum = gb / timeit(lambda: rt.execute(), ctx.repeats)
    tor = gb / timeit(lambda: fn(*args), ctx.repeats)
    nump = gb / timeit(numpy_fn, max(3, ctx.repeats // 2))
    comp = gb / time_compiled(ctx.compiled(fn), args, ctx.repeats)
    pct = 100 * lum / ctx.bandwidth
    return dict(name=f"{kind} (4096, 4096)", unit="GB/s", lm=lum, torch=tor, numpy=nump,
                compile=comp, target=("torch", 1.0), pct=pct, pct_target=80,
                note=f"in + out bytes, {pct:.0f}% of {ctx.bandwidth:.1f} GB/s copy, "
                     f"{kernels} kernel{'s' if kernels > 1 else ''}")


def _scores_bytes(rt, numel) -> int:
    """Bytes of the program's buffers holding at least `numel` elements besides its inputs and
    outputs: the attention scores (and their exp) where they reach memory."""
    total = 0
    for line in rt._rt.program_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0] == "(buffer" and parts[2] == "temp":
            if parts[4].isdigit() and int(parts[4]) >= numel:
                total += int(parts[4]) * (2 if parts[3] in ("f16", "bf16") else 4)
    return total


def bench_attention(s, ctx, heads=32, head_dim=64):
    """Causal F.scaled_dot_product_attention over (1, heads, s, head_dim) against torch eager's:
    GFLOP/s of the causal half (4 * heads * s^2 * head_dim / 2). The search times the fused
    kernel (kernel/attention.h: the scores never reach memory) against the unfused program;
    the note gives the memory the chosen program's scores take."""
    import luminal.nn.functional as LF

    cx = lm.Graph()
    q, k, v = (cx.tensor((1, heads, s, head_dim)) for _ in range(3))
    out = LF.scaled_dot_product_attention(q, k, v, is_causal=True).output()
    rng = np.random.default_rng(3)
    data = [rng.standard_normal((1, heads, s, head_dim), dtype=np.float32) for _ in range(3)]
    rt = cx.search(lm.CpuRuntime(threads=ctx.threads, cache_dir=ctx.cache), 4, cache=False,
                   progress=False)
    for t, d in zip((q, k, v), data):
        rt.set_data(t, d)
    rt.execute()
    qt, kt, vt = (torch.from_numpy(d) for d in data)
    fn = lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True)  # noqa: E731
    np.testing.assert_allclose(rt.get(out), fn(qt, kt, vt).numpy(), rtol=1e-4, atol=1e-4)
    fused = "(attention rows=" in rt._rt.program_text()
    scores = _scores_bytes(rt, heads * s * s)
    gflop = 4.0 * heads * s * s * head_dim / 2 / 1e9
    reps = max(2, ctx.repeats // (2 if s >= 2048 else 1))
    lum = gflop / timeit(lambda: rt.execute(), reps)
    tor = gflop / timeit(lambda: fn(qt, kt, vt), reps)
    comp = gflop / time_compiled(ctx.compiled(fn), (qt, kt, vt), reps)
    return dict(name=f"attention causal s={s}", unit="GFLOP/s", lm=lum, torch=tor, numpy=NAN,
                compile=comp, target=("torch", 1.5 if s >= 2048 else 1.0),
                note=f"h={heads} d={head_dim}, {'fused' if fused else 'unfused'}, scores in "
                     f"memory {scores / 2**20:.0f} MiB (torch eager: flash kernel, none)")


def bench_linear_gelu(m, k, n, ctx):
    """gelu(x @ W.T + b), BERT's FFN input (128 x 768 -> 3072), W and b parameters: the search
    may run the bias and the GELU in the matmul's kernel (its epilogue) or as a pass of their
    own. GFLOP/s of the matmul's work against torch eager and torch.compile."""
    cx = lm.Graph()
    x = cx.tensor((m, k))
    w = cx.tensor((n, k), parameter=True)
    b = cx.tensor((n,), parameter=True)
    y = (x @ w.t() + b).gelu().output()
    g = torch.Generator().manual_seed(0)
    xt, wt, bt = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g) * 0.05, \
        torch.randn(n, generator=g)
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, {x: xt, w: wt, b: bt},
                              budget=12)
    rt.execute()
    with torch.no_grad():
        ref = F.gelu(F.linear(xt, wt, bt))
    np.testing.assert_allclose(rt.get(y), ref.numpy(), rtol=1e-3, atol=1e-3)
    gf = 2.0 * m * k * n / 1e9
    lum = gf / timeit(lambda: rt.execute(), ctx.repeats)
    with torch.no_grad():
        tor = gf / timeit(lambda: F.gelu(F.linear(xt, wt, bt)), ctx.repeats)
        comp = gf / time_compiled(ctx.compiled(lambda a: F.gelu(F.linear(a, wt, bt))), (xt,),
                                  ctx.repeats)
    return dict(name=f"linear+gelu {m}x{k}->{n}", unit="GFLOP/s", lm=lum, torch=tor,
                numpy=NAN, compile=comp, note=_kernel_note(rt, choice), target=("torch", 1.3))


def bench_swiglu(m, h, inter, ctx):
    """(silu(x @ Wg.T) * (x @ Wu.T)) @ Wd.T, a Llama MLP (128 x 2048 -> 8192 -> 2048), the
    weights parameters: the gate's SiLU and its product with the up projection may run in a
    matmul's epilogue. GFLOP/s against torch eager and torch.compile."""
    cx = lm.Graph()
    x = cx.tensor((m, h))
    wg = cx.tensor((inter, h), parameter=True)
    wu = cx.tensor((inter, h), parameter=True)
    wd = cx.tensor((h, inter), parameter=True)
    y = (((x @ wg.t()).silu() * (x @ wu.t())) @ wd.t()).output()
    g = torch.Generator().manual_seed(0)
    xt = torch.randn(m, h, generator=g)
    wgt, wut = (torch.randn(inter, h, generator=g) * h ** -0.5 for _ in range(2))
    wdt = torch.randn(h, inter, generator=g) * inter ** -0.5
    feeds = {x: xt, wg: wgt, wu: wut, wd: wdt}
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, feeds, budget=12)
    rt.execute()

    def mlp(a):
        return F.linear(F.silu(F.linear(a, wgt)) * F.linear(a, wut), wdt)

    with torch.no_grad():
        ref = mlp(xt)
    np.testing.assert_allclose(rt.get(y), ref.numpy(), rtol=2e-3, atol=2e-3)
    gf = 2.0 * m * h * inter * 3 / 1e9
    reps = max(2, ctx.repeats // 2)
    lum = gf / timeit(lambda: rt.execute(), reps)
    with torch.no_grad():
        tor = gf / timeit(lambda: mlp(xt), reps)
        comp = gf / time_compiled(ctx.compiled(mlp), (xt,), reps)
    return dict(name=f"swiglu mlp {m}x{h}->{inter}", unit="GFLOP/s", lm=lum, torch=tor,
                numpy=NAN, compile=comp, note=_kernel_note(rt, choice), target=("torch", 1.3))


def _scheduled(t, schedule):
    """The node of tensor t with `schedule` attached (forcing a kernel-level choice)."""
    return lm.graph.GraphTensor(t.graph, t.graph._g.scheduled(t.id, schedule), t.st, t.dtype)


def bench_norm_linear(m, k, n, fused, ctx):
    """rms_norm(x) @ W.T, a decoder's norm before its projections (W and the norm's weight
    parameters), with the matmul forced to compute the norm while it packs A (its prologue,
    kernel/prologue.h) or not (the norm one row kernel that stores its output, then the
    matmul). The same matmul path for both: a parameter's panels for many rows, the GEMV for
    few. GFLOP/s of the matmul's work against torch eager and torch.compile."""
    cx = lm.Graph()
    x = cx.tensor((m, k))
    g = cx.tensor((k,), parameter=True)
    w = cx.tensor((n, k), parameter=True)
    ss = _scheduled((x * x).sum(-1, keepdim=True), [("row", 1)])
    a = x * (ss * (1.0 / k) + 1e-6).sqrt().reciprocal() * g
    path = [("gemv_rows", 16)] if m <= 16 else [("pack_b", 1)]
    y = _scheduled(a @ w.t(), path + ([("prologue", 1)] if fused else [])).output()
    gen = torch.Generator().manual_seed(0)
    xt, gt = torch.randn(m, k, generator=gen) * 3, torch.randn(k, generator=gen)
    wt = torch.randn(n, k, generator=gen) * k ** -0.5
    rt = lm.CpuRuntime(threads=ctx.threads, cache_dir=ctx.cache)
    rt._load(cx)
    for t, v in ((x, xt), (g, gt), (w, wt)):
        rt.set_data(t, v)
    rt.execute()
    assert ("a=computed" in rt._rt.program_text()) == fused

    def ref(a):
        return F.linear(F.rms_norm(a, (k,), gt, 1e-6), wt)

    with torch.no_grad():
        np.testing.assert_allclose(rt.get(y), ref(xt).numpy(), rtol=1e-3, atol=1e-3)
    gf = 2.0 * m * k * n / 1e9
    lum = gf / timeit(lambda: rt.execute(), ctx.repeats)
    with torch.no_grad():
        tor = gf / timeit(lambda: ref(xt), ctx.repeats)
        comp = gf / time_compiled(ctx.compiled(ref), (xt,), ctx.repeats)
    kernels = rt._rt.program_text().count("(kernel")
    return dict(name=f"rms_norm+linear {m}x{k}->{n} {'fused' if fused else 'unfused'}",
                unit="GFLOP/s", lm=lum, torch=tor, numpy=NAN, compile=comp,
                note=f"{kernels} kernels, {'prologue' if fused else 'norm stored'}; "
                     f"{' '.join(f'{p} {v}' for p, v in path)}")


def _kernel_note(rt, choice) -> str:
    """The winner's kernels and whether a matmul runs an epilogue (the C GEMM's loop over the
    finished rows, codegen/c/matmul.cc)."""
    fused = "epilogue" if "lm_er" in rt.source else "no epilogue"
    return f"{rt._rt.program_text().count('(kernel')} kernels, {fused}; {choice}"


def bench_decoder(ctx):
    s, h, heads, inter = 128, 512, 8, 1536
    rng = torch.Generator().manual_seed(0)
    shapes = dict(n1=(h,), n2=(h,), wq=(h, h), wk=(h, h), wv=(h, h), wo=(h, h),
                  w1=(inter, h), w3=(inter, h), w2=(h, inter))
    params = {k: torch.randn(v, generator=rng) * (0.5 / math.sqrt(v[-1])) + (1.0 if k[0] == "n"
              else 0.0) for k, v in shapes.items()}
    xt = torch.randn(s, h, generator=rng)
    mask = torch.full((s, s), float("-inf")).triu(1)
    cx = lm.Graph()
    x = cx.tensor((s, h))
    m = cx.tensor((s, s))
    p = {k: cx.tensor(v) for k, v in shapes.items()}
    out = lm_decoder(x, p, heads, m).output()
    feeds = {x: xt, m: torch.where(mask.isinf(), -1e9, 0.0), **{p[k]: params[k] for k in p}}
    rt, choice = compile_best(cx, ctx.threads, ctx.cache, ctx.repeats, feeds)
    rt.execute()
    with torch.no_grad():
        ref = torch_decoder(xt, params, heads, mask)
    np.testing.assert_allclose(rt.get(out), ref.numpy(), rtol=2e-3, atol=2e-3)
    flop = 2 * s * (4 * h * h + 3 * h * inter) + 4 * s * s * h
    gf = flop / 1e9
    lum = gf / timeit(lambda: rt.execute(), ctx.repeats)
    with torch.no_grad():
        tor = gf / timeit(lambda: torch_decoder(xt, params, heads, mask), ctx.repeats)
        comp = gf / time_compiled(ctx.compiled(lambda a: torch_decoder(a, params, heads, mask)),
                                  (xt,), ctx.repeats)
    return dict(name="decoder block 512/8h/s128", unit="GFLOP/s", lm=lum, torch=tor,
                numpy=NAN, compile=comp, note=f"tiles {choice}", target=("torch", 1.2))


def measure_bandwidth() -> float:
    """GB/s of a large numpy copy (read + write bytes)."""
    n = 64 * 1024 * 1024
    src = np.ones(n, dtype=np.float32)
    dst = np.empty_like(src)
    secs = timeit(lambda: np.copyto(dst, src), 5)
    return 2 * n * 4 / secs / 1e9


class Context:
    def __init__(self, args):
        self.threads = args.threads
        self.repeats = 3 if args.quick else 7
        self.cache = args.cache or os.path.join(tempfile.gettempdir(), "luminal-bench-cache")
        self.use_compile = not args.no_compile
        self.bandwidth = 0.0
        self.read_bandwidth = 0.0
        self.numpy_gemm = {}  # numpy_gemm_rates: GFLOP/s by "MxKxN"

    def compiled(self, fn):
        return try_compile(fn) if self.use_compile else None


def fmt(v, digits=1):
    return "n/a" if v != v else f"{v:.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 4096 matmul")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--cache", default=None, help="luminal compile cache directory")
    parser.add_argument("--only", nargs="*", default=None,
                        help="run the benchmarks whose name starts with one of these")
    args = parser.parse_args()
    ctx = Context(args)
    torch.set_num_threads(ctx.threads)
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(ctx.threads)
        blas = ", ".join(f"{i.get('internal_api')}:{i.get('architecture')}"
                         for i in threadpool_info() if i.get("user_api") == "blas")
    except ImportError:
        blas = "unknown (threadpoolctl not installed)"
    print(f"threads={ctx.threads}  torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()})"
          f"  numpy {np.__version__} (blas {blas})  cc flags: "
          f"{' '.join(lm._core.cpu_compile_flags())}", flush=True)
    ctx.bandwidth = measure_bandwidth()
    ctx.read_bandwidth = read_bandwidth(args.threads) / 1e9
    benches = [("matmul", lambda: bench_matmul(1024, ctx))]
    if not args.quick:
        benches.append(("matmul", lambda: bench_matmul(4096, ctx)))
    gemms = [(1024, 1024, 1024), (128, 2048, 8192), (128, 8192, 2048)]
    if not args.quick:
        gemms.append((4096, 4096, 4096))
    if args.only and not "gemm".startswith(tuple(args.only)):
        gemms = []  # nor numpy's process for them
    if gemms:
        ctx.numpy_gemm = numpy_gemm_rates(gemms, ctx)
        print(f"numpy in its own process (no OPENBLAS_CORETYPE/L2_SIZE), blas "
              f"{ctx.numpy_gemm.get('blas')}", flush=True)
    for m, k, n in gemms:
        benches.append(("gemm", lambda m=m, k=k, n=n: bench_gemm(m, k, n, ctx)))
    for m, k, n in [(128, 2048, 8192), (512, 2048, 8192), (512, 8192, 2048)]:
        benches.append(("gemm_bf16", lambda m=m, k=k, n=n: bench_gemm_bf16(m, k, n, ctx)))
    for kind in ("q8_0", "q4_0", "q4_k"):
        benches.append(("gemm_q", lambda kind=kind: bench_qgemm(512, 2048, 8192, kind, ctx)))
    for wdtype in ("f32", "bf16"):
        benches.append(("gemv", lambda wdtype=wdtype: bench_gemv(8192, 2048, wdtype, ctx)))
    for kind in ("q8_0", "q4_0", "q4_k", "q5_k", "q6_k"):
        for acts in ("q8", "f32"):
            benches.append(("gemv", lambda kind=kind, acts=acts:
                            bench_qgemv(8192, 2048, kind, acts, ctx)))
    if not args.quick:
        for wdtype in ("f32", "bf16"):
            benches.append(("lm_head",
                            lambda wdtype=wdtype: bench_gemv(128256, 2048, wdtype, ctx)))
    benches += [("elementwise", lambda: bench_elementwise(ctx)),
                ("softmax", lambda: bench_rows("softmax", ctx)),
                ("log_softmax", lambda: bench_rows("log_softmax", ctx)),
                ("layer_norm", lambda: bench_rows("layer_norm", ctx)),
                ("rms_norm", lambda: bench_rows("rms_norm", ctx)),
                ("linear_gelu", lambda: bench_linear_gelu(128, 768, 3072, ctx)),
                ("swiglu", lambda: bench_swiglu(128, 2048, 8192, ctx)),
                *[("norm_linear", lambda m=m, f=f: bench_norm_linear(m, 2048, 2048, f, ctx))
                  for m in (128, 1) for f in (True, False)],
                ("attention", lambda: bench_attention(128, ctx)),
                ("attention", lambda: bench_attention(512, ctx)),
                ("attention", lambda: bench_attention(2048, ctx)),
                ("decoder", lambda: bench_decoder(ctx))]
    if args.only:
        benches = [(n, b) for n, b in benches if n.startswith(tuple(args.only))]
    rows = []
    for _, bench in benches:
        row = bench()
        print(f"  done: {row['name']}", file=sys.stderr, flush=True)
        rows.append(row)
    header = (f"{'benchmark':28} {'unit':8} {'luminal':>8} {'torch':>8} {'numpy':>8} "
              f"{'t.compile':>9} {'lm/torch':>8} {'lm/numpy':>8} {'lm/t.comp':>9}  target  notes")
    print(header)
    print("-" * len(header))
    for r in rows:
        target = ""
        if "target" in r:
            against, want = r["target"]
            met = r["lm"] / r[against] >= want
            if "pct" in r:
                met = met and r["pct"] >= r["pct_target"]
                target = f">={want}x {against},{r['pct_target']}%bw " + ("MET" if met else "no")
            else:
                target = f">={want}x {against} " + ("MET" if met else "no")
        print(f"{r['name']:28} {r['unit']:8} {fmt(r['lm']):>8} {fmt(r['torch']):>8} "
              f"{fmt(r['numpy']):>8} {fmt(r['compile']):>9} {fmt(r['lm'] / r['torch'], 2):>8} "
              f"{fmt(r['lm'] / r['numpy'], 2):>8} {fmt(r['lm'] / r['compile'], 2):>9}  "
              f"{target}  {r['note']}")
    print(f"machine copy bandwidth (numpy, read+write): {ctx.bandwidth:.1f} GB/s; "
          f"read bandwidth (best of torch.sum, torch.mv): {ctx.read_bandwidth:.1f} GB/s")


if __name__ == "__main__":
    main()
