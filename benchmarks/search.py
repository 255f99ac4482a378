"""Search benchmark: time to build the search space and search a 2-layer Llama-style graph
(hidden 256, 4 heads, seq 128) with budget 1 and budget 20, and again on a cache hit; and, on
runtimes that tune (CpuRuntime), the speed of search(rt, 20)'s winner against search(rt, 1)'s.
Not a timed test: run `python benchmarks/search.py [--runtime cpu]` and read the figures.
Targets: build + search(rt, 1) under 5 s, search(rt, 20) under 60 s, a cache hit under 1 s.
Also printed: the duplicate candidates skipped (programs that run as an earlier one), and the
repeat stability: search(rt, 20) twice more (no search cache; compiled objects cached), each
winner, and whether it is the first winner or within the first search's margin of it.
The graph is written with the primitives only (no RoPE: it needs concatenation): matmuls,
softmax from exp/amax/sum, RMSNorm from mean/sqrt, SwiGLU from exp and reciprocal.
On the CPU, also the calibrated cost model (luminal.search.cost) and the descent: the model
calibrated on this machine (its constants, the Spearman of its estimates with the probe graphs'
kernel times), then per benchmark graph (softmax, MLP, attention, an encoder layer, matmuls of
several shapes, a decode GEMV, the Llama graph): search(rt, 1) (the model's pick) against
search(rt, 20) and search(rt, 20, descent=10) (their winners timed side by side: the best of
interleaved runs), the Spearman of the model with the candidates' and kernels' times, and the
duplicates skipped. `--model-only` runs only this part.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import luminal as lm  # noqa: E402

HIDDEN, HEADS, SEQ, FFN, LAYERS = 256, 4, 128, 512, 2


def rms_norm(x, weight, eps=1e-5):
    ms = (x * x).mean(-1, keepdim=True)
    return x * (ms + eps).sqrt().reciprocal() * weight


def softmax(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e * e.sum(-1, keepdim=True).reciprocal()


def silu(x):
    return x * ((-x).exp() + 1.0).reciprocal()


def attention(cx, x, wq, wk, wv, wo, mask):
    hd = HIDDEN // HEADS
    q = (x @ wq).reshape(SEQ, HEADS, hd).permute(1, 0, 2)
    k = (x @ wk).reshape(SEQ, HEADS, hd).permute(1, 2, 0)
    v = (x @ wv).reshape(SEQ, HEADS, hd).permute(1, 0, 2)
    scores = (q @ k) * (1.0 / hd ** 0.5) + mask
    out = (softmax(scores) @ v).permute(1, 0, 2).reshape(SEQ, HIDDEN)
    return out @ wo


def build_llama(cx):
    """Returns (inputs, output): the graph of LAYERS decoder blocks over a (SEQ, HIDDEN) input."""
    x = cx.tensor((SEQ, HIDDEN), name="x")
    mask = cx.tensor((SEQ, SEQ), name="mask")  # additive causal mask
    inputs = [x, mask]
    h = x
    for layer in range(LAYERS):
        def w(name, shape):
            t = cx.tensor(shape, name=f"l{layer}.{name}")
            inputs.append(t)
            return t
        n1, n2 = w("attn_norm", (HIDDEN,)), w("ffn_norm", (HIDDEN,))
        wq, wk, wv, wo = (w(n, (HIDDEN, HIDDEN)) for n in ("wq", "wk", "wv", "wo"))
        w1, w3, w2 = w("w1", (HIDDEN, FFN)), w("w3", (HIDDEN, FFN)), w("w2", (FFN, HIDDEN))
        h = h + attention(cx, rms_norm(h, n1), wq, wk, wv, wo, mask)
        z = rms_norm(h, n2)
        h = h + (silu(z @ w1) * (z @ w3)) @ w2
    return inputs, h.output()


def runtime_class(name):
    if name == "native":
        return lm.NativeRuntime
    if not hasattr(lm, "CpuRuntime"):
        sys.exit("lm.CpuRuntime is not available in this build")
    return lm.CpuRuntime


def make_runtime(rt_class, compile_cache):
    if rt_class is lm.NativeRuntime:
        return rt_class()
    return rt_class(cache_dir=compile_cache)


def timed_search(rt_class, budget, cache_dir, time_limit=None, compile_cache=None):
    cx = lm.Graph()
    inputs, out = build_llama(cx)
    t0 = time.perf_counter()
    cx.build_search_space(rt_class)
    rt = cx.search(make_runtime(rt_class, compile_cache), budget, cache_dir=cache_dir,
                   time_limit=time_limit)
    return time.perf_counter() - t0, cx, rt, inputs, out


def run_speed(cx, rt, inputs, repeats=5):
    rng = np.random.default_rng(0)
    for t in inputs:
        rt.set_data(t, rng.uniform(-0.1, 0.1, size=t.shape).astype(np.float32))
    rt.execute(cx.dyn_map)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rt.execute(cx.dyn_map)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def repeat_stability(rt_class, first, time_limit, compile_cache, searches=2):
    """Searches again (budget 20, no search cache) and prints each winner beside the first
    search's: the same program, or within the first search's margin of its winner."""
    won = first.candidates[first.winner]
    times = {c.fingerprint: c.seconds for c in first.candidates if c.seconds is not None}
    margin = first.margin or 0.0
    print(f"repeat stability: first winner [{won.choice}] {won.seconds * 1e3:.3f} ms, "
          f"margin {margin * 1e3:.3f} ms")
    for i in range(searches):
        _, cx, _, _, _ = timed_search(rt_class, 20, tempfile.mkdtemp(prefix="luminal-rep-"),
                                      time_limit, compile_cache)
        rep = cx.last_search_report
        again = rep.candidates[rep.winner]
        if again.fingerprint == won.fingerprint:
            verdict = "the same program"
        elif again.fingerprint in times:
            gap = times[again.fingerprint] - won.seconds
            verdict = (f"{'within' if gap <= margin else 'OUTSIDE'} the margin "
                       f"(first search timed it {gap * 1e3:+.3f} ms from its winner)")
        else:
            verdict = "not timed by the first search"
        print(f"  search {i + 2}: winner [{again.choice}] {again.seconds * 1e3:.3f} ms: {verdict}")


def bench_graphs():
    """(name, build(cx) -> inputs) of the graphs the cost model and descent are measured on."""
    def softmax_graph(cx):
        x = cx.tensor((256, 1024))
        softmax(x).output()
        return [x]

    def mlp(cx):
        x, w1, w2 = cx.tensor((64, 512)), cx.tensor((512, 1024)), cx.tensor((1024, 512))
        ((x @ w1).relu() @ w2).output()
        return [x, w1, w2]

    def attention_graph(cx):
        q, k, v = cx.tensor((4, 128, 64)), cx.tensor((4, 64, 128)), cx.tensor((4, 128, 64))
        (softmax((q @ k) * 0.125) @ v).output()
        return [q, k, v]

    def encoder(cx):
        x = cx.tensor((SEQ, HIDDEN))
        ws = [cx.tensor((HIDDEN, HIDDEN)) for _ in range(4)]
        w1, w2 = cx.tensor((HIDDEN, FFN)), cx.tensor((FFN, HIDDEN))
        n1, n2 = cx.tensor((HIDDEN,)), cx.tensor((HIDDEN,))
        mask = cx.tensor((SEQ, SEQ))
        h = x + attention(cx, rms_norm(x, n1), *ws, mask)
        (h + silu(rms_norm(h, n2) @ w1) @ w2).output()
        return [x, *ws, w1, w2, n1, n2, mask]

    def matmul(m, k, n):
        def build(cx):
            a, b = cx.tensor((m, k)), cx.tensor((k, n))
            (a @ b).output()
            return [a, b]
        return build

    def llama(cx):
        inputs, _ = build_llama(cx)
        return inputs

    return [("softmax 256x1024", softmax_graph), ("mlp 64x512x1024", mlp),
            ("attention 4x128x64", attention_graph), ("encoder layer", encoder),
            ("matmul 64x64x64", matmul(64, 64, 64)), ("matmul 256x256x256", matmul(256, 256, 256)),
            ("matmul 512x128x1024", matmul(512, 128, 1024)),
            ("decode gemv 1x1024x1024", matmul(1, 1024, 1024)), ("llama 2 layers", llama)]


def best_of_interleaved(pairs, rounds=15):
    """pairs: [(cx, rt, inputs)]; the best execute time of each over interleaved rounds."""
    rng = np.random.default_rng(0)
    for cx, rt, inputs in pairs:
        for t in inputs:
            rt.set_data(t, rng.uniform(-0.1, 0.1, size=t.shape).astype(np.float32))
        rt.execute(cx.dyn_map)
    best = [float("inf")] * len(pairs)
    for _ in range(rounds):
        for i, (cx, rt, _) in enumerate(pairs):
            t0 = time.perf_counter()
            rt.execute(cx.dyn_map)
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def cost_model_figures(compile_cache):
    """Calibrates the cost model into a fresh search cache, then compares search(rt, 1) with
    search(rt, 20) (and with descent) on each benchmark graph."""
    from luminal.search import calibrate
    from luminal.search import cost as search_cost

    cache_dir = tempfile.mkdtemp(prefix="luminal-search-model-")
    rt = lm.CpuRuntime(cache_dir=compile_cache)
    t0 = time.perf_counter()
    model, per_graph = calibrate.calibrate_and_store(rt, cache_dir)
    est = np.concatenate([e for _, e, _ in per_graph])
    sec = np.concatenate([s for _, _, s in per_graph])
    print(f"cost model calibrated in {time.perf_counter() - t0:.1f} s on {len(sec)} probe "
          f"kernels: Spearman {search_cost.spearman(est, sec):.3f}, pairs > 2x apart ordered "
          f"right {search_cost.concordance(est, sec):.3f}")
    print("  constants: " + ", ".join(f"{n} {c:.3g}" for n, c in zip(search_cost.TERMS,
                                                                      model.coef)))
    all_est, all_sec, ratios, ratios_d = [], [], [], []
    print(f"{'graph':26s} {'s(1) ms':>8s} {'s(20) ms':>8s} {'1/20':>6s} {'+desc ms':>8s} "
          f"{'1/desc':>6s} {'rho cand':>8s} {'rho kern':>8s} {'dups':>4s}")
    for name, build in bench_graphs():
        runs = []
        reports = []
        for budget, descent in ((1, 0), (20, 0), (20, 10)):
            cx = lm.Graph()
            inputs = build(cx)
            cx.build_search_space(lm.CpuRuntime)
            out = cx.search(lm.CpuRuntime(cache_dir=compile_cache), budget, cache=False,
                            cache_dir=cache_dir, descent=descent, progress=False)
            runs.append((cx, out, inputs))
            reports.append(cx.last_search_report)
        t1, t20, td = best_of_interleaved(runs)
        rep = reports[1]
        timed = [c for c in rep.candidates if c.status == "ok" and c.estimate is not None]
        all_est += [c.estimate for c in timed]
        all_sec += [c.seconds for c in timed]
        ratios.append(t1 / t20)
        ratios_d.append(t1 / td)

        def fmt(v):
            return f"{v:8.3f}" if v is not None and v == v else f"{'-':>8s}"
        print(f"{name:26s} {t1 * 1e3:8.3f} {t20 * 1e3:8.3f} {t1 / t20:6.2f} {td * 1e3:8.3f} "
              f"{t1 / td:6.2f} {fmt(rep.rank_correlation)} {fmt(rep.kernel_rank_correlation)} "
              f"{rep.duplicates:4d}")
        if reports[2].descent:
            print(f"  descent: {reports[2].descent}")
    print(f"search(rt, 1) / search(rt, 20): worst {max(ratios):.2f}x, geomean "
          f"{float(np.exp(np.mean(np.log(ratios)))):.2f}x; with descent: worst "
          f"{max(ratios_d):.2f}x (target: within 1.15x)")
    print(f"Spearman of the model with the candidates' times, all graphs pooled: "
          f"{search_cost.spearman(all_est, all_sec):.3f} over {len(all_sec)} candidates")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtime", default="native", choices=["native", "cpu"])
    parser.add_argument("--time-limit", type=float, default=None,
                        help="search(rt, 20)'s time limit in seconds (the native interpreter "
                             "takes tens of seconds per run of this graph)")
    parser.add_argument("--model-only", action="store_true",
                        help="only the cost model and descent figures (CPU)")
    args = parser.parse_args()
    rt_class = runtime_class(args.runtime)
    if args.model_only:
        runtime_class("cpu")
        cost_model_figures(tempfile.mkdtemp(prefix="luminal-search-bench-cc-"))
        return
    cache_dir = tempfile.mkdtemp(prefix="luminal-search-bench-")
    # A fresh compile cache, so the figures include every C compile (a cold start).
    compile_cache = tempfile.mkdtemp(prefix="luminal-search-bench-cc-")
    cx = lm.Graph()
    build_llama(cx)
    print(f"graph: {len(cx)} HLIR nodes, runtime {args.runtime}, cold compile cache")
    s1, cx1, rt1, in1, out1 = timed_search(rt_class, 1, cache_dir, compile_cache=compile_cache)
    print(f"build_search_space + search(rt, 1):  {s1:7.2f} s   (target < 5 s)")
    print(cx1.last_search_report)
    print("  " + cx1.last_search_report.saturation.splitlines()[0])
    s20, cx20, rt20, in20, out20 = timed_search(rt_class, 20, cache_dir, args.time_limit,
                                                compile_cache)
    rep = cx20.last_search_report
    tried = [c for c in rep.candidates if c.status != "skipped"]
    print(f"build_search_space + search(rt, 20): {s20:7.2f} s   (target < 60 s), "
          f"{len(tried)} distinct candidates tried, {rep.duplicates} duplicates skipped, "
          f"{len(rep.candidates) - len(tried)} skipped by the time limit, "
          f"{len(rep.wrong_rules)} wrong")
    hit, cx_hit, _, _, _ = timed_search(rt_class, 20, cache_dir, compile_cache=compile_cache)
    print(f"same again (cache hit: {cx_hit.last_search_report.cache_hit}): "
          f"{hit:7.2f} s   (target < 1 s)")
    if args.runtime != "native":
        repeat_stability(rt_class, rep, args.time_limit, compile_cache)
    repeats = 1 if args.runtime == "native" else 5
    t1 = run_speed(cx1, rt1, in1, repeats)
    t20 = run_speed(cx20, rt20, in20, repeats)
    print(f"execute: search(rt, 1) winner {t1 * 1e3:.2f} ms, search(rt, 20) winner "
          f"{t20 * 1e3:.2f} ms, speedup {t1 / t20:.2f}x")
    print(rep)
    if args.runtime != "native":
        cost_model_figures(compile_cache)


if __name__ == "__main__":
    main()
