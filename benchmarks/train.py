"""Train-step time side by side: the digits MLP of examples/train_digits.py (64-128-10, ReLU,
cross-entropy, AdamW) at batch 256, as one luminal program on CpuRuntime against torch eager
and torch.compile (inductor), on the same threads. Each engine runs in a process of its own, so
neither's thread pool spins on the cores the other times (torch's and luminal's OpenMP pools in
one process slowed both by up to 100x on two cores) and each peak RSS is its own. Prints the
median step (over --iters steps, after warm-up), the ratio to eager, the compile time, the peak
RSS and its growth over the process after imports and data, and the bytes luminal's runtime
holds. With --gpt, the same for examples/train_gpt.py's character GPT (2 layers, dim 64, 4 heads,
batch 16, seq 128, vocab 96) against a torch twin of it (same modules and shapes: embeddings,
pre-norm RMSNorm layers with causal sdpa attention and SwiGLU, a linear head). One run, short;
not a test.

    python benchmarks/train.py
    python benchmarks/train.py --budget 4 --gpt --skip torch-compile
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from llm import peak_rss  # noqa: E402
from result_process import run_for_result  # noqa: E402

ENGINES = ["luminal", "torch-eager", "torch-compile"]


def median_step(step, iters: int) -> float:
    for _ in range(3):
        step()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def luminal_step(x_data, y_data, threads: int, budget: int):
    import luminal as lm
    import luminal.nn.functional as F
    from luminal import optim
    from luminal.training.train import TrainStep
    from train_digits import MLP

    model = MLP()
    model.drop.p = 0.0  # torch's side has no dropout either
    cx = lm.Graph()
    x = cx.tensor(x_data.shape, name="x")
    y = cx.tensor(y_data.shape, lm.int32, name="y")
    loss = F.cross_entropy(model(x), y)
    step = TrainStep(model, loss, optim.AdamW(model.parameters(), lr=1e-3),
                     lm.CpuRuntime(threads=threads), budget=budget)
    feeds = {x: x_data, y: y_data}
    return (lambda: step.run(feeds)), step.runtime


def gpt_step(threads: int, budget: int, batch: int = 16, seq: int = 128, vocab: int = 96):
    import luminal as lm
    import luminal.nn.functional as F
    from luminal import optim
    from luminal.training.train import TrainStep
    from train_gpt import CharGPT

    model = CharGPT(vocab, seq, 64, 2, 4)
    cx = lm.Graph()
    x = cx.tensor((batch, seq), lm.int32)
    y = cx.tensor((batch, seq), lm.int32)
    loss = F.cross_entropy(model(x).reshape(batch * seq, vocab), y.reshape(batch * seq))
    step = TrainStep(model, loss, optim.AdamW(model.parameters(), lr=1e-3),
                     lm.CpuRuntime(threads=threads), budget=budget)
    rng = np.random.default_rng(0)
    feeds = {t: rng.integers(0, vocab, (batch, seq)).astype(np.int32) for t in (x, y)}

    def run():
        return step.run(feeds)

    run.runtime = step.runtime
    return run


def torch_gpt_step(compiled: bool, batch: int = 16, seq: int = 128, vocab: int = 96,
                   dim: int = 64, layers: int = 2, heads: int = 4):
    """The torch twin of examples/train_gpt.py's CharGPT step (luminal.nn's
    TransformerDecoderLayer: x + attn(norm(x)), then + swiglu(norm(.)); no rotary)."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = nn.RMSNorm(dim, eps=1e-6)
            self.post_attention_layernorm = nn.RMSNorm(dim, eps=1e-6)
            self.qkvo = nn.ModuleList([nn.Linear(dim, dim, bias=False) for _ in range(4)])
            self.gate = nn.Linear(dim, 4 * dim, bias=False)
            self.up = nn.Linear(dim, 4 * dim, bias=False)
            self.down = nn.Linear(4 * dim, dim, bias=False)

        def forward(self, x):
            b, t, _ = x.shape
            h = self.input_layernorm(x)
            q, k, v = (proj(h).view(b, t, heads, dim // heads).transpose(1, 2)
                       for proj in self.qkvo[:3])
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.qkvo[3](a.transpose(1, 2).reshape(b, t, dim))
            h = self.post_attention_layernorm(x)
            return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))

    class CharGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Embedding(seq, dim)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.norm = nn.RMSNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, vocab, bias=False)

        def forward(self, ids):
            h = self.tok(ids) * 0.1 + self.pos(torch.arange(ids.shape[1])) * 0.1
            for layer in self.layers:
                h = layer(h)
            return self.head(self.norm(h))

    model = CharGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x, y = (torch.tensor(rng.integers(0, vocab, (batch, seq))) for _ in range(2))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x).reshape(batch * seq, vocab),
                                           y.reshape(batch * seq))
        loss.backward()
        opt.step()
        return loss

    return torch.compile(step) if compiled else step


