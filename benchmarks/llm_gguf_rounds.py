"""Quantized LLM decode and prompt processing, luminal and llama.cpp in one process with their
runs alternating, round after round: on a shared machine whose memory bandwidth drifts by 20-30%
within a minute, llm_gguf.py's runs of each engine in its own process minutes apart compare the
drift as much as the engines. Same model and files as llm_gguf.py (the 1B shape's random
weights, `luminal quantize` per --types type, or the .gguf files of --gguf-dir that
llm_gguf.py's names would give); luminal with Q8_0 activations, as llama.cpp, llama.cpp with
n_batch 512. Each round times, on each engine in turn, a --prompt-tokens prefill from an empty
cache, then --decode greedy tokens after a 10-token prompt. The table gives each engine's best
and median over the rounds, the speedup (llama.cpp's time over luminal's) of the bests and of
the medians, and the range of the rounds' own speedups (decode: its steps only, each
sampling greedily from the step before); decode's share of the bandwidth bound
(the GGUF's bytes read per token over the read bandwidth measured before the rounds).

    python benchmarks/llm_gguf_rounds.py                        # q8_0, q4_0, q4_k; 5 rounds
    python benchmarks/llm_gguf_rounds.py --types q4_0 --rounds 9 --gguf-dir /tmp/gguf
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from bandwidth import read_bandwidth  # noqa: E402
from llm import add_model_args, prompt_ids  # noqa: E402
from llm_gguf import LlamaCpp, bytes_per_token, model_flags  # noqa: E402
from prefill import timed  # noqa: E402

LLM_GGUF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llm_gguf.py")


class Luminal:
    def __init__(self, path, args):
        import luminal as lm
        from luminal.models import CausalLMSession
        from luminal.models.llama import LlamaForCausalLM

        model = LlamaForCausalLM.from_gguf(path, max_context=args.prompt_tokens + args.decode + 16,
                                           activations="q8_0")
        self.session = CausalLMSession(model, lm.CpuRuntime(threads=args.threads),
                                       search=args.search)
        self.vocab = model.config.vocab_size

    def prefill(self, ids):
        self.session.reset()
        self.session.step(np.array([ids], np.int32))

    def decode(self, ids, n):
        """(the n greedy tokens after `ids`, the seconds of their decode steps)."""
        from luminal.models.generation import GenerationStats, generate

        stats = GenerationStats()
        tokens = list(generate(self.session, ids, n + 1, stats=stats))
        return tokens[1:], n / stats.tokens_per_second  # the first token is the prefill's


def gguf_file(kind: str, args, tmp: str) -> str:
    """The .gguf of `kind`: in --gguf-dir if there, else llm_gguf.py's build and quantize."""
    folder = args.gguf_dir or tmp
    path = os.path.join(folder, f"model.{kind}.gguf")
    if os.path.exists(path):
        return path
    model_dir = os.path.join(folder, "model")
    for engine in ([] if os.path.isdir(model_dir) else ["build"]) + [f"quantize:{kind}"]:
        cmd = [sys.executable, LLM_GGUF, "--engine", engine, "--path", model_dir,
               "--preset", args.preset, "--accuracy-positions", "0"] + model_flags(args)
        subprocess.run(cmd, check=True, capture_output=True)
    return path


def rounds(path: str, args) -> dict:
    """Both engines on `path`, alternating: their prefill and decode seconds per round."""
    engines = {"luminal": Luminal(path, args), "llama.cpp": LlamaCpp(path, args)}
    vocab = engines["luminal"].vocab
    prompt, short = prompt_ids(args.prompt_tokens, vocab), prompt_ids(10, vocab)
    tokens = {}
    for name, e in engines.items():  # each shape once first
        e.prefill(prompt)
        tokens[name] = e.decode(short, args.decode)[0]
    times = {(name, what): [] for name in engines for what in ("prefill", "decode")}
    for _ in range(args.rounds):
        for name, e in engines.items():
            times[(name, "prefill")].append(timed(lambda: e.prefill(prompt)))
            times[(name, "decode")].append(e.decode(short, args.decode)[1])
    same = sum(a == b for a, b in zip(tokens["luminal"], tokens["llama.cpp"]))
    return {"times": times, "same": same, "bytes_per_token": bytes_per_token(path)}


def report(kind: str, r: dict, bandwidth: float, args) -> None:
    t = r["times"]
    bound = bandwidth / r["bytes_per_token"]  # tokens per second
    for what, count in (("prefill", args.prompt_tokens), ("decode", args.decode)):
        ours, theirs = t[("luminal", what)], t[("llama.cpp", what)]
        per = [b / a for a, b in zip(ours, theirs)]
        best, median = min(theirs) / min(ours), statistics.median(theirs) / statistics.median(ours)
        line = (f"{kind:6} {what:7} {count / min(ours):12.1f} "
                f"{count / statistics.median(ours):8.1f} {count / min(theirs):10.1f} "
                f"{count / statistics.median(theirs):8.1f} {best:11.2f}x {median:7.2f}x"
                f" {min(per):5.2f}-{max(per):4.2f}x")
        if what == "decode":
            line += (f"  of bound {count / min(ours) / bound:4.0%} / "
                     f"{count / min(theirs) / bound:4.0%}; greedy tokens equal {r['same']} of "
                     f"{args.decode}")
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--types", default="q8_0,q4_0,q4_k")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--decode", type=int, default=32, help="greedy tokens a decode run")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--search", type=int, default=1, help="luminal's search budget")
    ap.add_argument("--gguf-dir", help="a folder with model.<type>.gguf files (made there if not)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {kind: gguf_file(kind, args, tmp) for kind in args.types.split(",")}
        bandwidth = read_bandwidth(args.threads)
        print(f"{args.threads} threads, {args.rounds} rounds, read bandwidth "
              f"{bandwidth / 1e9:.1f} GB/s; tokens/s")
        print(f"{'type':6} {'run':7} {'luminal best':>12} {'median':>8} {'llama.cpp':>10} "
              f"{'median':>8} {'speedup best':>12} {'median':>8} {'rounds':>11}")
        for kind, path in paths.items():
            report(kind, rounds(path, args), bandwidth, args)
    print("speedup: llama.cpp's time over luminal's (> 1: luminal faster); decode: the steps "
          "after a 10-token prompt; of bound: "
          "decode tok/s over (read bandwidth / the GGUF's bytes read per token), luminal / "
          "llama.cpp")


if __name__ == "__main__":
    sys.exit(main())
