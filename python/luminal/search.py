"""Search: the driver behind ``Graph.build_search_space`` and ``Graph.search``.

The C++ core (csrc/egraph) saturates an e-graph of the graph with the generic rules and the
runtime's rules and extracts distinct programs best-first by a cost model. Here each candidate
(program x tuning choice) is compiled on the runtime, checked against the reference interpreter
(NativeRuntime on the graph as written; for graphs too big for the interpreter, the runtime
itself on the graph as written, see AUTO_NATIVE_WORK) on random inputs, and timed (warm-up,
repeats, median); the runtime comes back loaded with the fastest. A candidate that disagrees is
dropped and reported as a wrong rule. Budget 1 takes the cost model's pick without timing
(still checked, unless it is the graph as written on NativeRuntime). search() runs as named
steps, the methods of _SearchRun: cache lookup, candidates, reference, attempt each, pick,
store.

Symbolic dims are bound, for costing, checking and timing, to their value in ``cx.dyn_map``
or else to DEFAULT_DIM. Candidates, their order and the check data are deterministic for a
seed; which candidate wins can depend on timing noise between near-equal candidates.
"""

from __future__ import annotations

import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import _core
from . import dtype as dt
from . import search_cache
from .errors import LuminalError
from .runtime import NativeRuntime, _from_storage, _to_storage

DEFAULT_DIM = 16
# reference="auto" checks against NativeRuntime up to this many elements touched per run (a few
# seconds of the interpreter); bigger graphs are checked against the runtime itself running the
# graph as written, which still catches every wrong rule (the runtime's own tests answer for it).
AUTO_NATIVE_WORK = 2e7
SLOW_RUN = 0.25  # seconds: a candidate whose checking run took longer is timed by that run
# A candidate is timed no further once RACE_SAMPLES runs all took over RACE_MARGIN x the best
# median so far: it cannot win, and a 16-layer model's slow candidates took seconds each.
RACE_SAMPLES = 2
RACE_MARGIN = 1.25
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
    # Wall seconds per step of the search, in the order first met: "saturation",
    # "extraction", "reference" (compiling it and drawing the check inputs, which overlap),
    # "reference run", "compile", "check", "timing", "load" (the winner into the runtime).
    phases: dict = field(default_factory=dict)

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
        if self.phases:
            lines.append("   seconds: " + ", ".join(f"{name} {sec:.2f}"
                                                    for name, sec in self.phases.items()))
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


class _Phase:
    """``with _Phase(report, name):`` adds the block's wall seconds to report.phases[name]."""

    def __init__(self, report: SearchReport, name: str):
        self.report = report
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        seconds = time.perf_counter() - self.t0
        self.report.phases[self.name] = self.report.phases.get(self.name, 0.0) + seconds


def representative_dims(graph) -> dict:
    return {s: int(graph.dyn_map.get(s, DEFAULT_DIM)) for s in graph.symbols()}


def _choice(params) -> _core.TuningChoice:
    c = _core.TuningChoice()
    c.params = [(str(n), int(v)) for n, v in params]
    return c


# Random floats as bit patterns, per storage dtype: (word type, kept bits, set bits). The kept
# bits are the sign, the exponent's lowest bit and the mantissa, the set bits the rest of an
# exponent of 2^-1: values +-[0.5, 2) with random mantissas, each one a word of random bits.
_RANDOM_FLOAT_BITS = {
    dt.float32: (np.uint32, 0x80FFFFFF, 0x3F000000),
    dt.float16: (np.uint16, 0x87FF, 0x3800),
    dt.bfloat16: (np.uint16, 0x80FF, 0x3F00),
}


