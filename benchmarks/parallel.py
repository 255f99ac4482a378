"""Pipeline and tensor parallelism against one process, side by side in one run: the model of
benchmarks/llm.py (random bf16 weights; the 1B shape by default) decoded by one process on
every core, then by two processes under torchrun (Gloo) split by layers (--pp 2) and by heads
and features (--tp 2), each rank on its share of the cores. Prints per engine: decode tokens/s
and its share of the bandwidth bound (the weights' bytes over the read bandwidth, measured in
the run), a 512-token prefill (the pipeline also in one micro-batch), peak RSS per rank, and
whether the greedy tokens equal one process's. Not a timed test.

    python benchmarks/parallel.py                  # the 1B shape
    python benchmarks/parallel.py --layers 4 --vocab 32000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bandwidth import read_bandwidth  # noqa: E402
from llm import add_model_args, build_model, peak_rss, time_session, warm  # noqa: E402


def role(args) -> None:
    """One engine's measurements (one process, or one rank under torchrun) to args.out."""
    import luminal as lm
    from luminal.models import (CausalLMSession, LlamaForCausalLM, PipelineSession,
                                TensorParallelSession)

    model = LlamaForCausalLM.from_pretrained(args.model_dir, max_context=600)
    result, rank = {}, 0
    if args.role == "single":
        session = CausalLMSession(model, lm.CpuRuntime(threads=args.threads))
    else:
        from luminal import distributed

        comm = distributed.init()
        rank = comm.rank
        threads = max(1, args.threads // comm.world_size)
        if args.role == "pp":
            session = PipelineSession(model, comm, lm.CpuRuntime(threads=threads))
            session.micro_batch = args.prompt  # the prompt in one micro-batch
            result["prefill_one_micro_batch_s"] = time_session(session, args.prompt, 10, 2)[0]
            session.micro_batch = 128
        else:
            session = TensorParallelSession(model, comm, lambda: lm.CpuRuntime(threads=threads))
    prefill, stats, tokens = time_session(session, args.prompt, 10, args.decode)
    result.update(prefill_s=prefill, decode_tps=stats.tokens_per_second, tokens=tokens,
                  peak_rss=peak_rss())
    with open(f"{args.out}.{rank}.json", "w") as f:
        json.dump(result, f)
    if args.role != "single":
        comm.close()


def run(role_name: str, args, model_dir: str, out: str, env: dict) -> list:
    cmd = [os.path.abspath(__file__), "--role", role_name, "--model-dir", model_dir,
           "--out", out, "--threads", str(args.threads), "--prompt", str(args.prompt),
           "--decode", str(args.decode)]
    ranks = 1
    if role_name == "single":
        cmd = [sys.executable, *cmd]
    else:
        ranks = 2
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node=2", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit(done.stdout[-3000:] + done.stderr[-3000:])
    results = []
    for r in range(ranks):
        with open(f"{out}.{r}.json") as f:
            results.append(json.load(f))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_model_args(ap)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--prompt", type=int, default=512, help="prefill tokens")
    ap.add_argument("--decode", type=int, default=32, help="greedy tokens timed")
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role:
        role(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        facts = build_model(model_dir, args)
        warm(model_dir)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), OMP_NUM_THREADS="1",
                   LUMINAL_SEARCH_CACHE=os.path.join(tmp, "cache", "search"))
        bandwidth = read_bandwidth(args.threads)
        wbytes = 2 * facts["weights_read_per_token"]
        print(f"model: {facts['layers']} layers, hidden {facts['hidden']}, "
              f"{facts['params'] / 1e9:.2f} B params (bf16); read bandwidth "
              f"{bandwidth / 1e9:.1f} GB/s; {args.threads} threads in all")
        single = run("single", args, model_dir, os.path.join(tmp, "single"), env)[0]
        rows = [("one process", [single])]
        for name in ("pp", "tp"):
            rows.append((f"--{name} 2", run(name, args, model_dir, os.path.join(tmp, name), env)))
        print(f"{'engine':12} {'decode tok/s':>12} {'of bound':>8} {'prefill s':>9} "
              f"{'peak RSS GB per rank':>22}  greedy tokens")
        for label, ranks in rows:
            r0 = ranks[0]
            same = all(r["tokens"] == single["tokens"] for r in ranks)
            rss = " / ".join(f"{r['peak_rss'] / 1e9:.2f}" for r in ranks)
            prefill = f"{r0['prefill_s']:.2f}"
            if "prefill_one_micro_batch_s" in r0:
                prefill += f" ({r0['prefill_one_micro_batch_s']:.2f} in one micro-batch)"
            of_bound = r0["decode_tps"] * wbytes / bandwidth
            print(f"{label:12} {r0['decode_tps']:12.2f} {of_bound:8.0%} {prefill:>9} {rss:>22}  "
                  f"{'equal to one process' if same else 'DIFFER'}")
        print(f"\nof bound: decode tok/s over (read bandwidth / {wbytes / 1e9:.2f} GB of weights a "
              f"token); prefill of a {args.prompt}-token prompt; the ranks run "
              f"{max(1, args.threads // 2)} thread(s) each")


if __name__ == "__main__":
    main()
