"""LLM decode at real size: a Llama-3.2-1B-shaped model (vocab 128256, hidden 2048, 16 layers,
32/8 heads, intermediate 8192, tied embeddings, llama3 rope) with random bf16 weights saved by
transformers, run by luminal (after search; on the bf16 weights, cold and from the caches, with
each Linear's input rounded to bf16 as transformers' bf16 model computes, and on the weights
widened to f32) and by transformers in f32 and bf16, each in its own process so
peak RSS is its own. One table: decode tok/s over --decode tokens, time to first
token for a --prompt-token prompt, compile time cold (empty caches) and cached, peak RSS, and
decode as a fraction of the bandwidth bound (weight bytes read per token / read bandwidth
measured in the same run). Greedy tokens of every engine are checked against transformers' f32.

    python benchmarks/llm.py                      # the 1B shape
    python benchmarks/llm.py --layers 2 --hidden 512 --vocab 8192   # a quick look
    python benchmarks/llm.py --preset 3b
    python benchmarks/llm.py --preset qwen2.5-0.5b   # the Llama family's other members
    python benchmarks/llm.py --skip luminal-f32,torch-bf16   # engines left out
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bandwidth import read_bandwidth  # noqa: E402
from luminal.cli import RUN_SEARCH  # noqa: E402
from result_process import run_for_result  # noqa: E402

PRESETS = {
    # name: (model_type, vocab, hidden, layers, heads, kv heads, intermediate, config extras)
    "1b": ("llama", 128256, 2048, 16, 32, 8, 8192, {}),
    "3b": ("llama", 128256, 3072, 28, 24, 8, 8192, {}),
    "qwen2.5-0.5b": ("qwen2", 151936, 896, 24, 14, 2, 4864, {"rope_theta": 1000000.0}),
    "phi3-mini": ("phi3", 32064, 3072, 32, 32, 32, 8192, {"tie_word_embeddings": False,
                                                          "max_position_embeddings": 4096}),
    "gemma2-2b": ("gemma2", 256000, 2304, 26, 8, 4, 9216, {"head_dim": 256,
                                                           "sliding_window": 4096}),
}
LLAMA_ROPE = {"max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": {
    "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192}}


def add_model_args(ap) -> None:
    """The flags that choose the model build_model makes (shared by the LLM benchmarks)."""
    ap.add_argument("--preset", choices=sorted(PRESETS), default="1b")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--vocab", type=int)


def build_model(path: str, args) -> dict:
    """Writes the model directory (random bf16 weights, a word-level tokenizer); returns facts.
    The model is made in bf16 (torch's default dtype while it is built), never in f32: at the
    1B shape that is 2.5 GB of memory, not 7.5."""
    import torch
    import transformers

    kind, vocab, hidden, layers, heads, kv, inter, extras = PRESETS[args.preset]
    vocab = args.vocab or vocab
    hidden = args.hidden or hidden
    layers = args.layers or layers
    inter = args.intermediate or (inter if not args.hidden else 4 * hidden)
    heads = heads if hidden % heads == 0 and not args.hidden else max(1, hidden // 64)
    kv = min(kv, heads)
    kw = dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter,
              num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
              head_dim=hidden // heads, tie_word_embeddings=True, bos_token_id=None,
              eos_token_id=None, pad_token_id=None, dtype="bfloat16")
    kw.update(LLAMA_ROPE if kind == "llama" else {})
    kw.update(extras if not args.hidden else {k: v for k, v in extras.items() if k != "head_dim"})
    config = transformers.AutoConfig.for_model(kind, **kw)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.no_grad():
            model = transformers.AutoModelForCausalLM.from_config(config)
            for name, p in model.named_parameters():  # random weights of a trained model's scale
                norm = 0.0 if kind.startswith("gemma") else 1.0  # Gemma's norms scale by 1 + w
                p.normal_(0.0, 0.02) if p.dim() > 1 else p.fill_(norm if "norm" in name else 0.0)
    finally:
        torch.set_default_dtype(torch.float32)
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    model.save_pretrained(path, safe_serialization=True)
    write_tokenizer(path, vocab)
    params = sum(p.numel() for p in model.parameters())
    # Per decode token every weight is read once: a tied embedding as the LM head's matrix
    # (the embedding lookup itself reads one row more, left out); an untied one only by that
    # lookup.
    read = params if config.tie_word_embeddings else params - vocab * hidden
    return {"vocab": vocab, "hidden": hidden, "layers": layers, "heads": heads, "kv_heads": kv,
            "intermediate": inter, "params": params, "weights_read_per_token": read,
            "file_bytes": sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                              if f.endswith(".safetensors"))}


def write_tokenizer(path: str, vocab: int) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = {f"w{i}": i for i in range(vocab - 1)}
    words["[UNK]"] = vocab - 1
    tok = Tokenizer(models.WordLevel(words, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(os.path.join(path, "tokenizer.json"))


def warm(path: str) -> None:
    """Reads every weight file once so no engine pays for the first read from disk."""
    for f in os.listdir(path):
        if f.endswith(".safetensors"):
            with open(os.path.join(path, f), "rb") as fh:
                while fh.read(1 << 24):
                    pass


def prompt_ids(n: int, vocab: int) -> list:
    import numpy as np

    return [int(t) for t in np.random.default_rng(0).integers(0, vocab - 1, n)]


def run_torch(path: str, dtype_name: str, args) -> dict:
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    t0 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
    load = time.perf_counter() - t0
    vocab = model.config.vocab_size
    ids = torch.tensor([prompt_ids(args.prompt_tokens, vocab)])
    with torch.no_grad():
        model(ids, use_cache=True)  # warm-up of the prefill shape, as luminal gets
        t0 = time.perf_counter()
        model(ids, use_cache=True)
        ttft = time.perf_counter() - t0
        short = torch.tensor([prompt_ids(args.short_prompt, vocab)])
        model.generate(short, max_new_tokens=2, do_sample=False)  # warm-up
        t0 = time.perf_counter()
        out = model.generate(short, max_new_tokens=1, do_sample=False)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = model.generate(short, max_new_tokens=args.decode, do_sample=False,
                             min_new_tokens=args.decode)
        total = time.perf_counter() - t0
    tokens = out[0, short.shape[1]:].tolist()
    decode = (args.decode - 1) / max(total - first, 1e-9)
    return {"engine": f"torch {dtype_name}", "weight_bytes": 4 if dtype_name == "f32" else 2,
            "tokens": tokens, "decode_tok_s": decode,
            "ttft_s": ttft, "load_s": load}


def run_luminal(path: str, args, f32: bool = False, activations: str = "f32") -> dict:
    """luminal on the model's bf16 weights as they are stored, or (``f32``) widened to f32 at
    load (the f32-weight decode, bound by twice the bytes); ``activations`` 'bf16' rounds each
    Linear's input to bf16, as transformers' bf16 model computes (bf16 dot products)."""
    import luminal as lm
    from luminal.models import AutoModelForCausalLM, CausalLMSession

    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path, max_context=args.prompt_tokens + args.decode + 8,
                                             dtype=lm.float32 if f32 else None,
                                             activations=activations)
    rt = lm.CpuRuntime(threads=args.threads, cache_dir=args.cache_dir)
    session = CausalLMSession(model, rt, search=args.search)
    compile_s = time.perf_counter() - t0
    ttft, stats, tokens = time_session(session, args.prompt_tokens, args.short_prompt,
                                       args.decode)
    report = session.graph.last_search_report
    engine = "luminal cpu, f32 weights" if f32 else "luminal cpu"
    return {"engine": engine + (", bf16 activations" if activations == "bf16" else ""),
            "weight_bytes": 4 if f32 else 2, "tokens": tokens,
            "decode_tok_s": stats.tokens_per_second,
            "ttft_s": ttft, "compile_s": compile_s, "memory": rt.memory(),
            "search": str(report).splitlines()[0] if report else ""}


def time_session(session, prompt_tokens: int, short_prompt: int, decode: int):
    """(prefill seconds of a ``prompt_tokens`` prompt, GenerationStats of ``decode`` greedy
    tokens after a ``short_prompt``-token prompt, those tokens) of a CausalLMSession, each
    shape run once first."""
    import numpy as np

    from luminal.models.generation import GenerationStats, generate

    vocab = session.model.config.vocab_size
    long_prompt = np.array([prompt_ids(prompt_tokens, vocab)], np.int32)
    session.reset()
    session.step(long_prompt)  # warm-up of the prefill shape
    session.reset()
    t0 = time.perf_counter()
    session.step(long_prompt)
    prefill = time.perf_counter() - t0
    stats = GenerationStats()
    short = prompt_ids(short_prompt, vocab)
    list(generate(session, short, 2))  # warm-up of the decode shape
    tokens = list(generate(session, short, decode, stats=stats))
    return prefill, stats, tokens


def peak_rss() -> int:
    """This process's peak resident bytes (VmHWM: unlike ru_maxrss, not inherited across exec
    from the parent that spawned it)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(args) -> None:
    if args.engine == "build":
        out = build_model(args.model_dir, args)
        out["peak_rss_bytes"] = peak_rss()
        print("RESULT " + json.dumps(out))
        return
    warm(args.model_dir)
    if args.engine.startswith("luminal"):
        out = run_luminal(args.model_dir, args, f32=args.engine == "luminal-f32",
                          activations="bf16" if args.engine == "luminal-bf16" else "f32")
    else:
        out = run_torch(args.model_dir, args.engine.split("-")[1], args)
    out["peak_rss_bytes"] = peak_rss()
    print("RESULT " + json.dumps(out))


