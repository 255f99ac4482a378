"""CudaRuntime on a GPU, with its ceilings measured in the same run: device-to-device copy
bandwidth (our copy kernel and cuMemcpyDtoD; torch's copy if torch sees the GPU), GEMV,
decode-shaped Linears (f32 x, f32 or bf16 W: 1x2048 @ 2048x8192 and the LM head 1x2048 @
2048x128256) and elementwise bandwidth as % of copy bandwidth, a bf16 4096^3 GEMM in
TFLOP/s (and % of torch), softmax, log_softmax, layer_norm and rms_norm over (4096, 4096) as
row kernels in GB/s and % of copy bandwidth, bf16 Linear + bias + GELU with the epilogue in the
matmul's kernel and without (TFLOP/s against torch), causal attention (32 heads, head_dim 64,
s = 128, 512, 2048) fused and unfused in ms against torch's sdpa, and one decode step of a Llama-3-8B-shaped
decoder (random bf16 weights, 32 layers, hidden 4096, 32 heads, 8 KV heads, FFN 14336, KV cache
of 1024 tokens) in tokens/s and % of the bandwidth bound (weight bytes per token / copy
bandwidth). Each section survives the failure of another.
Usage: python benchmarks/gpu.py [--quick] [--json PATH] [--layers N] [--dry-run]."""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import traceback
from types import SimpleNamespace

import numpy as np

import luminal as lm
from luminal.runtime import _to_storage

NAN = float("nan")
ROWS = []  # (section, metric, luminal, reference, ratio text)


def row(section, metric, ours, ref=NAN, note=""):
    ROWS.append((section, metric, ours, ref, note))
    ref_text = "n/a" if ref is None or (isinstance(ref, float) and math.isnan(ref)) else \
        f"{ref:.1f}"
    print(f"  {section:10s} {metric:34s} {ours:10.1f}  ref {ref_text:>9s}  {note}", flush=True)


