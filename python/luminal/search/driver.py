"""Search: the driver behind ``Graph.build_search_space`` and ``Graph.search``.

The C++ core (csrc/egraph) saturates an e-graph of the graph with the generic rules and the
runtime's rules and extracts programs best-first by a cost model. Here each candidate (program
x tuning choice) is lowered once by the runtime (Runtime._prepare: fingerprinted by what it
would run, its generated code, and kept for its estimate, compile and load), and duplicates are
skipped before anything is compiled: the budget counts distinct programs. Each is compiled, checked against the reference interpreter (NativeRuntime
on the graph as written; for graphs too big for the interpreter, the runtime itself on the
graph as written, see AUTO_NATIVE_WORK, and where it can, kernel by kernel against the
interpreter) on the ordinary set at the search's dims, and timed there (timing.py: repeats,
then the finalists re-timed in interleaved rounds); the pick, the cost model's pick unless a
challenger is faster by more than the measured spread, is checked on the other sets too
(check.py: the ordinary values at a second binding of the dims, large magnitudes, exp2's edge,
large ints, zeros) before the runtime comes back loaded with it. A candidate that disagrees on
any set is dropped and reported as a wrong rule, with the set (the pick then goes on); one
stopped mid-check for being slower than the race allows is "lost". Budget 1 takes the cost model's pick without timing (still checked,
unless it is the graph as written on NativeRuntime). search() runs as a flat list of named
phases, each a function of the SearchRun it shares: cache lookup (re-verified on the ordinary
set), extract (extract.py), reference (check.py), attempt each, descend, re-time the finalists
(timing.py), pick, report (report.py), store.

With a cost model calibrated on this machine (cost.py, cached next to the search cache),
the candidates are ordered by its estimate of their kernels' times (the e-graph's order breaks
ties), budget 1 takes its best estimate among RANK_POOL extracted programs, and the report
gives its rank correlation with the measured times. ``descent`` candidates more go to a
coordinate descent and mutations over per-kernel choices from the fastest (descent.py).

Symbolic dims are bound, for costing, checking and timing, to their value in ``cx.dyn_map``
or else to DEFAULT_DIM. Candidates, their order and the check data are deterministic for a
seed; which candidate wins can still depend on timing noise between candidates within the
margin of each other (SearchReport.margin).
"""


from __future__ import annotations

import functools
import hashlib
import sys
import time
from dataclasses import dataclass

from .. import _core
from ..errors import CompileError, LuminalError, ShapeError
from . import cache as search_cache
from . import cost as search_cost
from .check import (EXTRA_SETS_WORK, _run, check_as_written, check_candidate, check_rest,
                    finish_reference, recheck, run_reference, start_reference)
from .descent import Descent
from .extract import _prepare, estimate, extract, insert_combination, prepared_of, saturate
from .precompile import Precompiler
from .report import (CandidateResult, SearchReport, _label, _Phase, _Progress, fill_report)
from .timing import _best_time, lost_after, pick as pick_fastest, retime, time_candidate

DEFAULT_DIM = 16


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


def representative_dims(graph) -> dict:
    return {s: int(graph.dyn_map.get(s, DEFAULT_DIM)) for s in graph.symbols()}


def _choice(params) -> _core.TuningChoice:
    c = _core.TuningChoice()
    c.params = [(str(n), int(v)) for n, v in params]
    return c


def search(cx, runtime, budget: int, *, seed: int = 0, progress=None, cache: bool = True,
           cache_dir: str | None = None, verify: bool = True, verbose: bool = False,
           time_limit: float | None = None, reference: str = "auto", warmup: int = 1,
           repeats: int = 5, cost_model="auto", descent: int = 0,
           descent_seconds: float | None = None):
    """See Graph.search. The phases, in order, each a function of the SearchRun: look the graph
    up in the cache (lookup_cache); saturate the e-graph (extract.saturate); start compiling
    the reference where it does not depend on the candidates (check.start_reference); extract
    the distinct candidates (extract.extract); run the reference they are checked against
    (check.run_reference); attempt (compile, check, time)
    each (attempt_each); the descent from the fastest (descend); re-time the finalists
    together (timing.retime); pick the winner, which the runtime adopts (pick); fill the
    report (report.fill_report); store the winner in the cache (store)."""
    if reference not in ("auto", "native", "kernels", "runtime"):
        raise ValueError(f"search: reference must be 'auto', 'native', 'kernels' or "
                         f"'runtime', got {reference!r}")
    run = SearchRun(cx, runtime, budget, seed, cache_dir, warmup, repeats, cost_model)
    held = runtime._held_state(cx)
    run.report.progress = _Progress(progress)
    try:
        if not (cache and lookup_cache(run, verify)):
            saturate(run)
            start_reference(run, verify, reference)
            try:
                extract(run)
            except BaseException:
                finish_reference(run)
                raise
            run_reference(run, verify, reference)
            attempt_each(run, time_limit)
            descend(run, descent, descent_seconds)
            retime(run)
            pick(run)
            fill_report(run)
            if cache:
                store(run)
    finally:
        run.precompiler.wait()  # nothing compiles under the runtime after the search
        run.report.progress.close()
        run.report.progress = None
    runtime._set_parameters(held)  # the weights and carried state set before it stay set
    return finish(run, verbose)