def torch_step(x_data, y_data, compiled: bool):
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.tensor(x_data), torch.tensor(y_data, dtype=torch.long)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return torch.compile(step) if compiled else step


def resident_bytes() -> int:
    """This process's resident bytes now (VmRSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def child(args) -> None:
    """One engine's step in this process; prints its figures as a RESULT line."""
    rng = np.random.default_rng(0)
    x_data = rng.random((args.batch, 64), dtype=np.float32)
    y_data = rng.integers(0, 10, args.batch).astype(np.int32)
    if args.engine.startswith("torch"):
        import torch

        torch.set_num_threads(args.threads)
    out = {"engine": args.engine, "rss_before": resident_bytes()}
    t0 = time.perf_counter()
    if args.engine == "luminal":
        step, runtime = luminal_step(x_data, y_data, args.threads, args.budget)
    else:
        step = torch_step(x_data, y_data, args.engine == "torch-compile")
        step()  # torch.compile compiles on the first call
    out["compile_s"] = time.perf_counter() - t0
    out["step_s"] = median_step(step, args.iters)
    if args.engine == "luminal":
        out["memory"] = runtime.memory()  # after the steps: the arena and outputs are allocated
    out["peak_rss"] = peak_rss()
    if args.gpt:  # after the MLP's peak RSS, which is the MLP's alone
        t0 = time.perf_counter()
        if args.engine == "luminal":
            step = gpt_step(args.threads, args.budget)
        else:
            step = torch_gpt_step(args.engine == "torch-compile")
            step()
        out["gpt_compile_s"] = time.perf_counter() - t0
        out["gpt_step_s"] = median_step(step, max(args.iters // 5, 5))
    print("RESULT " + json.dumps(out))


def spawn(engine: str, args) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--engine", engine, "--batch",
           str(args.batch), "--iters", str(args.iters), "--threads", str(args.threads),
           "--budget", str(args.budget)] + (["--gpt"] if args.gpt else [])
    return run_for_result(cmd, engine=engine)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--budget", type=int, default=1)
    parser.add_argument("--gpt", action="store_true", help="also the small GPT's step")
    parser.add_argument("--skip", default="", help="engines to leave out, e.g. torch-compile")
    parser.add_argument("--engine", help=argparse.SUPPRESS)  # internal: one engine, in a child
    args = parser.parse_args()
    if args.engine:
        child(args)
        return
    skipped = set(args.skip.split(",")) - {""}
    rows = [spawn(engine, args) for engine in ENGINES if engine not in skipped]
    eager = next((r["step_s"] for r in rows if r["engine"] == "torch-eager" and "step_s" in r),
                 None)
    print(f"digits MLP train step, batch {args.batch}, {args.threads} threads, each engine in "
          f"its own process (luminal budget {args.budget})")
    print(f"  {'engine':14s} {'step ms':>9s} {'x eager':>8s} {'compile s':>10s} "
          f"{'peak RSS MiB':>13s} {'growth MiB':>11s}")
    for r in rows:
        if "error" in r:
            print(f"  {r['engine']:14s} failed: {r['error']}")
            continue
        ratio = f"{eager / r['step_s']:8.2f}" if eager else f"{'-':>8s}"
        print(f"  {r['engine']:14s} {r['step_s'] * 1e3:9.3f} {ratio} {r['compile_s']:10.1f} "
              f"{r['peak_rss'] / 2**20:13.0f} {(r['peak_rss'] - r['rss_before']) / 2**20:11.0f}")
    gpt_rows = [r for r in rows if "gpt_step_s" in r]
    gpt_eager = next((r["gpt_step_s"] for r in gpt_rows if r["engine"] == "torch-eager"), None)
    if gpt_rows:
        print("char GPT train step (2 layers, dim 64, 4 heads), batch 16 x seq 128")
        print(f"  {'engine':14s} {'step ms':>9s} {'x eager':>8s} {'compile s':>10s}")
    for r in gpt_rows:
        ratio = f"{gpt_eager / r['gpt_step_s']:8.2f}" if gpt_eager else f"{'-':>8s}"
        print(f"  {r['engine']:14s} {r['gpt_step_s'] * 1e3:9.2f} {ratio} "
              f"{r['gpt_compile_s']:10.1f}")
    for r in rows:
        if "memory" in r:
            memory = r["memory"]
            print(f"  luminal runtime holds {sum(memory.values()) / 1024:.0f} KiB "
                  + ", ".join(f"{k} {v / 1024:.0f}" for k, v in memory.items()))


if __name__ == "__main__":
    main()
