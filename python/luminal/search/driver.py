"""Search: the driver behind ``Graph.build_search_space`` and ``Graph.search``.

The C++ core (csrc/egraph) saturates an e-graph of the graph with the generic rules and the
runtime's rules and extracts programs best-first by a cost model. Here each candidate (program
x tuning choice) is fingerprinted by what the runtime would run (Runtime._runs_as: its
generated code), and duplicates are skipped before anything is compiled: the budget counts
distinct programs. Each is compiled, checked against the reference interpreter (NativeRuntime
on the graph as written; for graphs too big for the interpreter, the runtime itself on the
graph as written, see AUTO_NATIVE_WORK) on several input sets (search_check: ordinary values,
and for graphs up to EXTRA_SETS_WORK, large magnitudes, exp2's edge, large ints, zeros), and
timed (search_timing: repeats, then the finalists re-timed in interleaved rounds); the runtime
comes back loaded with the winner, the cost model's pick unless a challenger is faster by more
than the measured spread. A candidate that disagrees on any set is dropped and reported as a
wrong rule, with the set. Budget 1 takes the cost model's pick without timing (still checked,
unless it is the graph as written on NativeRuntime). search() runs as named steps, the methods
of _SearchRun: cache lookup (re-verified on the ordinary set), candidates, reference, attempt
each, re-time the finalists, pick, store.

With a cost model calibrated on this machine (search_cost, cached next to the search cache),
the candidates are ordered by its estimate of their kernels' times (the e-graph's order breaks
ties), budget 1 takes its best estimate among RANK_POOL extracted programs, and the report
gives its rank correlation with the measured times. ``descent`` candidates more go to a
coordinate descent and mutations over per-kernel choices from the fastest (search_descent).

Symbolic dims are bound, for costing, checking and timing, to their value in ``cx.dyn_map``
or else to DEFAULT_DIM. Candidates, their order and the check data are deterministic for a
seed; which candidate wins can still depend on timing noise between candidates within the
margin of each other (SearchReport.margin).
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from . import cache as search_cache
from . import cost as search_cost
from . import timing
from ..errors import LuminalError
from ..runtime import NativeRuntime
from .check import INT_HIGHS, CheckSet, disagreement, extra_sets, random_inputs
from .descent import Descent

DEFAULT_DIM = 16
# reference="auto" checks against NativeRuntime up to this many elements touched per run (a few
# seconds of the interpreter); bigger graphs are checked against the runtime itself running the
# graph as written, which still catches every wrong rule (the runtime's own tests answer for it).
AUTO_NATIVE_WORK = 2e7
# The extra check sets (search_check.extra_sets) run against the interpreter for graphs up to
# this much work (a tenth of a second a run), at the search's dims or, above it, with every
# symbolic dim bound to SHRUNK_DIM; bigger graphs are checked on the ordinary set only. A
# cache hit is re-verified on the ordinary set up to this work too.
EXTRA_SETS_WORK = 4e6
SHRUNK_DIM = 2
SLOW_RUN = 0.25  # seconds: a candidate whose checking run took longer is timed by that run
# Programs extracted per distinct candidate wanted, so that duplicates can be skipped.
EXTRACT_PER_CANDIDATE = 3
# With a calibrated cost model (search_cost), budget 1 picks the best estimate among this many
# of the e-graph's programs (its best, then one per schedule: SearchSpace.extract), lowered
# but not compiled (a few ms each on a 2-layer Llama).
RANK_POOL = 12


@dataclass
class SearchLimits:
    """Limits of the saturation that builds the search space (csrc/egraph/runner.h)."""
    iterations: int = 12
    nodes: int = 20000
    seconds: float = 2.0
    # The opt-in rule set rules/opt_in/float_reassoc.rules joins the runtime's rules.
    float_reassociation: bool = False

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
    seconds: float | None = None  # median execute time (of the re-timing, when re-timed)
    spread: float | None = None   # the interquartile range of those samples
    retimed: bool = False     # a finalist, re-timed in interleaved rounds
    fingerprint: str = ""     # what the runtime runs, hashed (search: _fingerprint)
    detail: str = ""
    failed_set: str = ""      # "wrong": the check set it disagreed on
    estimate: float | None = None  # the calibrated cost model's seconds (search_cost)


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
    duplicates: int = 0        # candidates skipped as the same program as an earlier one
    check_sets: list = field(default_factory=list)  # the sets checked on, with notes
    # How much faster than the incumbent (the cost model's pick) a challenger had to be
    # (search_timing.pick), seconds; None when nothing was timed.
    margin: float | None = None
    seconds: float = 0.0
    # The winner's kernels, slowest first, when the runtime times kernels one by one:
    # (seconds, what the kernel computes: op, shape and schedule).
    winner_kernels: list = field(default_factory=list)
    # Wall seconds per step of the search, in the order first met: "saturation",
    # "extraction", "reference" (compiling it and drawing the check inputs, which overlap),
    # "reference run", "compile", "check", "timing", "load" (the winner into the runtime).
    phases: dict = field(default_factory=dict)
    # With a calibrated cost model: Spearman's rank correlation of its estimates with the
    # measured seconds, over the timed candidates and over their kernels (kernel_times).
    rank_correlation: float | None = None
    kernel_rank_correlation: float | None = None
    descent: str = ""  # what the descent (search_descent) tried and kept

    def __str__(self) -> str:
        found = f"{len(self.candidates)} distinct candidates ({self.duplicates} duplicates " \
                f"skipped)"
        lines = [f"search on {self.runtime}, budget {self.budget}: "
                 f"{'cache hit' if self.cache_hit else found} in {self.seconds:.3f} s"]
        for i, c in enumerate(self.candidates):
            t = f"{c.seconds * 1e3:.3f} ms" if c.seconds is not None else "-"
            if c.spread is not None:
                t += f" +-{c.spread * 1e3:.3f}" + (" re-timed" if c.retimed else "")
            mark = "*" if i == self.winner else " "
            if c.estimate is not None:
                t += f" (model {c.estimate * 1e3:.3f} ms)"
            lines.append(f" {mark} program {c.rank} [{c.choice}] cost {c.cost:.4g}: {c.status} "
                         f"{t} {c.detail}".rstrip())
        if self.margin is not None:
            lines.append(f"   a challenger had to win by {self.margin * 1e3:.3f} ms")
        if self.rank_correlation is not None or self.kernel_rank_correlation is not None:
            lines.append(f"   cost model rank correlation: candidates {self.rank_correlation}, "
                         f"kernels {self.kernel_rank_correlation}")
        if self.descent:
            lines.append(f"   descent: {self.descent}")
        for w in self.wrong_rules:
            lines.append(f"   wrong: {w}")
        if self.reference:
            lines.append(f"   checked against: {self.reference}, on sets: "
                         f"{', '.join(self.check_sets)}")
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

    def plot(self, path) -> None:
        """Draws measured against estimated time per timed candidate into ``path`` (a PNG,
        SVG or PDF; matplotlib, the ``plot`` extra): search_plot.plot_report."""
        from .plot import plot_report

        plot_report(self, path)


class SpaceSpec:
    """What build_search_space records: the runtime class and the saturation limits. The
    e-graph itself is built by the first search that misses the cache."""

    def __init__(self, runtime_type, limits: SearchLimits):
        self.runtime_type = runtime_type
        self.limits = limits
        self.core = None
        self.rules = None  # the runtime rules the core space was built with

    def extra_rules(self) -> str:
        """The text of the opt-in rule sets asked for (SearchLimits), "" for none."""
        if not self.limits.float_reassociation:
            return ""
        return "".join(text for name, text in _core.opt_in_rule_files()
                       if name == "float_reassoc.rules")

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


class _Texts:
    """The program text of each candidate, by index into ``programs`` (a list that may
    grow), made when first asked for: a model's program text takes a while to print."""

    def __init__(self, programs: list):
        self.programs = programs
        self.made = {}

    def __getitem__(self, p: int) -> str:
        if p not in self.made:
            self.made[p] = self.programs[p].text()
        return self.made[p]