def spawn(engine: str, model_dir: str, args, cache_dir: str) -> dict:
    cmd = [sys.executable, __file__, "--engine", engine, "--model-dir", model_dir,
           "--cache-dir", cache_dir, "--threads", str(args.threads), "--decode", str(args.decode),
           "--prompt-tokens", str(args.prompt_tokens), "--short-prompt", str(args.short_prompt),
           "--search", str(args.search), "--preset", args.preset]
    for flag in ("layers", "hidden", "intermediate", "vocab"):
        if getattr(args, flag):
            cmd += [f"--{flag}", str(getattr(args, flag))]
    env = dict(os.environ, LUMINAL_SEARCH_CACHE=os.path.join(cache_dir, "search"))
    return run_for_result(cmd, env, engine=engine)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_model_args(ap)
    ap.add_argument("--decode", type=int, default=32, help="tokens timed per engine")
    ap.add_argument("--prompt-tokens", type=int, default=128, help="prompt of the TTFT row")
    ap.add_argument("--short-prompt", type=int, default=10, help="prompt before decode")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--search", type=int, default=RUN_SEARCH,
                    help=f"luminal's search budget (default: luminal run's, {RUN_SEARCH})")
    ap.add_argument("--skip", default="", help="engines to leave out, e.g. torch-f32")
    # internal: one engine in a child process
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        child(args)
        return

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        cache = os.path.join(tmp, "cache")
        t0 = time.perf_counter()
        facts = spawn("build", model_dir, args, cache)  # its memory is its own process's
        if "error" in facts:
            sys.exit("building the model failed")
        print(f"model: {facts['layers']} layers, hidden {facts['hidden']}, vocab {facts['vocab']},"
              f" {facts['params'] / 1e9:.2f} B params, {facts['file_bytes'] / 1e9:.2f} GB of bf16"
              f" (made in {time.perf_counter() - t0:.0f} s, peak RSS "
              f"{facts['peak_rss_bytes'] / 1e9:.1f} GB); {args.threads} threads")
        # The read bandwidth drifts on a shared machine: it is measured before and after each
        # engine, and each engine's bound uses the mean of the two around its own run.
        bandwidth = read_bandwidth(args.threads)
        rows = []
        for engine in ("luminal", "luminal-cached", "luminal-bf16", "luminal-f32", "torch-f32",
                       "torch-bf16"):
            if engine in args.skip.split(","):
                continue
            r = spawn("luminal" if engine == "luminal-cached" else engine, model_dir, args, cache)
            if engine == "luminal-cached":
                r["engine"] = "luminal cpu (caches warm)"
            after = read_bandwidth(args.threads)
            r["bandwidth"] = (bandwidth + after) / 2
            bandwidth = after
            rows.append(r)
            print(f"  {engine}: done", file=sys.stderr)
    want = next((r["tokens"] for r in rows if r.get("engine") == "torch f32"), None)
    print(f"\n{'engine':28} {'decode tok/s':>12} {'of bound':>9} {'read GB/s':>9} {'TTFT ms':>8}"
          f" {'compile s':>9} {'peak RSS GB':>11}  tokens")
    for r in rows:
        if "error" in r:
            print(f"{r['engine']:28} failed: {r['error']}")
            continue
        wbytes = facts["weights_read_per_token"] * r["weight_bytes"]
        bound = r["bandwidth"] / wbytes
        same = "" if want is None else ("= torch f32" if r["tokens"] == want else
                                         f"DIFFER ({sum(a == b for a, b in zip(r['tokens'], want))}"
                                         f"/{len(want)} equal)")
        compile_s = f"{r['compile_s']:.1f}" if "compile_s" in r else "-"
        print(f"{r['engine']:28} {r['decode_tok_s']:12.2f} {r['decode_tok_s'] / bound:8.0%} "
              f"{r['bandwidth'] / 1e9:9.1f} {r['ttft_s'] * 1e3:8.0f} {compile_s:>9} "
              f"{r['peak_rss_bytes'] / 1e9:11.2f}  {same}")
    print("\nof bound: decode tok/s over (read bandwidth / weight bytes per token), with the "
          "bytes of the weights as the engine stores them (16 or 32 bits);"
          "\nread GB/s: the faster of a large torch.sum and torch.mv (benchmarks/bandwidth.py), "
          "the mean of\nthe measurements just before and just after the engine's run")
    for r in rows:
        if r.get("search"):
            print(f"{r['engine']}: {r['search']}")
        if "memory" in r:  # CpuRuntime.memory(): what the runtime itself holds
            m = r["memory"]
            print(f"{r['engine']} holds: {m['borrowed_input_bytes'] / 1e9:.2f} GB of inputs read "
                  f"in place (16-bit weights: in their file's pages), {m['owned_input_bytes'] / 1e9:.2f} "
                  f"GB copied, arena {m['arena_bytes'] / 1e9:.2f} GB, outputs "
                  f"{m['output_bytes'] / 1e9:.3f} GB (weight file "
                  f"{facts['file_bytes'] / 1e9:.2f} GB)")
    by_name = {r["engine"]: r for r in rows if "error" not in r}
    ours = by_name.get("luminal cpu (caches warm)")
    if ours and "torch bf16" in by_name:
        print(f"luminal / torch bf16 decode: "
              f"{ours['decode_tok_s'] / by_name['torch bf16']['decode_tok_s']:.2f}x")
    if ours and "torch f32" in by_name:
        print(f"TTFT luminal / torch f32: {ours['ttft_s'] / by_name['torch f32']['ttft_s']:.2f}x")
    for name in ("luminal cpu (caches warm)", "luminal cpu, bf16 activations"):
        if name in by_name and "torch bf16" in by_name:  # > 1: luminal's first token sooner
            print(f"TTFT speedup over torch bf16, {name}: "
                  f"{by_name['torch bf16']['ttft_s'] / by_name[name]['ttft_s']:.2f}x")


if __name__ == "__main__":
    main()