def torch_cuda():
    """torch if it sees a CUDA GPU, else None (the torch columns print n/a)."""
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def torch_ms(torch, fn, iters=20):
    """Median milliseconds of fn() on the GPU, timed with CUDA events after a warm-up."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / iters)
    return sorted(times)[len(times) // 2]


def bf16_words(n, seed=0, scale=0.02):
    """n random bf16 values as their 16-bit words (what set_data stores for bf16)."""
    rng = np.random.default_rng(seed)
    return _to_storage((rng.standard_normal(n, dtype=np.float32) * scale), lm.bfloat16)


def set_words(rt, tensor, words):
    """Sets bf16 input data from ready 16-bit words (skips the float32 conversion)."""
    node = rt._ids.get(tensor.id, tensor.id)  # the compiled program's id for the input
    rt._rt.set_data(node, np.ascontiguousarray(words), lm.bfloat16)


def make_rt(cache, choice=None):
    return lm.CudaRuntime(cache_dir=cache, choice=choice)


def compile_graph(cx, rt):
    """cx compiled on rt as written: no candidate checks on random inputs (the decode graph's
    reference run would upload 14 GB of random weights first), no search cache."""
    return cx.search(rt, 1, verify=False, cache=False, progress=False)


# ---- sections ---------------------------------------------------------------------------

def copy_section(cache, nbytes, torch):
    rt = make_rt(cache)
    print(f"device: {rt.device_name} ({rt.arch}, {rt._rt.multiprocessors} SMs)", flush=True)
    kernel, memcpy = rt.copy_bandwidth(nbytes, 10)
    ref = NAN
    if torch is not None:
        a = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda")
        b = torch.empty_like(a)
        ref = 2 * nbytes / (torch_ms(torch, lambda: b.copy_(a)) * 1e6)
        del a, b
    row("copy", "copy kernel GB/s (read+write)", kernel, ref, "ref: torch copy_")
    row("copy", "cuMemcpyDtoD GB/s", memcpy)
    return max(kernel, memcpy)


def gemv_section(cache, copy_bw, torch, n=16384, k=4096):
    """x(1, k) @ W(n, k).T with x and W bf16 (a half matmul)."""
    cx = lm.Graph()
    x = cx.tensor((1, k), lm.bfloat16)
    w = cx.tensor((n, k), lm.bfloat16)
    (x @ w.transpose(0, 1)).output()
    rt = compile_graph(cx, make_rt(cache))
    set_words(rt, x, bf16_words(k, 1, 1.0))
    set_words(rt, w, bf16_words(n * k, 2))
    ms = rt.benchmark(200)
    gbps = (n * k + k + n) * 2 / (ms * 1e6)
    ref = NAN
    if torch is not None:
        tx = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
        tw = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        ref = (n * k + k + n) * 2 / (torch_ms(torch, lambda: torch.nn.functional.linear(tx, tw),
                                              200) * 1e6)
    row("gemv", f"bf16 1x{k} @ {k}x{n} GB/s", gbps, ref, f"{100 * gbps / copy_bw:.0f}% of copy")
    return gbps


# Decode-shaped Linears of a Llama-3.2-1B: an MLP projection and the LM head.
LINEAR_SHAPES = [(2048, 8192), (2048, 128256)]
# The model's pick (the GEMV for one row; a bf16 weight widened in its registers), and the
# GEMV with k split over 4 warps of a block, fixed.
LINEAR_CHOICES = [("pick", None), ("split-k 4", {"cuda_matmul": 4, "cuda_gemv_split": 4})]


def linear_section(cache, copy_bw, torch):
    """y = x @ W.T as nn.Linear builds it: x f32 (1, k), W (n, k) f32 or bf16 (W.to(f32) in the
    graph), in GB/s of bytes that must move (W, x, y) and as % of copy bandwidth. The torch
    reference is F.linear at W's dtype (x cast to bf16 for a bf16 W: torch does not mix)."""
    out = {}
    biggest = max(k * n for k, n in LINEAR_SHAPES)
    rng = np.random.default_rng(11)
    values = rng.standard_normal(biggest, dtype=np.float32) * 0.02
    words = _to_storage(values, lm.bfloat16)
    for k, n in LINEAR_SHAPES:
        for wdtype in (lm.float32, lm.bfloat16):
            name = lm.dtype.name(wdtype)
            size = 4 if wdtype == lm.float32 else 2
            moved = n * k * size + 4 * (k + n)
            ref = NAN
            if torch is not None:
                td = torch.float32 if wdtype == lm.float32 else torch.bfloat16
                tx = torch.randn(1, k, device="cuda", dtype=td)
                tw = torch.randn(n, k, device="cuda", dtype=td)
                ref = moved / (torch_ms(torch, lambda: torch.nn.functional.linear(tx, tw),
                                        50) * 1e6)
                del tx, tw
            for label, choice in LINEAR_CHOICES:
                cx = lm.Graph()
                x = cx.tensor((1, k))
                w = cx.tensor((n, k), wdtype)
                wf = w.to(lm.float32) if wdtype != lm.float32 else w
                (x @ wf.t()).output()
                rt = compile_graph(cx, make_rt(cache, choice))
                rt.set_data(x, rng.standard_normal(k, dtype=np.float32))
                if wdtype == lm.float32:
                    rt.set_data(w, values[:n * k])
                else:
                    set_words(rt, w, words[:n * k])
                ms = rt.benchmark(50)
                gbps = moved / (ms * 1e6)
                row("linear", f"{name} W 1x{k} @ {k}x{n} {label} GB/s", gbps, ref,
                    f"{100 * gbps / copy_bw:.0f}% of copy; {ms * 1e3:.0f} us")
                out[f"{name} {k}x{n} {label}"] = gbps
                del rt
    return out


