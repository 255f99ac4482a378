"""Search: the driver behind ``Graph.build_search_space`` and ``Graph.search``.

The C++ core (csrc/egraph) saturates an e-graph of the graph with the generic rules and the
runtime's rules and extracts distinct programs best-first by a cost model. Here each candidate
(program x tuning choice) is compiled on the runtime, checked against the reference interpreter
(NativeRuntime on the graph as written; for graphs too big for the interpreter, the runtime
itself on the graph as written, see AUTO_NATIVE_WORK) on random inputs, and timed (warm-up,
repeats, median); the runtime comes back loaded with the fastest. A candidate that disagrees is dropped
and reported as a wrong rule. Budget 1 takes the cost model's pick without timing (still
checked, unless it is the graph as written on NativeRuntime).

Symbolic dims are bound, for costing, checking and timing, to their value in ``cx.dyn_map``
or else to DEFAULT_DIM. Candidates, their order and the check data are deterministic for a
seed; which candidate wins can depend on timing noise between near-equal candidates.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import _core
from . import dtype as dt
from . import search_cache
from .errors import LuminalError

DEFAULT_DIM = 16
# reference="auto" checks against NativeRuntime up to this many elements touched per run (a few
# seconds of the interpreter); bigger graphs are checked against the runtime itself running the
# graph as written, which still catches every wrong rule (the runtime's own tests answer for it).
AUTO_NATIVE_WORK = 2e7
SLOW_RUN = 0.25  # seconds: a candidate whose checking run took longer is timed by that run
# Checking tolerances per output dtype: |got - want| <= atol * scale + rtol * |want|, where
# scale = max(1, max |want|). Loose enough for reassociated float sums, tight enough for bugs.
CHECK_TOLERANCE = {
    dt.float32: (1e-3, 1e-4),
    dt.float16: (2e-2, 1e-2),
    dt.bfloat16: (6e-2, 5e-2),
}


@dataclass
class SearchLimits:
    """Limits of the saturation that builds the search space (csrc/egraph/runner.h)."""
    iterations: int = 12
    nodes: int = 20000
    seconds: float = 2.0

    def core(self):
        limits = _core.RunnerLimits()
        limits.iterations = self.iterations
        limits.nodes = self.nodes
        limits.seconds = self.seconds
        return limits


@dataclass
class CandidateResult:
    rank: int                 # position in the cost model's order of programs
    choice: str               # the tuning choice
    cost: float               # the cost model's estimate
    # "ok", "untimed", "wrong" (disagrees with the reference), "failed", "skipped" (time limit)
    status: str = "untimed"
    seconds: float | None = None  # median execute time
    detail: str = ""


@dataclass
class SearchReport:
    runtime: str
    budget: int
    cache_hit: bool = False
    cache_path: str | None = None
    saturation: str = ""      # the runner's report, when the e-graph was built
    reference: str = ""       # what candidates were checked against
    candidates: list = field(default_factory=list)
    winner: int | None = None  # index into candidates
    winner_program: str = ""   # program text of the winner
    wrong_rules: list = field(default_factory=list)
    seconds: float = 0.0
    # The winner's kernels, slowest first, when the runtime times kernels one by one:
    # (seconds, what the kernel computes: op, shape and schedule).
    winner_kernels: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"search on {self.runtime}, budget {self.budget}: "
                 f"{'cache hit' if self.cache_hit else f'{len(self.candidates)} candidates'}"
                 f" in {self.seconds:.3f} s"]
        for i, c in enumerate(self.candidates):
            t = f"{c.seconds * 1e3:.3f} ms" if c.seconds is not None else "-"
            mark = "*" if i == self.winner else " "
            lines.append(f" {mark} program {c.rank} [{c.choice}] cost {c.cost:.4g}: {c.status} "
                         f"{t} {c.detail}".rstrip())
        for w in self.wrong_rules:
            lines.append(f"   wrong: {w}")
        if self.reference:
            lines.append(f"   checked against: {self.reference}")
        if self.saturation:
            lines.append("   " + self.saturation.splitlines()[0])
        if self.winner_kernels:
            total = sum(sec for sec, _ in self.winner_kernels)
            lines.append(f"   winner's kernels ({len(self.winner_kernels)}, {total * 1e3:.3f} ms "
                         f"in one run), slowest first:")
            for sec, what in self.winner_kernels[:8]:
                lines.append(f"     {sec * 1e3:9.3f} ms  {what}")
        return "\n".join(lines)


class SpaceSpec:
    """What build_search_space records: the runtime class and the saturation limits. The
    e-graph itself is built by the first search that misses the cache."""

    def __init__(self, runtime_type, limits: SearchLimits):
        self.runtime_type = runtime_type
        self.limits = limits
        self.core = None
        self.rules = None  # the runtime rules the core space was built with

    def build(self, graph, rules: str, runtime=None):
        if self.core is None or self.rules != rules:
            self.core = _core.SearchSpace(graph._g, rules, self.limits.core(), runtime)
            self.rules = rules
        return self.core


def representative_dims(graph) -> dict:
    return {s: int(graph.dyn_map.get(s, DEFAULT_DIM)) for s in graph.symbols()}


def _choice(params) -> _core.TuningChoice:
    c = _core.TuningChoice()
    c.params = [(str(n), int(v)) for n, v in params]
    return c


def _random_inputs(g, dims: dict, seed: int) -> list:
    """One storage array per input of g, by position, deterministic for the seed."""
    from .runtime import _to_storage

    rng = np.random.default_rng(seed)
    out = []
    for node in g.inputs():
        shape = [d.eval(dims) if not d.is_const() else d.as_const() for d in g.node_shape(node)]
        dtype = g.node_dtype(node)
        if dt.is_float(dtype):
            values = rng.uniform(-2.0, 2.0, size=shape)
        elif dtype == dt.bool_:
            values = rng.integers(0, 2, size=shape)
        else:
            values = rng.integers(0, 4, size=shape)
        out.append((dtype, _to_storage(np.asarray(values).reshape(-1), dtype)))
    return out


def _run(core_rt, input_ids, output_ids, inputs, dims) -> list:
    for node, (dtype, data) in zip(input_ids, inputs):
        core_rt.set_data(node, data, dtype)
    core_rt.execute(dims)
    return [np.asarray(core_rt.get(o)) for o in output_ids]


def _disagreement(got: list, want: list, dtypes: list) -> str:
    from .runtime import _from_storage

    for i, (a, b, dtype) in enumerate(zip(got, want, dtypes)):
        a = _from_storage(a, dtype).astype(np.float64).reshape(-1)
        b = _from_storage(b, dtype).astype(np.float64).reshape(-1)
        if a.shape != b.shape:
            return f"output {i}: {a.size} elements, expected {b.size}"
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if not np.array_equal(nan_a, nan_b):
            return f"output {i}: NaN where the reference has none (or the reverse)"
        a, b = a[~nan_a], b[~nan_b]
        inf = np.isinf(b) | np.isinf(a)
        if not np.array_equal(a[inf], b[inf]):
            return f"output {i}: infinities differ"
        a, b = a[~inf], b[~inf]
        if b.size == 0:
            continue
        rtol, atol = CHECK_TOLERANCE.get(dtype, (0.0, 0.0))
        scale = max(1.0, float(np.max(np.abs(b))))
        err = np.abs(a - b)
        bad = err > atol * scale + rtol * np.abs(b)
        if np.any(bad):
            k = int(np.argmax(bad))
            return f"output {i}: element {k} is {a[k]!r}, expected {b[k]!r}"
    return ""


class _Progress:
    """A one-line progress bar on stderr, shown when asked or once a search runs > 1 s."""

    def __init__(self, mode, total: int):
        self.mode = mode
        self.total = total
        self.start = time.perf_counter()
        self.shown = False

    def update(self, done: int, best: float | None):
        if self.mode is False:
            return
        if self.mode is None and time.perf_counter() - self.start < 1.0 and self.total < 16:
            return
        width = 24
        fill = int(width * done / max(self.total, 1))
        best_text = f", best {best * 1e3:.3f} ms" if best is not None else ""
        sys.stderr.write(f"\rluminal search [{'#' * fill}{'.' * (width - fill)}] "
                         f"{done}/{self.total}{best_text}")
        sys.stderr.flush()
        self.shown = True

    def close(self):
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _schedule_words(schedule) -> str:
    """A schedule for people: "tile_m=4 tile_n=16"."""
    return " ".join(f"{name}={value}" for name, value in schedule)


def _label(program, choice) -> str:
    """What sets a candidate apart: the schedules its runtime's rules attached (how many nodes
    carry each) and the runtime's program-wide tuning choice."""
    counts: dict = {}
    for node in program.graph.topo_order():
        sched = program.graph.node_schedule(node)
        if sched:
            text = _schedule_words(sched)
            counts[text] = counts.get(text, 0) + 1
    parts = [f"{n}x {text}" if n > 1 else text for text, n in sorted(counts.items())]
    if choice.params:
        parts.append(str(choice))
    return "; ".join(parts) or "default"


