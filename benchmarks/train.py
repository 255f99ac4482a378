"""Train-step time side by side: the digits MLP of examples/train_digits.py (64-128-10, ReLU,
cross-entropy, AdamW) at batch 256, as one luminal program on CpuRuntime against torch eager
and (with --compile) torch.compile, on the same threads. Prints the median step (over --iters
steps, after warm-up), the ratio to eager, and the bytes luminal's runtime holds. With --gpt,
luminal's step of examples/train_gpt.py's model (batch 16, seq 128) as well (no torch twin
yet). One run, short; not a test.

    python benchmarks/train.py
    python benchmarks/train.py --compile --budget 4 --gpt
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


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
    from luminal.train import TrainStep
    from train_digits import MLP

    model = MLP()
    model.drop.p = 0.0  # torch's side has no dropout either
    cx = lm.Graph()
    x = cx.tensor(x_data.shape, name="x")
    y = cx.tensor(y_data.shape, lm.int32, name="y")
    loss = F.cross_entropy(model(x), y)
    t0 = time.perf_counter()
    step = TrainStep(model, loss, optim.AdamW(model.parameters(), lr=1e-3),
                     lm.CpuRuntime(threads=threads), budget=budget)
    compile_seconds = time.perf_counter() - t0
    feeds = {x: x_data, y: y_data}
    return (lambda: step.run(feeds)), compile_seconds, step.runtime


def gpt_step(threads: int, budget: int, batch: int = 16, seq: int = 128, vocab: int = 96):
    import luminal as lm
    import luminal.nn.functional as F
    from luminal import optim
    from luminal.train import TrainStep
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
    return lambda: step.run(feeds)


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


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--budget", type=int, default=1)
    parser.add_argument("--compile", action="store_true", help="also torch.compile")
    parser.add_argument("--gpt", action="store_true", help="also the small GPT's step")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x_data = rng.random((args.batch, 64), dtype=np.float32)
    y_data = rng.integers(0, 10, args.batch).astype(np.int32)
    run, compile_seconds, runtime = luminal_step(x_data, y_data, args.threads, args.budget)
    rows = [("luminal cpu", median_step(run, args.iters))]
    rows.append(("torch eager", median_step(torch_step(x_data, y_data, False), args.iters)))
    if args.compile:
        rows.append(("torch.compile", median_step(torch_step(x_data, y_data, True), args.iters)))
    eager = rows[1][1]
    print(f"digits MLP train step, batch {args.batch}, {args.threads} threads "
          f"(luminal compile + search {compile_seconds:.1f} s, budget {args.budget})")
    for name, seconds in rows:
        print(f"  {name:14s} {seconds * 1e3:8.3f} ms   {eager / seconds:5.2f}x eager")
    if args.gpt:
        gpt = median_step(gpt_step(args.threads, args.budget), max(args.iters // 10, 3))
        print(f"  luminal cpu, char GPT (2 layers, dim 64) batch 16 x seq 128: "
              f"{gpt * 1e3:.1f} ms")
    memory = runtime.memory()  # after the steps: the arena and outputs are allocated
    held = sum(memory.values())
    print(f"  luminal runtime holds {held / 1024:.0f} KiB "
          + ", ".join(f"{k} {v / 1024:.0f}" for k, v in memory.items()))


if __name__ == "__main__":
    main()