def elementwise_section(cache, copy_bw, torch, n=64 << 20):
    out = {}
    for dtype, words in [(lm.float32, None), (lm.bfloat16, True)]:
        cx = lm.Graph()
        x = cx.tensor((n,), dtype)
        y = cx.tensor((n,), dtype)
        (x * 1.5 + y).output()
        rt = compile_graph(cx, make_rt(cache))
        if words:
            set_words(rt, x, bf16_words(n, 3, 1.0))
            set_words(rt, y, bf16_words(n, 4, 1.0))
        else:
            rng = np.random.default_rng(5)
            rt.set_data(x, rng.standard_normal(n, dtype=np.float32))
            rt.set_data(y, rng.standard_normal(n, dtype=np.float32))
        ms = rt.benchmark(50)
        size = 4 if dtype == lm.float32 else 2
        gbps = 3 * n * size / (ms * 1e6)
        ref = NAN
        if torch is not None:
            td = torch.float32 if dtype == lm.float32 else torch.bfloat16
            tx = torch.randn(n, device="cuda", dtype=td)
            ty = torch.randn(n, device="cuda", dtype=td)
            ref = 3 * n * size / (torch_ms(torch, lambda: tx * 1.5 + ty) * 1e6)
        name = lm.dtype.name(dtype)
        row("eltwise", f"{name} x*1.5+y ({n >> 20}M) GB/s", gbps, ref,
            f"{100 * gbps / copy_bw:.0f}% of copy")
        out[name] = gbps
    return out


ROW_KINDS = ("softmax", "log_softmax", "layer_norm", "rms_norm")


def row_graph(kind, rows=4096, cols=4096):
    """A normalization over the rows, as luminal.nn.functional builds it: (graph, x, w, b)."""
    from luminal.nn import functional as LF

    cx = lm.Graph()
    x, w, b = cx.tensor((rows, cols)), cx.tensor((cols,)), cx.tensor((cols,))
    out = {"softmax": lambda: LF.softmax(x, -1), "log_softmax": lambda: LF.log_softmax(x, -1),
           "layer_norm": lambda: LF.layer_norm(x, (cols,), w, b),
           "rms_norm": lambda: LF.rms_norm(x, (cols,), w, 1e-6)}[kind]()
    out.output()
    return cx, x, w, b


def rows_section(cache, copy_bw, torch, rows=4096, cols=4096):
    """softmax, log_softmax, layer_norm, rms_norm (f32) as row kernels (kernel/row_kernel.h,
    a warp per row: codegen/cuda/row.cc): GB/s of input + output bytes, % of copy."""
    out = {}
    rng = np.random.default_rng(6)
    xn = rng.standard_normal((rows, cols), dtype=np.float32)
    wn = rng.standard_normal(cols, dtype=np.float32)
    for kind in ROW_KINDS:
        cx, x, w, b = row_graph(kind, rows, cols)
        rt = compile_graph(cx, make_rt(cache))
        rt.set_data(x, xn)
        if kind in ("layer_norm", "rms_norm"):
            rt.set_data(w, wn)
        if kind == "layer_norm":
            rt.set_data(b, wn)
        gbps = 2 * rows * cols * 4 / (rt.benchmark(50) * 1e6)
        ref = NAN
        if torch is not None:
            tx = torch.from_numpy(xn).cuda()
            tw = torch.from_numpy(wn).cuda()
            fn = {"softmax": lambda: torch.softmax(tx, -1),
                  "log_softmax": lambda: torch.log_softmax(tx, -1),
                  "layer_norm": lambda: torch.nn.functional.layer_norm(tx, (cols,), tw, tw),
                  "rms_norm": lambda: torch.nn.functional.rms_norm(tx, (cols,), tw, 1e-6)}[kind]
            ref = 2 * rows * cols * 4 / (torch_ms(torch, fn) * 1e6)
        kernels = rt.source.count('extern "C" __global__')
        row("rows", f"{kind} ({rows}, {cols}) GB/s", gbps, ref,
            f"{100 * gbps / copy_bw:.0f}% of copy, {kernels} kernels; ref: torch")
        out[kind] = gbps
    return out


def gemm_section(cache, torch, size=4096):
    results = {}
    ref = NAN
    if torch is not None:
        ta = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        tb = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        ref = 2 * size ** 3 / (torch_ms(torch, lambda: ta @ tb) * 1e9)
        del ta, tb
    for label, choice in [("tensor cores", {"cuda_matmul": 3}), ("smem tiled", {"cuda_matmul": 2})]:
        cx = lm.Graph()
        a = cx.tensor((size, size), lm.bfloat16)
        b = cx.tensor((size, size), lm.bfloat16)
        (a @ b).output()
        rt = compile_graph(cx, make_rt(cache, choice))
        set_words(rt, a, bf16_words(size * size, 6, 1.0))
        set_words(rt, b, bf16_words(size * size, 7, 1.0))
        ms = rt.benchmark(10)
        tflops = 2 * size ** 3 / (ms * 1e9)
        note = f"{100 * tflops / ref:.0f}% of torch" if not math.isnan(ref) else ""
        row("gemm", f"bf16 {size}^3 TFLOP/s, {label}", tflops, ref, note)
        results[label] = tflops
    return results