class SearchRun:
    """One call of search(): the state its phases share. The phases are functions of it (here,
    in extract.py, check.py, timing.py and report.py), in the order search() calls them; each
    reads what the ones before it set."""

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
        overrun = _core.view_overrun(self.g, self.dims)
        if overrun:
            raise ShapeError(f"search: the dims it times at are outside what this graph can "
                             f"take ({overrun}); bind others with cx.set_dim")
        self.report = SearchReport(runtime=self.core_rt.name, budget=budget)
        self.precompiler = Precompiler(self.core_rt)  # the candidates' kernels, ahead
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
        # the search cache's directory (cost.py), if any; None: the e-graph's cost alone.
        if cost_model == "auto":
            cost_model = search_cost.load(self.directory, runtime)
        self.model = cost_model if cost_model and search_cost.supported(runtime) else None
        # (program index, choice text) -> the model's seconds of each kernel, or None
        self.kernel_estimates = {}
        self.kernel_roots = {}  # the same key -> each kernel's root node
        self.out_dtypes = [self.g.node_dtype(o) for o in self.g.outputs()]
        # Per check set, the kernels a candidate passed on it (check.kernel_disagreement).
        self.checked_kernels = {}
        # Quantized activations of computed values: outputs compared in norm (check.py).
        self.normwise = _core.rounds_computed_activations(self.g)


def lookup_cache(run: SearchRun, verify: bool) -> bool:
    """Cache lookup: the winner stored for this graph, runtime, device and rules by a
    search of at least this budget, made with this core and these rules, is loaded into
    the runtime and (``verify``, graphs up to EXTRA_SETS_WORK) re-checked against the
    interpreter on the ordinary set. False on a miss; an entry that does not load or
    disagrees is not trusted (the search runs again and overwrites it)."""
    entry = search_cache.load(run.directory, run.key)
    if entry is None or entry["budget"] < run.budget:
        return False
    info = entry.get("info")
    if not isinstance(info, dict) or info.get("made_with") != run.made_with:
        return False
    try:
        with _Phase(run.report, "load"):
            program = _core.parse_program(entry["program"], run.g)
            run.runtime._load(run.cx, program, _choice(entry["choice"]))
        if verify and (run.core_rt.can_check_kernels() or
                       _core.graph_work(run.g, run.dims) <= EXTRA_SETS_WORK):
            with _Phase(run.report, "recheck"):
                wrong = recheck(run, program)
            if wrong:
                print(f"luminal: the cached search result {run.directory}/{run.key}.json "
                      f"failed its re-check ({wrong.splitlines()[0]}); searching again",
                      file=sys.stderr)
                return False
    except (LuminalError, ValueError, TypeError):
        return False
    run.report.cache_hit = True
    run.report.cache_path = f"{run.directory}/{run.key}.json"
    run.report.winner_program = entry["program"]
    return True


