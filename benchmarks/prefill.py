"""Time to first token of a bf16 Llama-shaped model (benchmarks/llm.py's, random weights), luminal
with bf16 activations against transformers bf16, in one process with their runs alternating:
on a machine whose speed drifts by 2-3x within a minute (a shared core's AMX or vector unit),
runs of two engines minutes apart in their own processes compare the drift, not the engines.
Each round runs every prompt length once on each engine (luminal: a session's prefill from an
empty cache, its search timed at a prefill as llama.py asks; transformers: one forward with
its cache, as llm.py times it); the table gives each engine's best and median over the rounds
and the speedup (transformers' time over luminal's) of the bests, of the medians, and the
range of the rounds' own speedups. The last position's greedy token of both is compared.

    python benchmarks/prefill.py                        # the 1B shape, 128 and 512 tokens
    python benchmarks/prefill.py --prompts 128,512,1024 --rounds 9
    python benchmarks/prefill.py --model-dir DIR        # a directory llm.py's build wrote
    python benchmarks/prefill.py --activations f32      # luminal's default activations
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llm import add_model_args, build_model, prompt_ids, warm  # noqa: E402
from luminal.cli import RUN_SEARCH  # noqa: E402


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--prompts", default="128,512", help="prompt lengths, comma-separated")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--search", type=int, default=RUN_SEARCH)
    ap.add_argument("--model-dir", help="a model directory already built (else one is made)")
    ap.add_argument("--activations", default="bf16", choices=["bf16", "f32"],
                    help="luminal's (f32: from_pretrained's default, the prompt run by the "
                         "program searched at a decode step)")
    args = ap.parse_args()
    prompts = [int(p) for p in args.prompts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model_dir
        if path is None:
            path = os.path.join(tmp, "model")
            build_model(path, args)
        run(path, prompts, args)


def run(path: str, prompts: list, args) -> None:
    import numpy as np
    import torch
    import transformers

    import luminal as lm
    from luminal.models import AutoModelForCausalLM, CausalLMSession

    warm(path)
    torch.set_num_threads(args.threads)
    ref = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    vocab = ref.config.vocab_size
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path, max_context=max(prompts) + 1,
                                                 activations=args.activations)
    session = CausalLMSession(model, lm.CpuRuntime(threads=args.threads), search=args.search)
    print(f"luminal: compiled in {time.perf_counter() - t0:.1f} s; "
          f"{str(session.graph.last_search_report).splitlines()[0]}", flush=True)
    ids = {p: np.array([prompt_ids(p, vocab)], np.int32) for p in prompts}

    def ours(p):
        session.reset()
        return session.step(ids[p])

    def theirs(p):
        with torch.no_grad():
            return ref(torch.from_numpy(ids[p]).long(), use_cache=True).logits

    same = {}
    for p in prompts:  # each shape once first, and the last position's greedy token
        same[p] = int(ours(p)[0, -1].argmax()) == int(theirs(p)[0, -1].float().argmax())
    times = {(engine, p): [] for engine in ("luminal", "torch") for p in prompts}
    for _ in range(args.rounds):
        for p in prompts:
            times[("luminal", p)].append(timed(lambda: ours(p)))
            times[("torch", p)].append(timed(lambda: theirs(p)))
    print(f"\n{args.threads} threads, {args.rounds} rounds; ms")
    print(f"{'prompt':>6} {'luminal best':>12} {'median':>7} {'torch best':>10} {'median':>7}"
          f" {'speedup best':>12} {'median':>7} {'rounds':>11}  same token")
    for p in prompts:
        ours_t, theirs_t = times[("luminal", p)], times[("torch", p)]
        rounds = [b / a for a, b in zip(ours_t, theirs_t)]
        print(f"{p:6d} {min(ours_t) * 1e3:12.0f} {statistics.median(ours_t) * 1e3:7.0f} "
              f"{min(theirs_t) * 1e3:10.0f} {statistics.median(theirs_t) * 1e3:7.0f} "
              f"{min(theirs_t) / min(ours_t):11.2f}x "
              f"{statistics.median(theirs_t) / statistics.median(ours_t):6.2f}x "
              f"{min(rounds):5.2f}-{max(rounds):4.2f}x  {'yes' if same[p] else 'NO'}")
    print("speedup: transformers bf16's time over luminal's (> 1: luminal's first token sooner)")


if __name__ == "__main__":
    sys.exit(main())