# ---- matmul epilogues --------------------------------------------------------------------

EPILOGUE_SHAPES = [(128, 768, 3072), (4096, 4096, 4096), (1, 4096, 14336)]


def epilogue_graph(m, k, n, fused):
    """gelu(x @ W.T + b) in bf16 (x, W, b of dtype bf16), the f32 sum of the products under
    `epilogue 1` (kernel/epilogue.h: the Cast back to bf16, the bias and the GELU in the
    matmul's kernel) or as written (separate kernels)."""
    from luminal.graph import GraphTensor

    cx = lm.Graph()
    x = cx.tensor((m, k), lm.bfloat16)
    w = cx.tensor((n, k), lm.bfloat16)
    b = cx.tensor((n,), lm.bfloat16)
    total = (x.unsqueeze(-2) * w.unsqueeze(-3)).to(lm.float32).sum(-1)
    if fused:
        total = GraphTensor(cx, cx._g.scheduled(total.id, [("epilogue", 1)]), total.st,
                            total.dtype)
    (total.to(lm.bfloat16) + b).gelu().output()
    return cx, (x, w, b)


def epilogue_section(cache, torch):
    """bf16 Linear + bias + GELU, TFLOP/s with the epilogue in the matmul's kernel and without
    (the automatic mapping: tensor cores for many rows, the GEMV for one), against torch's
    F.gelu(F.linear(x, W, b)) in bf16."""
    out = {}
    for m, k, n in EPILOGUE_SHAPES:
        ref = NAN
        if torch is not None:
            tx = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            tw = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            tb = torch.randn(n, device="cuda", dtype=torch.bfloat16)
            f = torch.nn.functional
            ref = 2 * m * k * n / (torch_ms(torch, lambda: f.gelu(f.linear(tx, tw, tb))) * 1e9)
            del tx, tw, tb
        for fused in (False, True):
            cx, (x, w, b) = epilogue_graph(m, k, n, fused)
            rt = compile_graph(cx, make_rt(cache))
            set_words(rt, x, bf16_words(m * k, 8, 1.0))
            set_words(rt, w, bf16_words(n * k, 9))
            set_words(rt, b, bf16_words(n, 10))
            ms = rt.benchmark(20)
            tflops = 2 * m * k * n / (ms * 1e9)
            label = "epilogue" if fused else "separate"
            row("epilogue", f"bf16 {m}x{k}->{n} +b gelu {label} TFLOP/s", tflops, ref,
                f"{ms * 1e3:.0f} us; ref: torch F.gelu(F.linear)")
            out[f"{m}x{k}x{n} {label}"] = tflops
            del rt
    return out


# ---- Llama-3-8B-shaped decode step ----------------------------------------------------

ATTENTION_LENGTHS = (128, 512, 2048)


def attention_graph(s, fused, heads=32, head_dim=64):
    """Causal F.scaled_dot_product_attention over f32 (1, heads, s, head_dim), its second
    matmul under `attention 1` (kernel/attention.h: a warp per query row streams the keys with
    the online softmax, codegen/cuda/attention.cc) or as written (the scores in memory)."""
    import luminal.nn.functional as LF
    from luminal.graph import GraphTensor

    cx = lm.Graph()
    q, k, v = (cx.tensor((1, heads, s, head_dim)) for _ in range(3))
    out = LF.scaled_dot_product_attention(q, k, v, is_causal=True)
    if fused:
        out = GraphTensor(cx, cx._g.scheduled(out.id, [("attention", 1)]), out.st, out.dtype)
    out.output()
    return cx, (q, k, v)


