"""Digests of the generated code of every conformance graph, for behaviour-preserving refactors:
run it before and after a change and compare (``--compare OLD.json``). Not a test: it renders
C (CpuRuntime) and CUDA (sm_90, sm_80) for each table row in each variant, for every program
the runtime's rules put in the search space (saturated by iteration and node limits only, so
the space does not depend on timing) and, for CUDA, under each program-wide choice.

    python tests/render_digest.py --out /tmp/before.json
    python tests/render_digest.py --out /tmp/after.json --compare /tmp/before.json
    python tests/render_digest.py --out /tmp/after.json --compare /tmp/before.json --sets

``--sets`` compares, per row, runtime (c, cuda arch) and program-wide choice, the sorted list of
digests over the programs: the same renders in another order count as equal (a change of the
cost model that only reorders the extracted programs).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "conformance"))

import luminal as lm  # noqa: E402
import luminal.cuda  # noqa: E402,F401
from luminal import _core  # noqa: E402
from harness import _inputs, _make_input, _symbolic_dims  # noqa: E402

CUDA_CHOICES = [{}, {"cuda_reduce": 1}, {"cuda_reduce": 2}, {"cuda_reduce": 3},
                {"cuda_matmul": 1}, {"cuda_matmul": 2}, {"cuda_vector": 1}, {"cuda_block": 64}]
PROGRAMS = 6  # programs extracted per search space
CPU_RUNTIME = lm.CpuRuntime()._rt  # its rules and its KernelCost shape the CPU spaces
CPU_RULES = CPU_RUNTIME.rewrite_rules()


def tables():
    folder = os.path.join(HERE, "conformance")
    for f in sorted(os.listdir(folder)):
        if f.startswith("test_") and f.endswith(".py") and f != "test_coverage.py":
            yield f[:-3], importlib.import_module(f[:-3])


def build(case, variant):
    """The case's graph in the variant, as the harness builds it, or None when skipped."""
    if variant not in case.variants:
        return None
    specs = _inputs(case)
    sym = _symbolic_dims(specs)
    if variant == "symbolic" and sym is None:
        return None
    cx = lm.Graph()
    tensors = []
    for spec, is_sym in zip(specs, sym[1] if sym else [False] * len(specs)):
        _, view, _ = _make_input(cx, spec, variant, is_sym)
        tensors.append(view)
    if variant == "symbolic":
        cx.set_dim("s", sym[0])
    result = case.fn(cx, *tensors) if case.takes_graph else case.fn(*tensors)
    for r in result if isinstance(result, (tuple, list)) else (result,):
        r.output()
    return cx


def limits():
    lim = _core.RunnerLimits()
    lim.iterations = 12
    lim.nodes = 20000
    lim.seconds = 1e9
    return lim


def programs(cx, rules, runtime=None):
    dims = {s: int(cx.dyn_map.get(s, 16)) for s in cx._g.symbols()}
    space = _core.SearchSpace(cx._g, rules, limits(), runtime)
    return [_core.identity_program(cx._g)] + list(space.extract(PROGRAMS, dims))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def render_all(cx, key, out):
    def put(name, render):
        try:
            out[f"{key} {name}"] = digest(render())
        except lm.LuminalError as e:
            out[f"{key} {name}"] = f"error {type(e).__name__}: {e}"[:200]

    for k, p in enumerate(programs(cx, CPU_RULES, CPU_RUNTIME)):
        put(f"c p{k}", lambda: _core.cpu_render(p.graph, _core.TuningChoice()))
    for arch in ("sm_90", "sm_80"):
        for k, p in enumerate(programs(cx, lm.cuda.rewrite_rules(arch))):
            for choice in CUDA_CHOICES:
                name = ",".join(f"{a}={b}" for a, b in sorted(choice.items())) or "default"
                put(f"cuda {arch} p{k} {name}",
                    lambda: _core.cuda_render(p.graph, arch, lm.cuda._tuning(choice),
                                              _core.TuningChoice()))


# "<row> c p3" and "<row> cuda sm_90 p3 <choice>": the program index is the p<k>.
KEY = re.compile(r"^(?P<row>.*) (?P<runtime>c|cuda sm_\d+) p\d+(?P<choice> \S+)?$")


def by_set(digests: dict) -> dict:
    """{row, runtime and choice: sorted digests over the programs}; other keys as they are."""
    out = {}
    for key, value in digests.items():
        m = KEY.match(key)
        group = f"{m['row']} {m['runtime']}{m['choice'] or ''}" if m else key
        out.setdefault(group, []).append(value)
    return {group: sorted(values) for group, values in out.items()}


def compare(old: dict, new: dict, sets: bool) -> int:
    differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    for k in differ[:40]:
        print(f"differs: {k}: {old.get(k)} -> {new.get(k)}")
    print(f"{len(new)} digests, {len(differ)} differ")
    if not sets:
        return len(differ)
    kinds = sorted({KEY.match(k)["runtime"] if KEY.match(k) else "other" for k in differ})
    print(f"differing keys by runtime: {', '.join(kinds) or 'none'}")
    old_sets, new_sets = by_set(old), by_set(new)
    set_differ = sorted(g for g in set(old_sets) | set(new_sets)
                        if old_sets.get(g) != new_sets.get(g))
    for g in set_differ[:40]:
        print(f"set differs: {g}")
    print(f"{len(new_sets)} sets, {len(set_differ)} differ")
    return len(set_differ)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare")
    ap.add_argument("--sets", action="store_true",
                    help="with --compare: equal when only the order of the programs changed")
    ap.add_argument("--only", help="substring of the table name")
    args = ap.parse_args()
    out = {}
    for name, module in tables():
        if args.only and args.only not in name:
            continue
        for case in getattr(module, "CASES", []):
            for variant in ("contig", "noncontig", "symbolic"):
                try:
                    cx = build(case, variant)
                except Exception as e:  # a row whose graph fails to build is a row too
                    out[f"{name} {case.id} {variant}"] = f"build error {type(e).__name__}"
                    continue
                if cx is not None:
                    render_all(cx, f"{name} {case.id} {variant}", out)
        print(f"{name}: {len(out)} digests", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    if args.compare:
        with open(args.compare) as f:
            old = json.load(f)
        sys.exit(1 if compare(old, out, args.sets) else 0)
    print(f"{len(out)} digests")


if __name__ == "__main__":
    main()
