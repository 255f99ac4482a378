"""Compile time of repeated layers: where a Llama's search goes, cold (empty caches) and from
the caches. Builds the model of benchmarks/llm.py (random bf16 weights; the 1B shape by
default), then in two fresh processes sharing one cache directory builds a CausalLMSession on
CpuRuntime and prints the seconds of each search step (SearchReport.phases), the process's CPU
seconds (its own and its compilers'), the kernel objects compiled and the candidates. Not a
timed test. Targets (issue 35): the 1B shape in <= 5 s cold and <= 0.5 s from the caches.

    python benchmarks/compile_time.py                            # the 1B shape
    python benchmarks/compile_time.py --layers 4 --vocab 32000   # a quick look
    python benchmarks/compile_time.py --activations bf16         # searched at a prefill
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from llm import add_model_args, build_model  # noqa: E402


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def session(args) -> dict:
    import luminal as lm
    from luminal.models import AutoModelForCausalLM, CausalLMSession

    t0 = time.perf_counter()
    c0 = cpu_seconds()
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, max_context=args.context,
                                                 activations=args.activations)
    cpu_cache = os.path.join(args.cache_dir, "cpu")
    rt = lm.CpuRuntime(threads=args.threads, cache_dir=cpu_cache)
    before = objects(cpu_cache)
    s = CausalLMSession(model, rt, search=args.search)
    report = s.graph.last_search_report
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": cpu_seconds() - c0,
            "phases": report.phases, "check_seconds": report.check_seconds,
            "objects_compiled": objects(cpu_cache) - before,
            "summary": str(report).splitlines()[0],
            "candidates": [f"{c.status} {c.choice}" for c in report.candidates]}


def objects(cache_dir: str) -> int:
    """Kernel objects in a CpuRuntime's compile cache."""
    if not os.path.isdir(cache_dir):
        return 0
    return sum(name.endswith(".o") for name in os.listdir(cache_dir))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_model_args(ap)
    ap.add_argument("--search", type=int, default=4, help="search budget (luminal run's: 4)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--context", type=int, default=200, help="the model's max_context")
    ap.add_argument("--activations", default="f32", choices=["f32", "bf16"],
                    help="from_pretrained's (bf16: a session searched at a prefill)")
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.model_dir:
        print("RESULT " + json.dumps(session(args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        args.model_dir = os.path.join(tmp, "model")
        facts = build_model(args.model_dir, args)
        print(f"model: {facts['layers']} layers, hidden {facts['hidden']}, vocab {facts['vocab']}"
              f", {facts['params'] / 1e9:.2f} B params; search budget {args.search}")
        cmd = [sys.executable, __file__, "--model-dir", args.model_dir, "--cache-dir",
               os.path.join(tmp, "cache"), "--search", str(args.search), "--threads",
               str(args.threads), "--context", str(args.context), "--activations",
               args.activations]
        env = dict(os.environ, LUMINAL_SEARCH_CACHE=os.path.join(tmp, "cache", "search"))
        for label in ("cold", "cached"):
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                sys.exit(done.stdout[-3000:] + done.stderr[-3000:])
            r = json.loads(line[7:])
            phases = ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items())
            print(f"{label}: session {r['seconds']:.2f} s ({r['cpu_seconds']:.1f} CPU s), "
                  f"{r['summary']}")
            print(f"  seconds: {phases}")
            checks = r["phases"].get("check", 0.0) + r["phases"].get("reference run", 0.0) + \
                r["phases"].get("recheck", 0.0)
            by_set = ", ".join(f"{k} {v:.2f}" for k, v in r["check_seconds"].items())
            print(f"  the check: {checks:.2f} s, {checks / r['seconds']:.0%} of the session"
                  + (f" (by set: {by_set})" if by_set else ""))
            print(f"  kernel objects compiled: {r['objects_compiled']}")
            for c in r["candidates"]:
                print(f"  {c}")


if __name__ == "__main__":
    main()