def attention_section(cache, torch, heads=32, head_dim=64):
    """Causal attention, 32 heads, head_dim 64, s = 128, 512, 2048: fused and unfused in ms
    against torch's scaled_dot_product_attention (its flash kernel)."""
    out = {}
    rng = np.random.default_rng(7)
    for s in ATTENTION_LENGTHS:
        data = [rng.standard_normal((1, heads, s, head_dim), dtype=np.float32) for _ in range(3)]
        ref = NAN
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(d).cuda() for d in data)
            ref = torch_ms(torch, lambda: torch.nn.functional.scaled_dot_product_attention(
                tq, tk, tv, is_causal=True))
        for label, fused in (("fused", True), ("unfused", False)):
            cx, inputs = attention_graph(s, fused, heads, head_dim)
            rt = compile_graph(cx, make_rt(cache))
            for t, d in zip(inputs, data):
                rt.set_data(t, d)
            ms = rt.benchmark(20)
            scores = 0 if fused else heads * s * s * 4 / 2**20
            row("attention", f"causal s={s} {label} ms", ms, ref,
                f"scores in memory {scores:.0f} MiB; ref: torch sdpa ms")
            out[f"{s} {label}"] = ms
    return out


def rms_norm(x, w, eps=1e-5):
    return x * ((x * x).mean(-1, keepdim=True) + eps).sqrt().reciprocal() * w


def linear(x, w):
    """x @ w.T with w stored (out, in), as nn.Linear keeps it."""
    return x @ w.transpose(0, 1)


def decoder_layer(cx, x, p, cfg):
    """One Llama block for one new token against a KV cache of cfg['ctx'] tokens. RoPE is left
    out (elementwise on q and k, no weight bytes)."""
    d, nh, nkv, hd = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["hidden"] // cfg["heads"]
    group = nh // nkv
    h = rms_norm(x, p["attn_norm"])
    q = linear(h, p["wq"]).reshape(nkv, group, hd)           # (8, 4, 128)
    k_new = linear(h, p["wk"]).reshape(nkv, 1, hd)            # (8, 1, 128)
    v_new = linear(h, p["wv"]).reshape(nkv, 1, hd)
    scale = 1.0 / math.sqrt(hd)
    s_cache = (q @ p["k_cache"].transpose(-1, -2)) * scale   # (8, 4, ctx)
    s_new = (q * k_new).sum(-1, keepdim=True) * scale        # (8, 4, 1)
    m = s_cache.amax(-1, keepdim=True)
    e_cache = (s_cache - m).exp()
    e_new = (s_new - m).exp()
    denom = e_cache.sum(-1, keepdim=True) + e_new
    attn = (e_cache @ p["v_cache"] + e_new * v_new) / denom   # (8, 4, 128)
    x = x + linear(attn.reshape(1, d), p["wo"])
    h = rms_norm(x, p["ffn_norm"])
    g = linear(h, p["w_gate"])
    u = linear(h, p["w_up"])
    act = g * ((-g).exp() + 1).reciprocal() * u              # silu(g) * u
    return x + linear(act, p["w_down"])