def _kernel_desc(graph, node) -> str:
    """What a kernel computes: its root node's op, shape and schedule."""
    shape = "(" + ", ".join(str(d) for d in graph.node_shape(node)) + ")"
    sched = _schedule_words(graph.node_schedule(node))
    return f"{graph.node_op(node).name} {shape} {sched}".rstrip()


def _best_time(results: list):
    times = [r.seconds for r in results if r.status == "ok" and r.seconds is not None]
    return min(times) if times else None


def _combine(programs: list, kernel_times: list) -> dict:
    """Per e-class, the schedule whose kernel ran fastest in any timed candidate: {class:
    schedule text}, for the classes where the candidates tried more than one schedule."""
    seen: dict = {}  # class -> {schedule text: fastest seconds}
    for p, times in kernel_times:
        graph, node_class = programs[p].graph, programs[p].node_class
        for root, seconds in times:
            cls = node_class[root] if 0 <= root < len(node_class) else -1
            if cls < 0:
                continue
            # The core's own spelling: extract_choosing matches schedules by this text.
            text = _core.schedule_to_string(graph.node_schedule(root))
            best = seen.setdefault(cls, {})
            best[text] = min(seconds, best.get(text, seconds))
    return {cls: min(opts, key=lambda t: (opts[t], t))
            for cls, opts in sorted(seen.items()) if len(opts) > 1}


