"""Train-step time side by side: the digits MLP of examples/train_digits.py (64-128-10, ReLU,
cross-entropy, AdamW) at batch 256, as one luminal program on CpuRuntime against torch eager
and (with --compile) torch.compile, on the same threads. Prints the median step (over --iters
steps, after warm-up), the ratio to eager, and the bytes luminal's runtime holds. One run,
short; not a test.

    python benchmarks/train.py
    python benchmarks/train.py --compile --budget 4
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
    memory = runtime.memory()  # after the steps: the arena and outputs are allocated
    held = sum(memory.values())
    print(f"  luminal runtime holds {held / 1024:.0f} KiB "
          + ", ".join(f"{k} {v / 1024:.0f}" for k, v in memory.items()))


if __name__ == "__main__":
    main()