def _fingerprint(runtime, program, choice) -> str:
    """A short hash of what ``runtime`` would run for ``program`` under ``choice``; a
    program it cannot render is its own (the compile will say why)."""
    try:
        text = runtime._runs_as(program, choice)
    except LuminalError as e:
        text = f"unrendered {program.text()} {choice}: {e}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _set_inputs(core_rt, input_ids, inputs) -> None:
    for node, (dtype, data) in zip(input_ids, inputs):
        core_rt.set_data(node, data, dtype)


def search(cx, runtime, budget: int, *, seed: int = 0, progress=None, cache: bool = True,
           cache_dir: str | None = None, verify: bool = True, verbose: bool = False,
           time_limit: float | None = None, reference: str = "auto", warmup: int = 1,
           repeats: int = 5, cost_model="auto", descent: int = 0,
           descent_seconds: float | None = None):
    """See Graph.search. The steps, in order: look the graph up in the cache; extract the
    distinct candidates; run the reference they are checked against; attempt (compile, check,
    time) each; re-time the finalists together; pick the winner, which the runtime adopts;
    store it in the cache."""
    if reference not in ("auto", "native", "runtime"):
        raise ValueError(f"search: reference must be 'auto', 'native' or 'runtime', "
                         f"got {reference!r}")
    run = _SearchRun(cx, runtime, budget, seed, cache_dir, warmup, repeats, cost_model)
    held = runtime._held_state(cx)
    if not (cache and run.load_cached(verify)):
        run.extract_candidates()
        run.run_reference(verify, reference)
        run.attempt_each(progress, time_limit)
        run.descend(descent, descent_seconds)
        run.retime_finalists()
        run.pick_winner()
        if cache:
            run.store()
    runtime._set_parameters(held)  # the weights and carried state set before it stay set
    return run.finish(verbose)


