"""torch.compile backends side by side on PyTorch models with random weights: eager, inductor
and luminal, at batch 1 and 8 — a BERT-base-shaped encoder and a GPT-2-small-shaped LM from
transformers, a ResNet-style CNN written in torch and ResNet-18 at 224x224 (resnet.py). Prints latency (median of --iters
calls under torch.no_grad), each backend's first-call (compile) time, and luminal's ratio to
inductor; then train steps (forward, backward, SGD update) of an MLP and the CNN, the forward
and backward graphs compiled by each backend. Not a test.

    python benchmarks/torch_backend.py                  # the real shapes
    python benchmarks/torch_backend.py --small          # a quick look
    python benchmarks/torch_backend.py --models rn18    # some rows only
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def models(small: bool):
    import torch
    import transformers

    from test_torch_backend import resnet  # the CNN the backend's tests use

    layers = 2 if small else 12
    hidden = 128 if small else 768
    bert = transformers.BertModel(transformers.BertConfig(
        hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=hidden // 64,
        intermediate_size=4 * hidden)).eval()
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=hidden, n_layer=layers, n_head=hidden // 64)).eval()
    from resnet import resnet18

    seq = 32 if small else 128
    side = 64 if small else 224
    return {
        "bert": (bert, lambda b: (torch.randint(0, 1000, (b, seq)),)),
        "gpt2": (gpt2, lambda b: (torch.randint(0, 1000, (b, seq)),)),
        "cnn": (resnet().eval(), lambda b: (torch.randn(b, 3, 64, 64),)),
        "rn18": (resnet18(), lambda b: (torch.randn(b, 3, side, side),)),
    }


def timed(fn, inputs, iters: int):
    import torch

    with torch.no_grad():
        t0 = time.perf_counter()
        fn(*inputs)
        first = time.perf_counter() - t0
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(*inputs)
            times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def train_models(small: bool):
    import torch

    from test_torch_backend import resnet

    nn = torch.nn
    width = 256 if small else 1024
    mlp = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                        nn.Linear(width, 10))
    return {
        "mlp": (mlp, lambda: torch.randn(256, 64)),
        "cnn": (resnet(), lambda: torch.randn(8, 3, 32 if small else 64, 32 if small else 64)),
    }


def timed_train(model, compiled, x, iters: int):
    """(first step s, median step s) of SGD steps on mean(model(x) ** 2)."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        (compiled(x) ** 2).mean().backward()
        opt.step()

    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--search", type=int, default=1, help="luminal's search budget")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--models", default="", help="comma-separated rows to run (inference: "
                    "the models' names, training: mlp, cnn); default all")
    args = ap.parse_args()
    chosen = set(filter(None, args.models.split(",")))

    def picked(table: dict) -> dict:
        return {k: v for k, v in table.items() if not chosen or k in chosen}
    torch.set_num_threads(args.threads)
    import luminal.fx

    print(f"{'model':6} {'batch':>5} {'eager ms':>9} {'inductor ms':>12} {'luminal ms':>11} "
          f"{'lm/eager':>9} {'lm/inductor':>12} {'compile s (ind / lm)':>21}")
    for name, (model, make_inputs) in picked(models(args.small)).items():
        for batch in (1, 8):
            inputs = make_inputs(batch)
            _, eager = timed(model, inputs, args.iters)
            torch._dynamo.reset()
            ind_first, ind = timed(torch.compile(model, backend="inductor"), inputs, args.iters)
            torch._dynamo.reset()
            luminal.fx.report.reset()
            lm_model = torch.compile(model, backend="luminal", options={"search": args.search})
            lm_first, lm = timed(lm_model, inputs, args.iters)
            note = "" if not luminal.fx.report.fallbacks else \
                f"  ({len(luminal.fx.report.fallbacks)} graph(s) in PyTorch)"
            print(f"{name:6} {batch:>5} {eager * 1e3:9.2f} {ind * 1e3:12.2f} {lm * 1e3:11.2f} "
                  f"{eager / lm:8.2f}x {ind / lm:11.2f}x {ind_first:10.1f} / {lm_first:.1f}{note}")
    print(f"\ntrain step {'model':6} {'eager ms':>9} {'inductor ms':>12} {'luminal ms':>11} "
          f"{'lm/eager':>9} {'lm/inductor':>12} {'compile s (ind / lm)':>21}")
    for name, (model, make_input) in picked(train_models(args.small)).items():
        model.train()
        x = make_input()
        _, eager = timed_train(model, model, x, args.iters)
        torch._dynamo.reset()
        ind_first, ind = timed_train(model, torch.compile(model, backend="inductor"), x,
                                     args.iters)
        torch._dynamo.reset()
        luminal.fx.report.reset()
        compiled = torch.compile(model, backend="luminal", options={"search": args.search})
        lm_first, lm = timed_train(model, compiled, x, args.iters)
        note = "" if not luminal.fx.report.fallbacks else \
            f"  ({len(luminal.fx.report.fallbacks)} graph(s) in PyTorch)"
        print(f"train step {name:6} {eager * 1e3:9.2f} {ind * 1e3:12.2f} {lm * 1e3:11.2f} "
              f"{eager / lm:8.2f}x {ind / lm:11.2f}x {ind_first:10.1f} / {lm_first:.1f}{note}")


if __name__ == "__main__":
    main()
