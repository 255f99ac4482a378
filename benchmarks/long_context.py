"""Decode at a long context: the time of a decode step after a --context token prefill, for
luminal (its KV cache read in place, nn/kv_cache.py) and transformers in bf16, on the model of
benchmarks/llm.py (random bf16 weights; the 1B shape by default). Each engine in its own
process; each step timed on its own, minimum and median of --steps.

    python benchmarks/long_context.py                       # 1000 cached positions, 1B shape
    python benchmarks/long_context.py --context 2000 --layers 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from llm import add_model_args, build_model, warm  # noqa: E402


def step_times(step, first_token: int, steps: int) -> list:
    """Seconds of each of ``steps`` greedy decode steps; ``step(token)`` returns logits."""
    import numpy as np

    times, token = [], first_token
    for _ in range(steps):
        t0 = time.perf_counter()
        logits = step(token)
        times.append(time.perf_counter() - t0)
        token = int(np.argmax(logits))
    return times


def run_luminal(args, prompt) -> list:
    import numpy as np

    import luminal as lm
    from luminal.models import AutoModelForCausalLM, CausalLMSession

    model = AutoModelForCausalLM.from_pretrained(args.model_dir,
                                             max_context=args.context + args.steps + 1)
    session = CausalLMSession(model, lm.CpuRuntime(threads=args.threads), search=args.search)
    session.step(np.array([prompt[:8]], np.int32))  # warm-up of both shapes
    session.step(np.array([[1]], np.int32))
    session.reset()
    session.step(np.array([prompt], np.int32))
    return step_times(lambda t: session.step(np.array([[t]], np.int32))[0, -1], 1, args.steps)


def run_torch(args, prompt) -> list:
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model_dir,
                                                          dtype=torch.bfloat16).eval()
    with torch.no_grad():
        out = model(torch.tensor([prompt]), use_cache=True)
        cache = out.past_key_values

        def step(token):
            nonlocal cache
            o = model(torch.tensor([[token]]), past_key_values=cache, use_cache=True)
            cache = o.past_key_values
            return o.logits[0, -1].float().numpy()

        step(1)  # warm-up
        return step_times(step, 1, args.steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_model_args(ap)
    ap.add_argument("--context", type=int, default=1000, help="positions cached before decode")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--search", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        import numpy as np

        warm(args.model_dir)
        vocab = json.load(open(os.path.join(args.model_dir, "config.json")))["vocab_size"]
        prompt = [int(t) for t in np.random.default_rng(0).integers(0, vocab, args.context)]
        run = run_luminal if args.engine == "luminal" else run_torch
        print("RESULT " + json.dumps(run(args, prompt)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        facts = build_model(model_dir, args)
        print(f"model: {facts['layers']} layers, hidden {facts['hidden']}, vocab "
              f"{facts['vocab']}; decode after {args.context} cached positions, "
              f"{args.threads} threads")
        for engine in ("luminal", "torch bf16"):
            cmd = [sys.executable, __file__, "--engine", engine.split()[0], "--model-dir",
                   model_dir, "--context", str(args.context), "--steps", str(args.steps),
                   "--search", str(args.search), "--threads", str(args.threads)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(f"{engine}: failed\n{done.stderr[-2000:]}")
                continue
            times = sorted(json.loads(line[7:]))
            print(f"{engine:12} step min {times[0] * 1e3:7.1f} ms, median "
                  f"{times[len(times) // 2] * 1e3:7.1f} ms ({1 / times[len(times) // 2]:.2f} "
                  f"tok/s)")


if __name__ == "__main__":
    main()