def decode_graph(layers=32, ctx=1024):
    """The graph of one decode step: (cx, x, params, out, shapes, cache_shape)."""
    cfg = dict(hidden=4096, heads=32, kv_heads=8, ffn=14336, ctx=ctx)
    d, f, kvd = cfg["hidden"], cfg["ffn"], cfg["kv_heads"] * (cfg["hidden"] // cfg["heads"])
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "wq": (d, d), "wk": (kvd, d), "wv": (kvd, d),
              "wo": (d, d), "w_gate": (f, d), "w_up": (f, d), "w_down": (d, f)}
    cache_shape = (cfg["kv_heads"], ctx, d // cfg["heads"])
    cx = lm.Graph()
    x = cx.tensor((1, d), lm.bfloat16, "x")
    params = []
    h = x
    for i in range(layers):
        p = {name: cx.tensor(s, lm.bfloat16, f"l{i}.{name}") for name, s in shapes.items()}
        p["k_cache"] = cx.tensor(cache_shape, lm.bfloat16, f"l{i}.k_cache")
        p["v_cache"] = cx.tensor(cache_shape, lm.bfloat16, f"l{i}.v_cache")
        params.append(p)
        h = decoder_layer(cx, h, p, cfg)
    out = h.output()
    return cx, x, params, out, shapes, cache_shape, cfg


def decode_section(cache, copy_bw, torch, layers=32, ctx=1024):
    cx, x, params, out, shapes, cache_shape, cfg = decode_graph(layers, ctx)
    d = cfg["hidden"]
    t0 = time.perf_counter()
    rt = compile_graph(cx, make_rt(cache))
    compile_s = time.perf_counter() - t0
    kernels = rt.source.count('extern "C" __global__')
    print(f"  decode: compiled {layers} layers in {compile_s:.1f} s ({kernels} distinct kernels)",
          flush=True)
    biggest = max(math.prod(s) for s in shapes.values())
    words = bf16_words(biggest, 8)
    norm_words = _to_storage(np.ones(d, np.float32), lm.bfloat16)
    cache_words = bf16_words(math.prod(cache_shape), 9, 1.0)
    weight_bytes = 0
    t0 = time.perf_counter()
    for p in params:
        for name, s in shapes.items():
            n = math.prod(s)
            set_words(rt, p[name], norm_words if name.endswith("norm") else words[:n])
            weight_bytes += 2 * n
        set_words(rt, p["k_cache"], cache_words)
        set_words(rt, p["v_cache"], cache_words)
    set_words(rt, x, bf16_words(d, 10, 1.0))
    print(f"  decode: {weight_bytes / 1e9:.2f} GB of weights uploaded in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    ms = rt.benchmark(20)
    value = rt.get(out)
    finite = bool(np.isfinite(value).all())
    tok_s = 1000.0 / ms
    bound = copy_bw * 1e9 / weight_bytes  # tokens/s if only the weights were read once
    kv_bytes = layers * 2 * 2 * math.prod(cache_shape)
    ref = NAN
    if torch is not None:
        ref = torch_decode(torch, layers, cfg)
    row("decode", f"8B-shaped step, {layers} layers, tok/s", tok_s, ref,
        f"{100 * tok_s / bound:.0f}% of bound {bound:.0f} tok/s; {ms:.2f} ms; "
        f"output finite: {finite}; KV {kv_bytes / 1e6:.0f} MB")
    return dict(ms=ms, tok_s=tok_s, bound_tok_s=bound, weight_bytes=weight_bytes,
                compile_s=compile_s, kernels=kernels, finite=finite)


def torch_decode(torch, layers, cfg):
    """The same step in torch eager (bf16, F.linear, same shapes); tokens/s."""
    F = torch.nn.functional
    d, f = cfg["hidden"], cfg["ffn"]
    nkv, hd = cfg["kv_heads"], d // cfg["heads"]
    group = cfg["heads"] // nkv
    dev, dt = "cuda", torch.bfloat16
    ws = [dict(wq=torch.randn(d, d, device=dev, dtype=dt) * 0.02,
               wk=torch.randn(nkv * hd, d, device=dev, dtype=dt) * 0.02,
               wv=torch.randn(nkv * hd, d, device=dev, dtype=dt) * 0.02,
               wo=torch.randn(d, d, device=dev, dtype=dt) * 0.02,
               wg=torch.randn(f, d, device=dev, dtype=dt) * 0.02,
               wu=torch.randn(f, d, device=dev, dtype=dt) * 0.02,
               wd=torch.randn(d, f, device=dev, dtype=dt) * 0.02,
               kc=torch.randn(nkv, cfg["ctx"] + 1, hd, device=dev, dtype=dt),
               vc=torch.randn(nkv, cfg["ctx"] + 1, hd, device=dev, dtype=dt))
          for _ in range(layers)]
    x0 = torch.randn(1, d, device=dev, dtype=dt)

    def norm(x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(dt)

    def step():
        x = x0
        for w in ws:
            h = norm(x)
            q = F.linear(h, w["wq"]).view(nkv, group, hd)
            F.linear(h, w["wk"])
            F.linear(h, w["wv"])
            a = F.scaled_dot_product_attention(q, w["kc"], w["vc"])
            x = x + F.linear(a.reshape(1, d), w["wo"])
            h = norm(x)
            x = x + F.linear(F.silu(F.linear(h, w["wg"])) * F.linear(h, w["wu"]), w["wd"])
        return x

    ms = torch_ms(torch, step, 5)
    del ws
    torch.cuda.empty_cache()
    return 1000.0 / ms


def dry_run(layers) -> int:
    """No GPU: builds the benchmark's graphs and compiles each with NVRTC for sm_90."""
    from luminal import cuda

    graphs = {}
    cx = lm.Graph()
    x, w = cx.tensor((1, 4096), lm.bfloat16), cx.tensor((16384, 4096), lm.bfloat16)
    (x @ w.transpose(0, 1)).output()
    graphs["gemv"] = (cx, {})
    for k, n in LINEAR_SHAPES:
        for label, choice in LINEAR_CHOICES:
            cx = lm.Graph()
            x, w = cx.tensor((1, k)), cx.tensor((n, k), lm.bfloat16)
            (x @ w.to(lm.float32).t()).output()
            graphs[f"linear bf16 {k}x{n} {label}"] = (cx, choice or {})
    cx = lm.Graph()
    x, y = cx.tensor((1 << 20,), lm.bfloat16), cx.tensor((1 << 20,), lm.bfloat16)
    (x * 1.5 + y).output()
    graphs["elementwise"] = (cx, {})
    cx = lm.Graph()
    a, b = cx.tensor((4096, 4096), lm.bfloat16), cx.tensor((4096, 4096), lm.bfloat16)
    (a @ b).output()
    graphs["gemm"] = (cx, {"cuda_matmul": 3})
    for m, k, n in EPILOGUE_SHAPES:
        graphs[f"epilogue {m}x{k}x{n}"] = (epilogue_graph(m, k, n, True)[0], {})
    for kind in ROW_KINDS:  # the cost model's pick, as rows_section compiles: row kernels
        space = lm._core.SearchSpace(row_graph(kind)[0]._g, cuda.rewrite_rules("sm_90"),
                                     lm._core.RunnerLimits())
        graphs[kind] = (SimpleNamespace(_g=space.extract(1, {})[0].graph), {})
    for s in ATTENTION_LENGTHS[:1]:
        graphs[f"attention s={s} fused"] = (attention_graph(s, True)[0], {})
    graphs["decode"] = (decode_graph(layers)[0], {})
    for name, (g, choice) in graphs.items():
        t0 = time.perf_counter()
        src = cuda.codegen_check(g, "sm_90", choice)
        kernels = src.count('extern "C" __global__')
        print(f"{name}: {kernels} kernels compiled in {time.perf_counter() - t0:.1f} s")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes, 4 decoder layers")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--json", default=None, help="write the figures here too")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: build and NVRTC-compile")
    args = ap.parse_args()
    layers = args.layers or (4 if args.quick else 32)
    if args.dry_run:
        return dry_run(layers)
    torch = torch_cuda()
    print(f"torch on the GPU: {'yes, ' + torch.__version__ if torch else 'n/a'}", flush=True)
    cache = tempfile.mkdtemp(prefix="luminal-gpu-bench-")
    results = {}
    sections = [
        ("copy", lambda: copy_section(cache, (256 if args.quick else 1024) << 20, torch)),
        ("gemv", lambda: gemv_section(cache, results.get("copy", NAN), torch)),
        ("linear", lambda: linear_section(cache, results.get("copy", NAN), torch)),
        ("elementwise", lambda: elementwise_section(cache, results.get("copy", NAN), torch,
                                                    (16 if args.quick else 64) << 20)),
        ("rows", lambda: rows_section(cache, results.get("copy", NAN), torch)),
        ("gemm", lambda: gemm_section(cache, torch, 2048 if args.quick else 4096)),
        ("epilogue", lambda: epilogue_section(cache, torch)),
        ("attention", lambda: attention_section(cache, torch)),
        ("decode", lambda: decode_section(cache, results.get("copy", NAN), torch, layers)),
    ]
    failed = 0
    for name, fn in sections:
        print(f"[{name}]", flush=True)
        t0 = time.perf_counter()
        try:
            results[name] = fn()
        except Exception:
            failed += 1
            traceback.print_exc()
            print(f"  {name}: FAILED", flush=True)
        print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    print("\nsummary (luminal | reference | note)")
    for section, metric, ours, ref, note in ROWS:
        ref_text = "n/a" if ref is None or math.isnan(ref) else f"{ref:.1f}"
        print(f"{section:8s} {metric:36s} {ours:10.1f} | {ref_text:>9s} | {note}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": ROWS, "results": results}, fh, indent=1, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