def attempt_each(run: SearchRun, time_limit: float | None) -> None:
    """Attempt each candidate in order (attempt), on the search's progress line. Once
    ``time_limit`` is spent the rest are skipped (at least one is tried). The combination
    of the fastest kernels joins the order after the cost model's pick and one program
    per schedule (the head of the extraction), before the model's next-best programs."""
    bar = run.report.progress
    bar.total = len(run.order) + run.combine
    run.results = []
    run.skipped = []
    run.compiled = None  # the index in results of the candidate the runtime holds
    run.kernel_times = []  # (program index, [(kernel root node, seconds)]) per timed one
    with _Phase(run.report, "compile"):
        run.precompiler.wait()  # no compiler runs beside a candidate's check or timing
    combine_after = -1
    if run.combine:
        combine_after = min(len(run.order), 1 + len(run.space.schedules()))
    done = 0
    combined = -1  # index in programs of the combination, once made
    while done < len(run.order):
        p, choice = run.order[done]
        label = _label(run.programs[p], choice)
        if p == combined:
            label = f"fastest kernels: {label}"
        res = CandidateResult(rank=p, cost=run.programs[p].cost, choice=label,
                              fingerprint=run.order_marks[done])
        if run.model is not None:
            res.estimate = estimate(run, p, choice)
        done += 1
        if run.results and time_limit is not None and \
                time.perf_counter() - run.start > time_limit:
            res.status = "skipped"
            res.detail = f"time limit {time_limit} s"
            run.skipped.append(res)
            continue
        run.results.append(res)
        attempt(run, p, choice, res)
        bar.update(done, _best_time(run.results))
        if done == combine_after and not run.skipped and len(run.kernel_times) > 1:
            combined = insert_combination(run, done)
    bar.update(len(run.order), _best_time(run.results))


def attempt(run: SearchRun, p: int, choice, res: CandidateResult) -> None:
    """Compiles candidate ``p`` with ``choice``, checks it against the reference on every
    set and (budget > 1) times it on the ordinary set; fills ``res``. A wrong result is
    reported as a wrong rule, with the set it failed."""
    prog = run.programs[p]
    core_rt = run.core_rt
    try:
        with _Phase(run.report, "compile"):
            run.compiled = len(run.results) - 1
            core_rt.compile_prepared(prepared_of(run, p, choice))
        t_check = None
        with _Phase(run.report, "check"):
            if run.need_check:
                # Timed candidates run at the ordinary set's dims and inputs only: checked
                # on that set first, on the others once the pick reaches them (check_rest).
                res.deferred = run.budget > 1 and len(run.sets) > 1
                best = _best_time(run.results) if run.budget > 1 else None
                t_check = check_candidate(run, prog, res,
                                          run.sets[:1] if res.deferred else run.sets,
                                          lost_after(best))
            elif run.budget > 1:
                _run(core_rt, prog.inputs, prog.outputs, run.inputs, run.dims)
        if res.status == "lost":  # slower than the best: not checked further, nor timed
            res.deferred = False
            return
        if res.detail:
            res.status = "wrong"
            res.deferred = False
            run.report.wrong_rules.append(f"program {p} [{res.choice}] {res.detail}\n"
                                          f"{run.texts[p]}")
            return
        if run.budget > 1:
            with _Phase(run.report, "timing"):
                time_candidate(run, p, res, t_check)
    except LuminalError as e:
        res.status = "failed"
        res.deferred = False
        res.detail = f"{type(e).__name__}: {e}"


def descend(run: SearchRun, candidates: int, seconds: float | None) -> None:
    """Descent (descent.py): from the fastest candidate timed, up to ``candidates``
    more programs within ``seconds``: each kernel's alternatives in turn, the slowest
    kernels' first, then mutations of several at once; each attempted like any candidate
    (compiled, checked, timed), none that runs as one already tried. Needs a runtime that
    times its kernels, and every candidate attempted (no time limit hit)."""
    if candidates <= 0 or not run.timing_kernels or run.skipped or not run.need_check:
        return
    timed = [i for i, r in enumerate(run.results) if r.status == "ok"]
    if not timed:
        return
    best = min(timed, key=lambda i: (run.results[i].seconds, i))
    p = run.order[best][0]
    times = next((t for q, t in run.kernel_times if q == p), [])
    descent = Descent(run.space, run.dims, functools.partial(_attempt_program, run), candidates,
                      seconds, run.seed)
    run.descent_duplicates = 0
    before = len(run.results)
    kept = descent.run(run.programs[p], run.results[best].seconds,
                       run.results[best].spread, times)
    run.report.descent = (f"{len(run.results) - before} programs attempted, "
                          f"{run.descent_duplicates} duplicates skipped, {kept} moves "
                          f"kept, over {len(descent.alternatives)} classes with "
                          f"alternatives")


def _attempt_program(run: SearchRun, program, label: str):
    """Attempts a program the descent extracted, unless it runs as a candidate already
    (then None): (seconds, spread, kernel times), seconds inf when it is wrong or fails."""
    choice = _core.TuningChoice()
    mark, prepared = _prepare(run.runtime, program, choice)
    if mark in run.fingerprints:
        run.descent_duplicates += 1
        return None
    run.programs.append(program)
    p = len(run.programs) - 1
    run.prepared[(p, str(choice))] = prepared
    run.fingerprints[mark] = len(run.order)
    run.order.append((p, choice))
    run.order_marks.append(mark)
    res = CandidateResult(rank=p, cost=program.cost, choice=f"{label}: "
                          f"{_label(program, choice)}", fingerprint=mark)
    if run.model is not None:
        res.estimate = estimate(run, p, choice)
    run.results.append(res)
    attempt(run, p, choice, res)
    if res.status != "ok":
        return (float("inf"), 0.0, [])
    times = next((t for q, t in run.kernel_times if q == p), [])
    return (res.seconds, res.spread or 0.0, times)