def _random_floats(rng, count: int, dtype) -> np.ndarray:
    """``count`` random values of float ``dtype`` in +-[0.5, 2), in its storage layout, made
    from random words in place: a 1B-parameter model's bf16 weights take 2 s here, where
    uniform draws in f32 rounded to bf16 took 22 s and twice the memory."""
    word, keep, set_bits = _RANDOM_FLOAT_BITS[dtype]
    words_per_draw = 8 // np.dtype(word).itemsize
    draws = -(-count // words_per_draw)
    bits = rng.integers(0, 1 << 64, size=draws, dtype=np.uint64).view(word)[:count]
    bits &= word(keep)
    bits |= word(set_bits)
    return bits.view(dt.storage(dtype))


def _random_inputs(g, dims: dict, seed: int) -> list:
    """One storage array per input of g, by position, deterministic for the seed: floats in
    +-[0.5, 2) (_random_floats), ints in [0, 4), bools 0 or 1."""
    rng = np.random.default_rng(seed)
    out = []
    for node in g.inputs():
        shape = [d.eval(dims) if not d.is_const() else d.as_const() for d in g.node_shape(node)]
        dtype = g.node_dtype(node)
        count = int(np.prod(shape, dtype=np.int64))
        if dt.is_float(dtype):
            out.append((dtype, _random_floats(rng, count, dtype)))
            continue
        high = 2 if dtype == dt.bool_ else 4
        values = rng.integers(0, high, size=count, dtype=np.int32)
        out.append((dtype, _to_storage(values, dtype)))
    return out


def _run(core_rt, input_ids, output_ids, inputs, dims, seconds=None) -> list:
    """Sets the inputs, executes and reads the outputs; ``seconds`` (a list) gets the time of
    the execute alone (setting a parameter may lay it out, which is no part of a run)."""
    for node, (dtype, data) in zip(input_ids, inputs):
        core_rt.set_data(node, data, dtype)
    t0 = time.perf_counter()
    core_rt.execute(dims)
    if seconds is not None:
        seconds.append(time.perf_counter() - t0)
    return [np.asarray(core_rt.get(o)) for o in output_ids]


def _disagreement(got: list, want: list, dtypes: list) -> str:
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


def _time(core_rt, dims, warmup: int, repeats: int, best: float | None = None,
          samples: list | None = None) -> float:
    """The median of ``samples`` (seconds of runs already made) and more runs, up to
    ``repeats`` in all, after ``warmup`` more (2 s of runs at most). A candidate whose first
    RACE_SAMPLES all took over RACE_MARGIN x ``best`` (the fastest median so far) has lost
    the race: it stops there."""
    for _ in range(max(warmup, 0)):
        core_rt.execute(dims)
    times = list(samples or [])
    spent = sum(times)
    while len(times) < repeats and spent <= 2.0:
        if best is not None and len(times) >= RACE_SAMPLES and \
                min(times[:RACE_SAMPLES]) > RACE_MARGIN * best:
            break
        t0 = time.perf_counter()
        core_rt.execute(dims)
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return statistics.median(times)


def search(cx, runtime, budget: int, *, seed: int = 0, progress=None, cache: bool = True,
           cache_dir: str | None = None, verify: bool = True, verbose: bool = False,
           time_limit: float | None = None, reference: str = "auto", warmup: int = 1,
           repeats: int = 5):
    """See Graph.search. The steps, in order: look the graph up in the cache; extract the
    candidates; run the reference they are checked against; attempt (compile, check, time)
    each; pick the winner, which the runtime adopts; store it in the cache."""
    if reference not in ("auto", "native", "runtime"):
        raise ValueError(f"search: reference must be 'auto', 'native' or 'runtime', "
                         f"got {reference!r}")
    run = _SearchRun(cx, runtime, budget, seed, cache_dir, warmup, repeats)
    held = runtime._held_parameters(cx)
    if not (cache and run.load_cached()):
        run.extract_candidates()
        run.run_reference(verify, reference)
        run.attempt_each(progress, time_limit)
        run.pick_winner()
        if cache:
            run.store()
    runtime._set_parameters(held)  # the user's weights, set before the search, stay set
    return run.finish(verbose)


class _SearchRun:
    """One call of search(): the state its steps share. The steps are the public methods, in
    the order search() calls them; each reads what the ones before it set."""

    def __init__(self, cx, runtime, budget: int, seed: int, cache_dir, warmup: int,
                 repeats: int):
        from . import __version__

        self.start = time.perf_counter()
        self.cx = cx
        self.g = cx._g
        self.runtime = runtime
        self.core_rt = runtime._rt
        self.rules = runtime.rewrite_rules()
        self.budget = budget
        self.seed = seed
        self.warmup = warmup
        self.repeats = repeats
        self.dims = representative_dims(cx)
        self.report = SearchReport(runtime=self.core_rt.name, budget=budget)
        self.original = _core.identity_program(self.g)  # the graph as written
        self.original_text = self.original.text()
        self.key = search_cache.make_key(self.original_text, self.core_rt.name,
                                         search_cache.device_name(runtime), __version__,
                                         _core.all_rules_text(self.rules))
        self.directory = cache_dir or search_cache.default_dir()

    def load_cached(self) -> bool:
        """Cache lookup: the winner stored for this graph, runtime, device and rules by a
        search of at least this budget is loaded into the runtime. False on a miss; an entry
        that does not load is not trusted (the search runs again and overwrites it)."""
        entry = search_cache.load(self.directory, self.key)
        if entry is None or entry["budget"] < self.budget:
            return False
        try:
            with _Phase(self.report, "load"):
                program = _core.parse_program(entry["program"], self.g)
                self.runtime._load(self.cx, program, _choice(entry["choice"]))
        except (LuminalError, ValueError, TypeError):
            return False
        self.report.cache_hit = True
        self.report.cache_path = f"{self.directory}/{self.key}.json"
        self.report.winner_program = entry["program"]
        return True

    def extract_candidates(self) -> None:
        """Candidates: the search space's programs, best-first by the cost model, times the
        runtime's tuning choices, in the order they are tried (_order), at most the budget.
        With room to spare, one slot of the budget goes to the combination of the fastest
        kernels (see _combine), when the runtime can time its kernels one by one."""
        with _Phase(self.report, "saturation"):
            self.space = self.cx._search_space.build(self.cx, self.rules, self.core_rt)
        self.report.saturation = str(self.space.report)
        self.timing_kernels = self.budget > 1 and self.core_rt.can_time_kernels()
        self.combine = self.budget >= 3 and self.timing_kernels
        count = self.budget - 1 if self.combine else self.budget
        with _Phase(self.report, "extraction"):
            self.programs = self.space.extract(count, self.dims)
            choices = [list(self.core_rt.tuning_space(p.graph)) or [_core.TuningChoice()]
                       for p in self.programs]
            self.order = _order(self.programs, choices, self.budget)  # (program index, choice)
            self.texts = [p.text() for p in self.programs]

    def run_reference(self, verify: bool, reference: str) -> None:
        """Reference: the outputs every candidate must match on random inputs (``seed``),
        from the interpreter or from the runtime running the graph as written (``reference``;
        "auto" picks by AUTO_NATIVE_WORK). Nothing to check when ``verify`` is off, or for
        budget 1 on NativeRuntime with the graph as written. When the reference fails on the
        random inputs, no candidate can be checked: the graph as written is the only one."""
        g = self.g
        self.want = None
        self.out_dtypes = [g.node_dtype(o) for o in g.outputs()]
        on_native = isinstance(self.runtime, NativeRuntime)
        self.need_check = verify and (self.budget > 1
                                      or self.texts[self.order[0][0]] != self.original_text
                                      or not on_native)
        if reference == "auto":
            small = _core.graph_work(g, self.dims) <= AUTO_NATIVE_WORK
            reference = "native" if small or on_native else "runtime"
        if not self.need_check:
            with _Phase(self.report, "reference"):
                self.inputs = _random_inputs(g, self.dims, self.seed)
            return
        self.report.reference = "native" if reference == "native" else \
            f"{self.core_rt.name} running the graph as written"
        ref_rt = _core.NativeRuntime() if reference == "native" else self.core_rt
        try:
            # The compile (C++, GIL released: a runtime's compilers run as processes) and the
            # drawing of the inputs (numpy) overlap: at 1B parameters each takes seconds.
            with _Phase(self.report, "reference"), ThreadPoolExecutor(max_workers=1) as pool:
                compiling = pool.submit(ref_rt.compile, g)
                self.inputs = _random_inputs(g, self.dims, self.seed)
                compiling.result()
            with _Phase(self.report, "reference run"):
                self.want = _run(ref_rt, g.inputs(), g.outputs(), self.inputs, self.dims)
        except LuminalError as e:
            # E.g. Gather indices out of range: keep the graph as written.
            self.programs = [self.original]
            self.texts = [self.original_text]
            self.order = [(0, _core.TuningChoice())]
            self.report.wrong_rules.append(f"not checked (reference failed on random inputs: "
                                           f"{e})")
            self.need_check = False
            self.combine = False

    def attempt_each(self, progress, time_limit: float | None) -> None:
        """Attempt each candidate in order (_attempt), showing ``progress``. Once
        ``time_limit`` is spent the rest are skipped (at least one is tried). The combination
        of the fastest kernels joins the order after the cost model's pick and one program
        per schedule (the head of the extraction), before the model's next-best programs."""
        bar = _Progress(progress, len(self.order) + self.combine)
        self.results = []
        self.skipped = []
        self.kernel_times = []  # (program index, [(kernel root node, seconds)]) per timed one
        combine_after = -1
        if self.combine:
            combine_after = min(len(self.order), 1 + len(self.space.schedules()))
        done = 0
        combined = -1  # index in programs of the combination, once made
        while done < len(self.order):
            p, choice = self.order[done]
            label = _label(self.programs[p], choice)
            if p == combined:
                label = f"fastest kernels: {label}"
            res = CandidateResult(rank=p, cost=self.programs[p].cost, choice=label)
            done += 1
            if self.results and time_limit is not None and \
                    time.perf_counter() - self.start > time_limit:
                res.status = "skipped"
                res.detail = f"time limit {time_limit} s"
                self.skipped.append(res)
                continue
            self.results.append(res)
            self._attempt(p, choice, res)
            bar.update(done, _best_time(self.results))
            if done == combine_after and not self.skipped and len(self.kernel_times) > 1:
                combined = self._insert_combination(done)
        bar.update(len(self.order), _best_time(self.results))
        bar.close()

    def _attempt(self, p: int, choice, res: CandidateResult) -> None:
        """Compiles candidate ``p`` with ``choice``, checks it against the reference and
        (budget > 1) times it; fills ``res``. A wrong result is reported as a wrong rule."""
        prog = self.programs[p]
        core_rt = self.core_rt
        try:
            with _Phase(self.report, "compile"):
                core_rt.compile(prog.graph, choice)
            t_check = None
            with _Phase(self.report, "check"):
                if self.need_check:
                    seconds = []
                    got = _run(core_rt, prog.inputs, prog.outputs, self.inputs, self.dims,
                               seconds)
                    t_check = seconds[0]
                    res.detail = _disagreement(got, self.want, self.out_dtypes)
                elif self.budget > 1:
                    _run(core_rt, prog.inputs, prog.outputs, self.inputs, self.dims)
            if res.detail:
                res.status = "wrong"
                self.report.wrong_rules.append(f"program {p} [{choice}]: {res.detail}\n"
                                               f"{self.texts[p]}")
                return
            if self.budget > 1:
                with _Phase(self.report, "timing"):
                    self._time_candidate(p, res, t_check)
        except LuminalError as e:
            res.status = "failed"
            res.detail = f"{type(e).__name__}: {e}"

    def _time_candidate(self, p: int, res: CandidateResult, t_check: float | None) -> None:
        """Times candidate ``p``, just run once (checked: the first warm-up): its kernels one
        by one when the runtime can (their total is the first sample, or with more warm-ups
        asked for, the second warm-up), then repeats (_time), unless its check run took over
        SLOW_RUN, which then is its only sample."""
        samples = []
        warmups = self.warmup - 1
        if self.timing_kernels:
            kernels = self.core_rt.kernel_times(self.dims)
            self.kernel_times.append((p, kernels))
            if warmups > 0:
                warmups -= 1
            else:
                samples.append(sum(seconds for _, seconds in kernels))
        if t_check is not None and t_check > SLOW_RUN:
            res.seconds = t_check
        else:
            res.seconds = _time(self.core_rt, self.dims, warmups, self.repeats,
                                _best_time(self.results), samples)
        res.status = "ok"

    def _insert_combination(self, position: int) -> int:
        """Extracts the program that takes, per e-class, the schedule whose kernel ran
        fastest (_combine) and puts it at ``position`` in the order, unless it is a candidate
        already. Returns its index in programs, or -1."""
        chosen = _combine(self.programs, self.kernel_times)
        with _Phase(self.report, "extraction"):
            program = self.space.extract_choosing(chosen, self.dims) if chosen else None
        if program is None or program.text() in self.texts:
            return -1
        self.programs.append(program)
        self.texts.append(program.text())
        combined = len(self.programs) - 1
        self.order.insert(position, (combined, _core.TuningChoice()))
        return combined

    def pick_winner(self) -> None:
        """Pick: the fastest timed candidate that matched (untimed: the first usable one),
        else the graph as written; the runtime adopts it. The candidate attempted last is
        still compiled in the runtime, so when it wins the runtime only maps its ids."""
        usable = [i for i, r in enumerate(self.results) if r.status in ("ok", "untimed")]
        if not usable:
            self.report.winner = None
            self.win_program = self.original
            self.win_choice = _core.TuningChoice()
            self.win_text = self.original_text
        else:
            timed = [i for i in usable if self.results[i].seconds is not None]
            best = min(timed, key=lambda i: (self.results[i].seconds, i)) if timed else usable[0]
            self.report.winner = best
            p, self.win_choice = self.order[best]
            self.win_program = self.programs[p]
            self.win_text = self.texts[p]
        with _Phase(self.report, "load"):
            if self.report.winner is not None and self.report.winner == len(self.results) - 1:
                self.runtime._rt.clear_data()  # the check inputs must not stand in for the user's
                self.runtime._adopt(self.cx, self.win_program)
            else:
                self.runtime._load(self.cx, self.win_program, self.win_choice)
        self.report.candidates = self.results + self.skipped
        self.report.winner_program = self.win_text
        if self.report.winner is not None:
            self.report.winner_kernels = self._winner_kernels()

    def _winner_kernels(self) -> list:
        """(seconds, what the kernel computes) for the winner's kernels, slowest first."""
        p_win = self.order[self.report.winner][0]
        times = next((t for q, t in self.kernel_times if q == p_win), [])
        kernels = [(sec, _kernel_desc(self.win_program.graph, root)) for root, sec in times]
        return sorted(kernels, key=lambda t: -t[0])

    def store(self) -> None:
        """Store: the winner's program text and tuning choice go to the search cache (not
        when no candidate was usable)."""
        if self.report.winner is None:
            return
        info = {"cost": self.win_program.cost, "candidates": len(self.results)}
        params = [[n, v] for n, v in self.win_choice.params]
        try:
            self.report.cache_path = search_cache.store(self.directory, self.key,
                                                        self.win_text, params, self.budget, info)
        except OSError as e:  # a read-only or full disk: the search itself succeeded
            print(f"luminal: search result not cached ({self.directory}: {e.strerror or e})",
                  file=sys.stderr)

    def finish(self, verbose: bool):
        """The report goes to ``cx.last_search_report`` (and stderr, if ``verbose``); returns
        the runtime, loaded."""
        self.report.seconds = time.perf_counter() - self.start
        self.cx.last_search_report = self.report
        if verbose:
            print(self.report, file=sys.stderr)
        return self.runtime