def _order(programs: list, choices: list, budget: int) -> list:
    """(program index, choice) pairs, best programs and first choices first, diagonal by
    program rank + choice index, at most ``budget`` of them."""
    pairs = []
    for p, cs in enumerate(choices):
        for c, choice in enumerate(cs):
            pairs.append((p + c, p, c, choice))
    pairs.sort(key=lambda t: (t[0], t[1]))
    return [(p, choice) for _, p, _, choice in pairs[:budget]]


def _time(core_rt, dims, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        core_rt.execute(dims)
    times = []
    spent = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        core_rt.execute(dims)
        times.append(time.perf_counter() - t0)
        spent += times[-1]
        if spent > 2.0:
            break
    return statistics.median(times)


def search(cx, runtime, budget: int, *, seed: int = 0, progress=None, cache: bool = True,
           cache_dir: str | None = None, verify: bool = True, verbose: bool = False,
           time_limit: float | None = None, reference: str = "auto", warmup: int = 1,
           repeats: int = 5):
    """See Graph.search."""
    from . import __version__
    from .runtime import NativeRuntime

    if reference not in ("auto", "native", "runtime"):
        raise ValueError(f"search: reference must be 'auto', 'native' or 'runtime', "
                         f"got {reference!r}")
    start = time.perf_counter()
    spec = cx._search_space
    g = cx._g
    core_rt = runtime._rt
    rules = runtime.rewrite_rules()
    dims = representative_dims(cx)
    report = SearchReport(runtime=core_rt.name, budget=budget)
    original = _core.identity_program(g)
    original_text = original.text()
    key = search_cache.make_key(original_text, core_rt.name, search_cache.device_name(runtime),
                                __version__, _core.all_rules_text(rules))
    directory = cache_dir or search_cache.default_dir()

    if cache:
        entry = search_cache.load(directory, key)
        if entry is not None and entry["budget"] >= budget:
            try:
                program = _core.parse_program(entry["program"], g)
                runtime._load(cx, program, _choice(entry["choice"]))
            except (LuminalError, ValueError, TypeError):
                program = None  # not trustworthy: search again and overwrite it
            if program is not None:
                report.cache_hit = True
                report.cache_path = f"{directory}/{key}.json"
                report.winner_program = entry["program"]
                report.seconds = time.perf_counter() - start
                cx.last_search_report = report
                if verbose:
                    print(report, file=sys.stderr)
                return runtime

    space = spec.build(cx, rules, core_rt)
    report.saturation = str(space.report)
    # With room to spare, one slot of the budget goes to the combination of the fastest
    # kernels (see _combine), when the runtime can time its kernels one by one.
    timing_kernels = budget > 1 and core_rt.can_time_kernels()
    combine = budget >= 3 and timing_kernels
    programs = space.extract(budget - 1 if combine else budget, dims)
    choices = [list(core_rt.tuning_space(p.graph)) or [_core.TuningChoice()] for p in programs]
    order = _order(programs, choices, budget)
    texts = [p.text() for p in programs]

    want = None
    inputs = _random_inputs(g, dims, seed)
    out_dtypes = [g.node_dtype(o) for o in g.outputs()]
    need_check = verify and (budget > 1 or texts[order[0][0]] != original_text
                             or not isinstance(runtime, NativeRuntime))
    if reference == "auto":
        small = _core.graph_work(g, dims) <= AUTO_NATIVE_WORK
        reference = "native" if small or isinstance(runtime, NativeRuntime) else "runtime"
    if need_check:
        report.reference = "native" if reference == "native" else \
            f"{core_rt.name} running the graph as written"
        ref_rt = _core.NativeRuntime() if reference == "native" else core_rt
        try:
            ref_rt.compile(g)
            want = _run(ref_rt, g.inputs(), g.outputs(), inputs, dims)
        except LuminalError as e:
            # The graph cannot run on random data (e.g. Gather indices out of range), so no
            # candidate can be checked: keep the graph as written.
            programs, texts, order = [original], [original_text], [(0, _core.TuningChoice())]
            report.wrong_rules.append(f"not checked (reference failed on random inputs: {e})")
            need_check = False
            combine = False

    def attempt(p, choice, res):
        """Compiles, checks and (budget > 1) times candidate p; fills res."""
        prog = programs[p]
        try:
            core_rt.compile(prog.graph, choice)
            t_check = None
            if need_check:
                t0 = time.perf_counter()
                got = _run(core_rt, prog.inputs, prog.outputs, inputs, dims)
                t_check = time.perf_counter() - t0
                res.detail = _disagreement(got, want, out_dtypes)
                if res.detail:
                    res.status = "wrong"
                    report.wrong_rules.append(f"program {p} [{choice}]: {res.detail}\n"
                                              f"{texts[p]}")
                    return
            if budget > 1:
                if not need_check:
                    _run(core_rt, prog.inputs, prog.outputs, inputs, dims)
                if t_check is not None and t_check > SLOW_RUN:
                    res.seconds = t_check  # one slow run is its own sample: no more repeats
                else:
                    res.seconds = _time(core_rt, dims, warmup, repeats)
                res.status = "ok"
                if timing_kernels:
                    kernel_times.append((p, core_rt.kernel_times(dims)))
        except LuminalError as e:
            res.status = "failed"
            res.detail = f"{type(e).__name__}: {e}"

    bar = _Progress(progress, len(order) + combine)
    results = []
    skipped = []
    kernel_times = []  # (program index, [(kernel root node, seconds)]) per timed candidate
    # The combination follows the cost model's pick and one program per schedule (the head
    # of the extraction), before the model's next-best programs.
    combine_after = min(len(order), 1 + len(space.schedules())) if combine else -1
    done = 0
    combined = -1  # index in programs of the combination, once made
    while done < len(order):
        p, choice = order[done]
        label = _label(programs[p], choice)
        res = CandidateResult(rank=p, cost=programs[p].cost,
                              choice=f"fastest kernels: {label}" if p == combined else label)
        done += 1
        if results and time_limit is not None and time.perf_counter() - start > time_limit:
            res.status = "skipped"
            res.detail = f"time limit {time_limit} s"
            skipped.append(res)
            continue
        results.append(res)
        attempt(p, choice, res)
        bar.update(done, _best_time(results))
        if done == combine_after and not skipped and len(kernel_times) > 1:
            chosen = _combine(programs, kernel_times)
            program = space.extract_choosing(chosen, dims) if chosen else None
            if program is not None and program.text() not in texts:
                programs.append(program)
                texts.append(program.text())
                combined = len(programs) - 1
                order.insert(done, (combined, _core.TuningChoice()))
    bar.update(len(order), _best_time(results))
    bar.close()

    usable = [i for i, r in enumerate(results) if r.status in ("ok", "untimed")]
    if not usable:
        win_program, win_choice, win_text = original, _core.TuningChoice(), original_text
        report.winner = None
    else:
        timed = [i for i in usable if results[i].seconds is not None]
        best = min(timed, key=lambda i: (results[i].seconds, i)) if timed else usable[0]
        report.winner = best
        p, win_choice = order[best]
        win_program, win_text = programs[p], texts[p]
    last = order[len(results) - 1] if results else None
    if report.winner is not None and report.winner == len(results) - 1 and \
            results[-1].status != "failed" and last is not None:
        # The runtime already holds the winner (it was compiled last): only map the ids.
        from .runtime import _id_map

        runtime._graph, runtime._ids = cx, _id_map(g, win_program)
    else:
        runtime._load(cx, win_program, win_choice)
    report.candidates = results + skipped
    report.winner_program = win_text
    if report.winner is not None:
        p_win = order[report.winner][0]
        times = next((t for q, t in kernel_times if q == p_win), [])
        report.winner_kernels = sorted(((sec, _kernel_desc(win_program.graph, root))
                                        for root, sec in times), key=lambda t: -t[0])
    if cache and report.winner is not None:
        info = {"cost": win_program.cost, "candidates": len(results)}
        params = [[n, v] for n, v in win_choice.params]
        report.cache_path = search_cache.store(directory, key, win_text, params, budget, info)
    report.seconds = time.perf_counter() - start
    cx.last_search_report = report
    if verbose:
        print(report, file=sys.stderr)
    return runtime
