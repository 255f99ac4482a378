"""Quantized LLM decode: the Llama-3.2-1B-shaped random model of llm.py written to GGUF by
`luminal quantize` in each --types type, run by luminal from that file (its weights kept
quantized) and, where llama-cpp-python is installed, by llama.cpp on the same file, each in its
own process, luminal once per --activations setting (q8_0: each quantized matrix multiplies the
Q8_0 round trip of its input, as llama.cpp, in int8 on the CPU; f32: the input as is). One row
per (engine, type): decode tok/s over --decode tokens, prompt throughput
(a --prompt-tokens prefill), decode as a fraction of the bandwidth bound (the file's
quantized bytes read per token / read bandwidth measured around the run), and luminal's
accuracy against transformers' f32 model on the same (unquantized) weights: the mean KL
divergence of the next-token distributions and the top-1 agreement over --accuracy-positions
positions of one prompt. This is the `--gguf` table of llm.py (issue #16), kept beside it.

    python benchmarks/llm_gguf.py                                  # the 1B shape
    python benchmarks/llm_gguf.py --layers 2 --hidden 512 --vocab 8192 --types q8_0,q4_k
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bandwidth import read_bandwidth  # noqa: E402
from llm import add_model_args, prompt_ids, time_session  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
add_model_args(ap)
ap.add_argument("--types", default="q8_0,q4_0,q4_k", help="comma-separated luminal quantize types")
ap.add_argument("--decode", type=int, default=32, help="tokens timed per engine")
ap.add_argument("--prompt-tokens", type=int, default=128)
ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
ap.add_argument("--search", type=int, default=1, help="luminal's search budget")
ap.add_argument("--activations", default="q8_0",
                help="comma-separated luminal activation settings (from_gguf's activations)")
ap.add_argument("--accuracy-positions", type=int, default=128,
                help="positions compared with transformers f32 (0: none)")
ap.add_argument("--engine", help=argparse.SUPPRESS)
ap.add_argument("--path", help=argparse.SUPPRESS)


def bytes_per_token(path: str) -> int:
    """Bytes of the weights a decode step reads: every tensor once (a tied embedding as the
    LM head's matrix), but an untied embedding table, of which it reads one row."""
    from luminal.weights import load_gguf

    f = load_gguf(path)
    tied = "output.weight" not in f
    total = 0
    for name in f:
        if name == "token_embd.weight" and not tied:
            continue
        total += f.storage(name)[0].nbytes
    return total


def run_luminal(path: str, args) -> dict:
    import luminal as lm
    from luminal.models import CausalLMSession
    from luminal.models.llama import LlamaForCausalLM

    t0 = time.perf_counter()
    model = LlamaForCausalLM.from_gguf(path, max_context=args.prompt_tokens + args.decode + 8,
                                       activations=args.activations)
    session = CausalLMSession(model, lm.CpuRuntime(threads=args.threads), search=args.search)
    compile_s = time.perf_counter() - t0
    prefill, stats, tokens = time_session(session, args.prompt_tokens, 10, args.decode)
    out = {"decode_tok_s": stats.tokens_per_second, "prompt_tok_s": args.prompt_tokens / prefill,
           "compile_s": compile_s, "tokens": tokens}
    reference = os.path.join(os.path.dirname(path), "reference_logprobs.npy")
    if args.accuracy_positions and os.path.exists(reference):
        out.update(accuracy(session, np.load(reference)))
    return out


def accuracy(session, want) -> dict:
    """KL(f32 || ours) of each position's next-token distribution, averaged, and the share of
    positions whose argmax agrees, stepping the prompt of ``want``'s positions one token at a
    time (the decode program)."""
    ids = prompt_ids(want.shape[0], session.model.config.vocab_size)
    session.reset()
    kl, agree = 0.0, 0
    for i, token in enumerate(ids):
        logits = session.step(np.array([[token]], np.int32))[0, -1].astype(np.float64)
        got = logits - logits.max()
        got -= np.log(np.exp(got).sum())
        p = np.exp(want[i].astype(np.float64))
        kl += float((p * (want[i] - got)).sum())
        agree += int(got.argmax() == want[i].argmax())
    return {"kl": kl / len(ids), "top1": agree / len(ids)}


def reference_logprobs(model_dir: str, positions: int) -> None:
    """transformers' f32 log-probabilities over the accuracy prompt, beside the model."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = torch.tensor([prompt_ids(positions, model.config.vocab_size)])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].double(), -1).float().numpy()
    np.save(os.path.join(os.path.dirname(model_dir), "reference_logprobs.npy"), logprobs)


class LlamaCpp:
    """llama.cpp (llama-cpp-python, n_batch 512) on a GGUF file."""

    def __init__(self, path: str, args):
        import llama_cpp  # a benchmark-only dependency

        self.llm = llama_cpp.Llama(path, n_ctx=args.prompt_tokens + args.decode + 16,
                                   n_batch=512, n_threads=args.threads,
                                   n_threads_batch=args.threads, verbose=False)
        self.vocab = self.llm.n_vocab()

    def prefill(self, ids) -> None:
        self.llm.reset()
        self.llm.eval(ids)

    def decode(self, ids, n: int):
        """(the n greedy tokens after the one the prefill of `ids` gives, the seconds of the n
        decode steps)."""
        self.prefill(ids)
        tokens = [int(self.llm.sample(temp=0.0))]  # the prefill's
        t0 = time.perf_counter()
        for _ in range(n):
            self.llm.eval([tokens[-1]])
            tokens.append(int(self.llm.sample(temp=0.0)))
        return tokens[1:], time.perf_counter() - t0


def run_llama_cpp(path: str, args) -> dict:
    engine = LlamaCpp(path, args)
    prompt = prompt_ids(args.prompt_tokens, engine.vocab)
    engine.prefill(prompt)  # warm-up
    t0 = time.perf_counter()
    engine.prefill(prompt)
    prefill = time.perf_counter() - t0
    tokens, seconds = engine.decode(prompt_ids(10, engine.vocab), args.decode)
    return {"decode_tok_s": args.decode / seconds, "prompt_tok_s": args.prompt_tokens / prefill,
            "tokens": tokens}


def model_flags(args) -> list:
    """The model-shape flags of `args` that were given, for a child process's command."""
    cmd = []
    for flag in ("layers", "hidden", "intermediate", "vocab"):
        if getattr(args, flag):
            cmd += [f"--{flag}", str(getattr(args, flag))]
    return cmd


def child(args) -> None:
    if args.engine == "build":
        from llm import build_model

        build_model(args.path, args)
        if args.accuracy_positions:
            reference_logprobs(args.path, args.accuracy_positions)
        return
    if args.engine.startswith("quantize:"):
        from luminal.models.llama_to_gguf import write_llama_gguf

        model_dir, kind = args.path, args.engine.split(":")[1]
        out = os.path.join(os.path.dirname(model_dir), f"model.{kind}.gguf")
        t0 = time.perf_counter()
        write_llama_gguf(model_dir, out, kind)
        print("RESULT " + json.dumps({"path": out, "seconds": time.perf_counter() - t0,
                                      "bytes_per_token": bytes_per_token(out)}))
        return
    run = run_luminal if args.engine.startswith("luminal") else run_llama_cpp
    print("RESULT " + json.dumps(run(args.path, args)))


def spawn(engine: str, path: str, args, cache_dir: str) -> dict:
    """Runs `engine` ("luminal q8_0": luminal with those activations) in a child process."""
    engine, _, activations = engine.partition(" ")
    cmd = [sys.executable, __file__, "--engine", engine, "--path", path, "--threads",
           str(args.threads), "--decode", str(args.decode), "--prompt-tokens",
           str(args.prompt_tokens), "--search", str(args.search), "--preset", args.preset,
           "--accuracy-positions", str(args.accuracy_positions),
           "--activations", activations or args.activations] + model_flags(args)
    env = dict(os.environ, LUMINAL_SEARCH_CACHE=cache_dir)  # cold searches, this run's own
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    if done.returncode == 0:
        return {}
    sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
    return {"error": f"exit {done.returncode}"}


def main() -> None:
    args = ap.parse_args()
    if args.engine:
        child(args)
        return
    try:
        import llama_cpp  # noqa: F401

        engines = ["llama.cpp"]
    except ImportError:
        engines = []
        print("llama-cpp-python is not installed: luminal rows only", file=sys.stderr)
    engines = [f"luminal {a}" for a in args.activations.split(",")] + engines
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        cache = os.path.join(tmp, "search-cache")
        if "error" in spawn("build", model_dir, args, cache):
            sys.exit("building the model failed")
        bandwidth = read_bandwidth(args.threads)
        for kind in args.types.split(","):
            q = spawn(f"quantize:{kind}", model_dir, args, cache)
            if "error" in q:
                rows.append({"engine": "luminal quantize", "type": kind, "error": q["error"]})
                continue
            for engine in engines:
                r = spawn(engine, q["path"], args, cache)
                after = read_bandwidth(args.threads)
                r.update(engine=engine, type=kind, bandwidth=(bandwidth + after) / 2,
                         bytes_per_token=q["bytes_per_token"], quantize_s=q["seconds"])
                bandwidth = after
                rows.append(r)
                print(f"  {engine} {kind}: done", file=sys.stderr)
    print(f"\n{'engine':13} {'type':6} {'decode tok/s':>12} {'of bound':>9} {'prompt tok/s':>12} "
          f"{'MB/token':>9} {'read GB/s':>9} {'compile s':>9} {'KL':>8} {'top-1':>6}")
    for r in rows:
        if "error" in r:
            print(f"{r['engine']:13} {r['type']:6} failed: {r['error']}")
            continue
        bound = r["bandwidth"] / r["bytes_per_token"]
        compile_s = f"{r['compile_s']:.1f}" if "compile_s" in r else "-"
        kl = f"{r['kl']:.2e}" if "kl" in r else "-"
        top1 = f"{r['top1']:.3f}" if "top1" in r else "-"
        print(f"{r['engine']:13} {r['type']:6} {r['decode_tok_s']:12.2f} "
              f"{r['decode_tok_s'] / bound:8.0%} {r['prompt_tok_s']:12.1f} "
              f"{r['bytes_per_token'] / 1e6:9.1f} {r['bandwidth'] / 1e9:9.1f} {compile_s:>9} "
              f"{kl:>8} {top1:>6}")
    by = {(r["engine"], r["type"]): r for r in rows if "error" not in r}
    for kind in args.types.split(","):
        for a in args.activations.split(","):
            ours, theirs = by.get((f"luminal {a}", kind)), by.get(("llama.cpp", kind))
            if ours and theirs:
                print(f"{kind}: luminal ({a} activations) / llama.cpp decode "
                      f"{ours['decode_tok_s'] / theirs['decode_tok_s']:.2f}x, prompt "
                      f"{ours['prompt_tok_s'] / theirs['prompt_tok_s']:.2f}x")
    print("\nof bound: decode tok/s over (read bandwidth / the GGUF's bytes read per token); read"
          " GB/s: benchmarks/bandwidth.py, the mean of the measurements around the run; KL and"
          " top-1: luminal's next-token distributions against transformers f32 on the"
          " unquantized weights (random weights: flat distributions, so top-1 is fragile);"
          " luminal q8_0 / f32: its activations setting")


if __name__ == "__main__":
    main()