class _SearchRun:
    """One call of search(): the state its steps share. The steps are the public methods, in
    the order search() calls them; each reads what the ones before it set."""

    def __init__(self, cx, runtime, budget: int, seed: int, cache_dir, warmup: int,
                 repeats: int, cost_model="auto"):
        self.start = time.perf_counter()
        self.cx = cx
        self.g = cx._g
        self.runtime = runtime
        self.core_rt = runtime._rt
        self.rules = runtime.rewrite_rules()
        extra = cx._search_space.extra_rules() if cx._search_space is not None else ""
        if extra:
            self.rules += "\n" + extra
        self.budget = budget
        self.seed = seed
        self.warmup = warmup
        self.repeats = repeats
        self.dims = representative_dims(cx)
        self.report = SearchReport(runtime=self.core_rt.name, budget=budget)
        self.original = _core.identity_program(self.g)  # the graph as written
        self.original_text = self.original.text()
        rules_text = _core.all_rules_text(self.rules)
        # What a cache entry records it was made with, and must match when loaded: the core,
        # the rules and the graph (an entry copied or renamed to another graph's key fails).
        core = search_cache.core_identity()
        self.made_with = {"core": core,
                          "rules": hashlib.sha256(rules_text.encode()).hexdigest(),
                          "graph": hashlib.sha256(self.original_text.encode()).hexdigest()}
        self.key = search_cache.make_key(self.original_text, self.core_rt.name,
                                         search_cache.device_name(runtime), core, rules_text)
        self.directory = cache_dir or search_cache.default_dir()
        # The calibrated cost model: "auto" loads the one calibrated for this machine from
        # the search cache's directory (search_cost), if any; None: the e-graph's cost alone.
        if cost_model == "auto":
            cost_model = search_cost.load(self.directory, runtime)
        self.model = cost_model if cost_model and search_cost.supported(runtime) else None
        # (program index, choice text) -> the model's seconds of each kernel, or None
        self.kernel_estimates = {}
        self.kernel_roots = {}  # the same key -> each kernel's root node
        self.out_dtypes = [self.g.node_dtype(o) for o in self.g.outputs()]
        # Quantized activations of computed values: outputs compared in norm (search_check).
        self.normwise = _core.rounds_computed_activations(self.g)

    def load_cached(self, verify: bool) -> bool:
        """Cache lookup: the winner stored for this graph, runtime, device and rules by a
        search of at least this budget, made with this core and these rules, is loaded into
        the runtime and (``verify``, graphs up to EXTRA_SETS_WORK) re-checked against the
        interpreter on the ordinary set. False on a miss; an entry that does not load or
        disagrees is not trusted (the search runs again and overwrites it)."""
        entry = search_cache.load(self.directory, self.key)
        if entry is None or entry["budget"] < self.budget:
            return False
        info = entry.get("info")
        if not isinstance(info, dict) or info.get("made_with") != self.made_with:
            return False
        try:
            with _Phase(self.report, "load"):
                program = _core.parse_program(entry["program"], self.g)
                self.runtime._load(self.cx, program, _choice(entry["choice"]))
            if verify and _core.graph_work(self.g, self.dims) <= EXTRA_SETS_WORK:
                with _Phase(self.report, "recheck"):
                    wrong = self._recheck(program)
                if wrong:
                    return False
        except (LuminalError, ValueError, TypeError):
            return False
        self.report.cache_hit = True
        self.report.cache_path = f"{self.directory}/{self.key}.json"
        self.report.winner_program = entry["program"]
        return True

    def _recheck(self, program) -> str:
        """The loaded ``program`` against the interpreter on the ordinary set: "" when they
        agree (or the interpreter cannot run these inputs), else what differs. Leaves no
        check inputs in the runtime."""
        inputs = random_inputs(self.g, self.dims, self.seed, self.normwise)
        native = _core.NativeRuntime()
        try:
            native.compile(self.g)
            want = _run(native, self.g.inputs(), self.g.outputs(), inputs, self.dims)
        except LuminalError:
            return ""
        got = _run(self.core_rt, program.inputs, program.outputs, inputs, self.dims)
        self.core_rt.clear_data()
        return disagreement(got, want, self.out_dtypes, normwise=self.normwise)

    def extract_candidates(self) -> None:
        """Candidates: the search space's programs, best-first by the cost model, times the
        runtime's tuning choices, in the order they are tried (_order), skipping any that
        runs as one before it (_fingerprint), at most the budget of distinct ones. With room
        to spare, one slot of the budget goes to the combination of the fastest kernels (see
        _combine), when the runtime can time its kernels one by one."""
        with _Phase(self.report, "saturation"):
            self.space = self.cx._search_space.build(self.cx, self.rules, self.core_rt)
        self.report.saturation = str(self.space.report)
        self.timing_kernels = self.budget > 1 and self.core_rt.can_time_kernels()
        self.combine = self.budget >= 3 and self.timing_kernels
        count = self.budget - 1 if self.combine else self.budget
        marks = {}  # (program text, choice text) -> fingerprint, across extractions
        wanted = RANK_POOL if self.model is not None and self.budget == 1 else count
        while True:
            with _Phase(self.report, "extraction"):
                self.programs = self.space.extract(wanted, self.dims)
                choices = [list(self.core_rt.tuning_space(p.graph)) or [_core.TuningChoice()]
                           for p in self.programs]
                pairs = _order(self.programs, choices, sum(len(c) for c in choices))
            with _Phase(self.report, "fingerprint"):
                self._take_distinct(pairs, count, marks)
            # Short of distinct ones while the space may hold more: extract further, once.
            if len(self.order) == count or len(self.programs) < wanted or wanted > count:
                break
            wanted = count * EXTRACT_PER_CANDIDATE
        self.texts = _Texts(self.programs)
        if self.model is not None:
            with _Phase(self.report, "cost model"):
                self._rank_by_model(pairs if self.budget == 1 else None)

    def _estimate(self, p: int, choice) -> float:
        """The calibrated model's seconds for candidate ``p`` under ``choice`` (inf when the
        runtime cannot lower it); its kernels' estimates go to kernel_estimates."""
        key = (p, str(choice))
        if key not in self.kernel_estimates:
            try:
                work = search_cost.kernel_work(self.programs[p], choice, self.dims,
                                               search_cost.threads_of(self.core_rt))
                self.kernel_estimates[key] = self.model.kernel_seconds(work)
                self.kernel_roots[key] = [w.root for w in work]
            except LuminalError:
                self.kernel_estimates[key] = None
        kernels = self.kernel_estimates[key]
        return float("inf") if kernels is None else float(kernels.sum())

    def _model_combination(self):
        """Budget 1's combination of the fastest kernels by the model: per e-class, the
        schedule whose kernel it estimates fastest in the pool (_combine), extracted; an
        (index in programs, choice) pair, or None."""
        estimated = []
        for p, choice in self.order:
            key = (p, str(choice))
            if self.kernel_estimates.get(key) is not None and not choice.params:
                estimated.append((p, list(zip(self.kernel_roots[key],
                                              self.kernel_estimates[key]))))
        chosen = _combine(self.programs, estimated)
        if not chosen:
            return None
        self.programs.append(self.space.extract_choosing(chosen, self.dims))
        return (len(self.programs) - 1, _core.TuningChoice())

    def _rank_by_model(self, pool) -> None:
        """Orders the candidates by the calibrated model's estimate (the e-graph's order breaks
        ties), so that its pick is the first: the incumbent of search_timing.pick. Budget 1
        (``pool``: the extraction's order) estimates the first RANK_POOL and the model's
        combination of their fastest kernels (_model_combination), and keeps the best."""
        if pool is not None:
            self.order = list(pool[:RANK_POOL])
            for p, choice in self.order:
                self._estimate(p, choice)  # each kernel's estimate, for the combination
            combined = self._model_combination()
            if combined is not None:
                self.order.append(combined)
            self.order_marks = [""] * len(self.order)
        est = [self._estimate(p, choice) for p, choice in self.order]
        ranked = sorted(range(len(self.order)), key=lambda i: (est[i], i))
        if pool is not None:
            ranked = ranked[:1]
        self.order = [self.order[i] for i in ranked]
        self.order_marks = [self.order_marks[i] for i in ranked]
        self.fingerprints = {m: i for i, m in enumerate(self.order_marks) if m}

    def _take_distinct(self, pairs: list, count: int, marks: dict) -> None:
        """self.order: the first ``count`` of ``pairs`` that run as none before them (budget 1:
        the first, unfingerprinted); self.report.duplicates counts those skipped."""
        self.fingerprints = {}  # fingerprint -> index in order
        self.order = []         # (program index, choice)
        self.order_marks = []   # the fingerprint of each
        self.report.duplicates = 0
        for p, choice in pairs:
            if len(self.order) == count:
                break
            mark = ""
            if count > 1:
                key = (self.programs[p].text(), str(choice))
                if key not in marks:
                    marks[key] = _fingerprint(self.runtime, self.programs[p], choice)
                mark = marks[key]
                if mark in self.fingerprints:
                    self.report.duplicates += 1
                    continue
                self.fingerprints[mark] = len(self.order)
            self.order.append((p, choice))
            self.order_marks.append(mark)

    def run_reference(self, verify: bool, reference: str) -> None:
        """Reference: the outputs every candidate must match on each check set, from the
        interpreter or from the runtime running the graph as written (``reference``; "auto"
        picks by AUTO_NATIVE_WORK). The ordinary set (random inputs of ``seed``) always; the
        extra sets (search_check.extra_sets) against the interpreter, for graphs up to
        EXTRA_SETS_WORK at the search's dims or at SHRUNK_DIM; a set the interpreter cannot
        run (Gather indices out of range) is left out. Nothing to check when ``verify`` is
        off, or for budget 1 on NativeRuntime with the graph as written. When the reference
        fails on the ordinary set, no candidate can be checked: the graph as written is the
        only one."""
        g = self.g
        self.sets = []
        on_native = isinstance(self.runtime, NativeRuntime)
        self.need_check = verify and (self.budget > 1
                                      or self.texts[self.order[0][0]] != self.original_text
                                      or not on_native)
        work = _core.graph_work(g, self.dims)
        if reference == "auto":
            reference = "native" if work <= AUTO_NATIVE_WORK or on_native else "runtime"
        if not self.need_check:
            with _Phase(self.report, "reference"):
                self.inputs = random_inputs(g, self.dims, self.seed, self.normwise)
            return
        self.report.reference = "native" if reference == "native" else \
            f"{self.core_rt.name} running the graph as written"
        ref_rt = _core.NativeRuntime() if reference == "native" else self.core_rt
        self.inputs = None
        try:
            # The compile (C++, GIL released: a runtime's compilers run as processes) and the
            # drawing of the inputs (numpy) overlap: at 1B parameters each takes seconds.
            with _Phase(self.report, "reference"), ThreadPoolExecutor(max_workers=1) as pool:
                compiling = pool.submit(ref_rt.compile, g)
                self.inputs = random_inputs(g, self.dims, self.seed, self.normwise)
                compiling.result()
            with _Phase(self.report, "reference run"):
                ordinary = CheckSet("ordinary", self.inputs, self.dims, strict=True)
                ordinary.want = self._reference_outputs(ref_rt, ordinary)
        except LuminalError as e:
            if self.inputs is None:
                raise  # inputs too big to draw (random_inputs): nothing can run the graph
            # E.g. Gather indices out of range: keep the graph as written.
            self.programs = [self.original]
            self.texts = _Texts(self.programs)
            self.order = [(0, _core.TuningChoice())]
            self.report.wrong_rules.append(f"not checked (reference failed on random inputs: "
                                           f"{e})")
            self.need_check = False
            self.combine = False
            return
        self.sets = [ordinary]
        self.report.check_sets = ["ordinary"]
        with _Phase(self.report, "reference run"):
            self._add_extra_sets(work)

    def _reference_outputs(self, ref_rt, ordinary) -> list:
        """The reference's outputs on the ordinary set; where an index falls out of range (a
        Gather reading a table through random ints), its ints drawn again from the next of
        INT_HIGHS (the inputs of ``ordinary`` and self.inputs replaced)."""
        g = self.g
        for high in INT_HIGHS:
            if high != INT_HIGHS[0]:
                self.inputs = random_inputs(g, self.dims, self.seed, self.normwise, high)
                ordinary.inputs = self.inputs
            try:
                return _run(ref_rt, g.inputs(), g.outputs(), self.inputs, self.dims)
            except LuminalError as e:
                if high == INT_HIGHS[-1] or "out of range" not in str(e):
                    raise
        raise AssertionError("unreachable")

    def _add_extra_sets(self, work: float) -> None:
        """The extra check sets with the interpreter's outputs on them (run_reference)."""
        g = self.g
        dims = self.dims
        if work > EXTRA_SETS_WORK:
            dims = {s: min(v, SHRUNK_DIM) for s, v in self.dims.items()}
            if not dims or _core.graph_work(g, dims) > EXTRA_SETS_WORK:
                self.report.check_sets.append(f"no others (work {work:.3g} > "
                                              f"{EXTRA_SETS_WORK:.3g})")
                return
        native = _core.NativeRuntime()
        native.compile(g)
        shrunk = "" if dims == self.dims else f" at {dims}"
        for check in extra_sets(g, dims, self.seed):
            try:
                check.want = _run(native, g.inputs(), g.outputs(), check.inputs, dims)
            except LuminalError as e:
                self.report.check_sets.append(f"{check.name} (left out: {e})")
                continue
            self.sets.append(check)
            self.report.check_sets.append(check.name + shrunk)

    def attempt_each(self, progress, time_limit: float | None) -> None:
        """Attempt each candidate in order (_attempt), showing ``progress``. Once
        ``time_limit`` is spent the rest are skipped (at least one is tried). The combination
        of the fastest kernels joins the order after the cost model's pick and one program
        per schedule (the head of the extraction), before the model's next-best programs."""
        bar = _Progress(progress, len(self.order) + self.combine)
        self.results = []
        self.skipped = []
        self.compiled = None  # the index in results of the candidate the runtime holds
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
            res = CandidateResult(rank=p, cost=self.programs[p].cost, choice=label,
                                  fingerprint=self.order_marks[done])
            if self.model is not None:
                res.estimate = self._estimate(p, choice)
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

    def descend(self, candidates: int, seconds: float | None) -> None:
        """Descent (search_descent): from the fastest candidate timed, up to ``candidates``
        more programs within ``seconds``: each kernel's alternatives in turn, the slowest
        kernels' first, then mutations of several at once; each attempted like any candidate
        (compiled, checked, timed), none that runs as one already tried. Needs a runtime that
        times its kernels, and every candidate attempted (no time limit hit)."""
        if candidates <= 0 or not self.timing_kernels or self.skipped or not self.need_check:
            return
        timed = [i for i, r in enumerate(self.results) if r.status == "ok"]
        if not timed:
            return
        best = min(timed, key=lambda i: (self.results[i].seconds, i))
        p = self.order[best][0]
        times = next((t for q, t in self.kernel_times if q == p), [])
        descent = Descent(self.space, self.dims, self._attempt_program, candidates, seconds,
                          self.seed)
        self.descent_duplicates = 0
        before = len(self.results)
        kept = descent.run(self.programs[p], self.results[best].seconds,
                           self.results[best].spread, times)
        self.report.descent = (f"{len(self.results) - before} programs attempted, "
                               f"{self.descent_duplicates} duplicates skipped, {kept} moves "
                               f"kept, over {len(descent.alternatives)} classes with "
                               f"alternatives")

    def _attempt_program(self, program, label: str):
        """Attempts a program the descent extracted, unless it runs as a candidate already
        (then None): (seconds, spread, kernel times), seconds inf when it is wrong or fails."""
        choice = _core.TuningChoice()
        mark = _fingerprint(self.runtime, program, choice)
        if mark in self.fingerprints:
            self.descent_duplicates += 1
            return None
        self.programs.append(program)
        p = len(self.programs) - 1
        self.fingerprints[mark] = len(self.order)
        self.order.append((p, choice))
        self.order_marks.append(mark)
        res = CandidateResult(rank=p, cost=program.cost, choice=f"{label}: "
                              f"{_label(program, choice)}", fingerprint=mark)
        if self.model is not None:
            res.estimate = self._estimate(p, choice)
        self.results.append(res)
        self._attempt(p, choice, res)
        if res.status != "ok":
            return (float("inf"), 0.0, [])
        times = next((t for q, t in self.kernel_times if q == p), [])
        return (res.seconds, res.spread or 0.0, times)

    def _attempt(self, p: int, choice, res: CandidateResult) -> None:
        """Compiles candidate ``p`` with ``choice``, checks it against the reference on every
        set and (budget > 1) times it on the ordinary set; fills ``res``. A wrong result is
        reported as a wrong rule, with the set it failed."""
        prog = self.programs[p]
        core_rt = self.core_rt
        try:
            with _Phase(self.report, "compile"):
                self.compiled = len(self.results) - 1
                core_rt.compile(prog.graph, choice)
            t_check = None
            with _Phase(self.report, "check"):
                if self.need_check:
                    t_check = self._check(prog, res)
                elif self.budget > 1:
                    _run(core_rt, prog.inputs, prog.outputs, self.inputs, self.dims)
            if res.detail:
                res.status = "wrong"
                self.report.wrong_rules.append(f"program {p} [{res.choice}] {res.detail}\n"
                                               f"{self.texts[p]}")
                return
            if self.budget > 1:
                with _Phase(self.report, "timing"):
                    self._time_candidate(p, res, t_check)
        except LuminalError as e:
            res.status = "failed"
            res.detail = f"{type(e).__name__}: {e}"

    def _check(self, prog, res: CandidateResult) -> float:
        """Runs the compiled ``prog`` on each check set, the ordinary one first; on the first
        that disagrees, sets res.detail and res.failed_set. Leaves the ordinary inputs set.
        Returns the seconds of the ordinary run."""
        seconds = []
        for check in self.sets:
            got = _run(self.core_rt, prog.inputs, prog.outputs, check.inputs, check.dims,
                       seconds if check is self.sets[0] else None)
            wrong = disagreement(got, check.want, self.out_dtypes, check.strict,
                                 self.normwise)
            if wrong:
                res.detail = f"on the {check.name} set: {wrong}"
                res.failed_set = check.name
                break
        if len(self.sets) > 1:
            _set_inputs(self.core_rt, prog.inputs, self.inputs)
        return seconds[0]

    def _time_candidate(self, p: int, res: CandidateResult, t_check: float | None) -> None:
        """Times candidate ``p``, just run once (checked: the first warm-up): its kernels one
        by one when the runtime can (their total is the first sample, or with more warm-ups
        asked for, the second warm-up), then repeats (search_timing.time_runs), unless its
        check run took over SLOW_RUN, which then is its only sample."""
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
            samples = [t_check]
        else:
            samples = timing.time_runs(self.core_rt, self.dims, warmups, self.repeats,
                                       _best_time(self.results), samples)
        res.seconds = statistics.median(samples)
        res.spread = timing.spread(samples)
        res.status = "ok"

    def _insert_combination(self, position: int) -> int:
        """Extracts the program that takes, per e-class, the schedule whose kernel ran
        fastest (_combine) and puts it at ``position`` in the order, unless it runs as a
        candidate already. Returns its index in programs, or -1."""
        chosen = _combine(self.programs, self.kernel_times)
        with _Phase(self.report, "extraction"):
            program = self.space.extract_choosing(chosen, self.dims) if chosen else None
        if program is None:
            return -1
        mark = _fingerprint(self.runtime, program, _core.TuningChoice())
        if mark in self.fingerprints:
            self.report.duplicates += 1
            return -1
        self.programs.append(program)
        combined = len(self.programs) - 1
        self.fingerprints[mark] = position
        self.order.insert(position, (combined, _core.TuningChoice()))
        self.order_marks.insert(position, mark)
        return combined

    def retime_finalists(self) -> None:
        """Re-times the finalists together: the FINALISTS fastest candidates within
        RACE_MARGIN of the best, and the cost model's pick (the first candidate) if within it,
        in RETIME_ROUNDS interleaved rounds (each compiles them in turn, from the runtime's
        cache, on the ordinary inputs: a slow spell of the machine falls on all of them). Not
        when it would take over RETIME_SECONDS: their first timing stands."""
        timed = [i for i, r in enumerate(self.results) if r.status == "ok"]
        if len(timed) < 2:
            return
        best = min(self.results[i].seconds for i in timed)
        fast = sorted((i for i in timed if self.results[i].seconds <= timing.RACE_MARGIN * best),
                      key=lambda i: (self.results[i].seconds, i))
        finalists = fast[:timing.FINALISTS]
        if 0 in fast and 0 not in finalists:
            finalists.append(0)
        if len(finalists) < 2 or \
                not timing.retime_fits([self.results[i].seconds for i in finalists]):
            return
        try:
            with _Phase(self.report, "timing"):
                rounds = self._retime_rounds(finalists)
        except LuminalError:  # a recompile that failed: the first timings stand
            self.compiled = None
            return
        for i in finalists:
            res = self.results[i]
            res.seconds = statistics.median([t for r in rounds[i] for t in r])
            res.spread = timing.rounds_spread(rounds[i])
            res.retimed = True

    def _retime_rounds(self, finalists: list) -> dict:
        """{finalist: its samples of each round}: RETIME_ROUNDS rounds, each starting one
        finalist further along, each compiling and timing every finalist in turn."""
        rounds = {i: [] for i in finalists}
        for round_index in range(timing.RETIME_ROUNDS):
            start = round_index % len(finalists)
            for i in finalists[start:] + finalists[:start]:
                p, choice = self.order[i]
                prog = self.programs[p]
                self.compiled = i
                self.core_rt.compile(prog.graph, choice)
                _set_inputs(self.core_rt, prog.inputs, self.inputs)
                rounds[i].append(timing.time_runs(self.core_rt, self.dims, 1,
                                                  timing.RETIME_RUNS))
        return rounds

    def pick_winner(self) -> None:
        """Pick: among the re-timed finalists (none re-timed: the timed candidates), the cost
        model's pick unless a challenger is faster by more than the margin
        (search_timing.pick); untimed, the first usable candidate; none usable, the graph as
        written. The runtime adopts it. When the runtime still holds the winner, it only maps its ids."""
        usable = [i for i, r in enumerate(self.results) if r.status in ("ok", "untimed")]
        if not usable:
            self.report.winner = None
            self.win_program = self.original
            self.win_choice = _core.TuningChoice()
            self.win_text = self.original_text
        else:
            timed = {i: (self.results[i].seconds, self.results[i].spread or 0.0)
                     for i in usable if self.results[i].seconds is not None}
            retimed = {i: t for i, t in timed.items() if self.results[i].retimed}
            if timed:
                best, self.report.margin = timing.pick(retimed or timed, 0)
            else:
                best = usable[0]
            self.report.winner = best
            p, self.win_choice = self.order[best]
            self.win_program = self.programs[p]
            self.win_text = self.texts[p]
        with _Phase(self.report, "load"):
            if self.report.winner is not None and self.report.winner == self.compiled:
                self.runtime._rt.clear_data()  # the check inputs must not stand in for the user's
                self.runtime._adopt(self.cx, self.win_program)
            else:
                self.runtime._load(self.cx, self.win_program, self.win_choice)
        self.report.candidates = self.results + self.skipped
        self.report.winner_program = self.win_text
        if self.model is not None:
            self._rank_correlation()
        if self.report.winner is not None:
            self.report.winner_kernels = self._winner_kernels()

    def _rank_correlation(self) -> None:
        """Spearman of the model's estimates with the measured seconds: over the timed
        candidates, and over their kernels (kernel_times)."""
        timed = [r for r in self.results if r.status == "ok" and r.estimate is not None
                 and r.seconds is not None]
        if len(timed) >= 3:
            self.report.rank_correlation = search_cost.spearman(
                [r.estimate for r in timed], [r.seconds for r in timed])
        est, sec = [], []
        for p, times in self.kernel_times:
            choice = next(c for q, c in self.order if q == p)
            kernels = self.kernel_estimates.get((p, str(choice)))
            if kernels is not None and len(kernels) == len(times):
                est += list(kernels)
                sec += [t for _, t in times]
        if len(sec) >= 3:
            self.report.kernel_rank_correlation = search_cost.spearman(est, sec)

    def _winner_kernels(self) -> list:
        """(seconds, what the kernel computes) for the winner's kernels, slowest first."""
        p_win = self.order[self.report.winner][0]
        times = next((t for q, t in self.kernel_times if q == p_win), [])
        kernels = [(sec, _kernel_desc(self.win_program.graph, root)) for root, sec in times]
        return sorted(kernels, key=lambda t: -t[0])

    def store(self) -> None:
        """Store: the winner's program text and tuning choice go to the search cache (not
        when no candidate was usable), with the core and rules they were made with."""
        if self.report.winner is None:
            return
        info = {"cost": self.win_program.cost, "candidates": len(self.results),
                "made_with": self.made_with}
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