def pick(run: SearchRun) -> None:
    """Pick: among the re-timed finalists (none re-timed: the timed candidates), the cost
    model's pick unless a challenger is faster by more than the margin
    (timing.pick); untimed, the first usable candidate; each checked on the sets it was not
    yet (check.check_rest) before it is taken; none usable, the graph as written,
    itself checked kernel by kernel where the candidates were (check.check_as_written). The
    runtime adopts it. When the runtime still holds the winner, it only maps its ids."""
    usable = [i for i, r in enumerate(run.results) if r.status in ("ok", "untimed")]
    best = _pick_checked(run, usable)
    wrong = getattr(run, "reference_wrong", None)
    if best is None and wrong is None:
        wrong = check_as_written(run)
    if best is None and wrong:
        run.report.candidates = run.results + run.skipped
        run.cx.last_search_report = run.report  # what failed, for the caller to read
        raise CompileError(f"search: {run.core_rt.name} runs this graph wrongly: as written, "
                           f"{wrong}; and no candidate passed its check")
    run.report.winner = best
    if best is None:
        run.win_program = run.original
        run.win_choice = _core.TuningChoice()
        run.win_text = run.original_text
    else:
        p, run.win_choice = run.order[best]
        run.win_program = run.programs[p]
        run.win_text = run.texts[p]
    with _Phase(run.report, "load"):
        if run.report.winner is not None and run.report.winner == run.compiled:
            run.runtime._rt.clear_data()  # the check inputs must not stand in for the user's
            run.runtime._adopt(run.cx, run.win_program)
        else:
            p, _ = run.order[run.report.winner] if run.report.winner is not None else (-1, None)
            prepared = run.prepared.get((p, str(run.win_choice)))
            run.runtime._load(run.cx, run.win_program, run.win_choice, prepared)


def _pick_checked(run: SearchRun, usable: list):
    """The fastest of ``usable`` (timing.pick: re-timed finalists first, the cost model's
    pick the incumbent), or the first untimed, that passes the check sets it was not yet
    checked on (check_rest); one that fails is dropped as wrong and the pick goes on. None
    when none is left."""
    while usable:
        timed = {i: (run.results[i].seconds, run.results[i].spread or 0.0)
                 for i in usable if run.results[i].seconds is not None}
        retimed = {i: t for i, t in timed.items() if run.results[i].retimed}
        if timed:
            best, run.report.margin = pick_fastest(retimed or timed, 0)
        else:
            best = usable[0]
        if check_rest(run, best, functools.partial(_hold, run, best)):
            return best
        usable.remove(best)
    return None


def _hold(run: SearchRun, i: int) -> None:
    """Compiles candidate ``i`` into the runtime unless it holds it (from the runtime's
    cache: it was compiled before)."""
    if run.compiled != i:
        p, choice = run.order[i]
        run.compiled = i
        with _Phase(run.report, "compile"):
            run.core_rt.compile_prepared(prepared_of(run, p, choice))


def store(run: SearchRun) -> None:
    """Store: the winner's program text and tuning choice go to the search cache (not
    when no candidate was usable), with the core and rules they were made with."""
    if run.report.winner is None:
        return
    info = {"cost": run.win_program.cost, "candidates": len(run.results),
            "made_with": run.made_with}
    params = [[n, v] for n, v in run.win_choice.params]
    try:
        run.report.cache_path = search_cache.store(run.directory, run.key,
                                                   run.win_text, params, run.budget, info)
    except OSError as e:  # a read-only or full disk: the search itself succeeded
        print(f"luminal: search result not cached ({run.directory}: {e.strerror or e})",
              file=sys.stderr)


def finish(run: SearchRun, verbose: bool):
    """The report goes to ``cx.last_search_report`` (and stderr, if ``verbose``); returns
    the runtime, loaded."""
    run.report.seconds = time.perf_counter() - run.start
    run.cx.last_search_report = run.report
    if verbose:
        print(run.report, file=sys.stderr)
    return run.runtime
