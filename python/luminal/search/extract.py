"""The candidates of a search: programs extracted from the search space best-first, times the
runtime's tuning choices, ordered (_order), told apart by what the runtime would run
(_prepare), ranked by the calibrated cost model when there is one (estimate), and the
combination of the fastest kernels (_combine). Not their compiling, checking or timing."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from .. import _core
from ..errors import LuminalError
from . import cost
from .report import _Phase

if TYPE_CHECKING:
    from .driver import SearchRun

# Programs extracted per distinct candidate wanted, so that duplicates can be skipped.
EXTRACT_PER_CANDIDATE = 3
# With a calibrated cost model (cost.py), budget 1 picks the best estimate among this many
# of the e-graph's programs (its best, then one per schedule: SearchSpace.extract), lowered
# but not compiled (a few ms each on a 2-layer Llama).
RANK_POOL = 12


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


def _prepare(runtime, program, choice) -> tuple:
    """(fingerprint, prepared): ``program`` under ``choice`` lowered once by ``runtime``
    (Runtime._prepare), and the fingerprint of what it would run; a program it cannot
    lower is its own, unprepared (None: the compile will say why)."""
    try:
        prepared = runtime._prepare(program, choice)
        return prepared.fingerprint, prepared
    except LuminalError as e:
        text = f"unrendered {program.text()} {choice}: {e}"
        return hashlib.sha256(text.encode()).hexdigest()[:32], None


def prepared_of(run: SearchRun, p: int, choice):
    """Candidate ``p`` under ``choice`` as the runtime lowered it (_prepare), lowered now if
    it was not yet (budget 1 fingerprints nothing); kept in run.prepared, so a candidate is
    lowered once for its fingerprint, its estimate, its compile and its load. Raises
    LuminalError where it cannot be lowered."""
    key = (p, str(choice))
    if run.prepared.get(key) is None:
        run.prepared[key] = run.runtime._prepare(run.programs[p], choice)
    return run.prepared[key]


def saturate(run: SearchRun) -> None:
    """The search space: the e-graph of the graph saturated with the rules (run.space)."""
    with _Phase(run.report, "saturation"):
        run.space = run.cx._search_space.build(run.cx, run.rules, run.core_rt)
    run.report.saturation = str(run.space.report)


def extract(run: SearchRun) -> None:
    """Candidates: the search space's programs (saturate), best-first by the cost model,
    times the runtime's tuning choices, in the order they are tried (_order), skipping any
    that runs as one before it (_prepare), at most the budget of distinct ones. With room
    to spare, one slot of the budget goes to the combination of the fastest kernels (see
    _combine), when the runtime can time its kernels one by one."""
    run.timing_kernels = run.budget > 1 and run.core_rt.can_time_kernels()
    run.combine = run.budget >= 3 and run.timing_kernels
    count = run.budget - 1 if run.combine else run.budget
    marks = {}  # (program text, choice text) -> (fingerprint, prepared), across extractions
    run.prepared = {}  # (program index, choice text) -> its Prepared (prepared_of)
    # One program past the budget's distinct ones: with one duplicate among them (a schedule
    # that lowers as the pick does, the common case), no second extraction (the k-best list
    # is the same list, longer: on a 1B Llama extracting 4 took 0.42 s, 3 then 9 1.02 s).
    wanted = RANK_POOL if run.model is not None and run.budget == 1 else count + (count > 1)
    for again in (False, True):
        with _Phase(run.report, "extraction"):
            run.programs = run.space.extract(wanted, run.dims)
            choices = [list(run.core_rt.tuning_space(p.graph)) or [_core.TuningChoice()]
                       for p in run.programs]
            pairs = _order(run.programs, choices, sum(len(c) for c in choices))
        with _Phase(run.report, "fingerprint"):
            _take_distinct(run, pairs, count, marks)
        # Short of distinct ones while the space may hold more: extract further, once.
        if again or run.budget == 1 or len(run.order) == count or len(run.programs) < wanted:
            break
        wanted = count * EXTRACT_PER_CANDIDATE
    run.texts = _Texts(run.programs)
    if run.model is not None:
        with _Phase(run.report, "cost model"):
            rank_by_model(run, pairs if run.budget == 1 else None)


def _take_distinct(run: SearchRun, pairs: list, count: int, marks: dict) -> None:
    """run.order: the first ``count`` of ``pairs`` that run as none before them (budget 1:
    the first, unfingerprinted); run.report.duplicates counts those skipped."""
    run.fingerprints = {}  # fingerprint -> index in order
    run.order = []         # (program index, choice)
    run.order_marks = []   # the fingerprint of each
    run.report.duplicates = 0
    for p, choice in pairs:
        if len(run.order) == count:
            break
        mark = ""
        if count > 1:
            key = (run.programs[p].text(), str(choice))
            if key not in marks:
                marks[key] = _prepare(run.runtime, run.programs[p], choice)
            mark, run.prepared[(p, str(choice))] = marks[key]
            if mark in run.fingerprints:
                run.report.duplicates += 1
                continue
            run.fingerprints[mark] = len(run.order)
            run.precompiler.add(run.prepared[(p, str(choice))])
        run.order.append((p, choice))
        run.order_marks.append(mark)


def estimate(run: SearchRun, p: int, choice) -> float:
    """The calibrated model's seconds for candidate ``p`` under ``choice`` (inf when the
    runtime cannot lower it); its kernels' estimates go to kernel_estimates."""
    key = (p, str(choice))
    if key not in run.kernel_estimates:
        try:
            work = cost.kernel_work(prepared_of(run, p, choice), run.dims, run.core_rt)
            run.kernel_estimates[key] = run.model.kernel_seconds(work)
            run.kernel_roots[key] = [w.root for w in work]
        except LuminalError:
            run.kernel_estimates[key] = None
    kernels = run.kernel_estimates[key]
    return float("inf") if kernels is None else float(kernels.sum())


def _model_combination(run: SearchRun):
    """Budget 1's combination of the fastest kernels by the model: per e-class, the
    schedule whose kernel it estimates fastest in the pool (_combine), extracted; an
    (index in programs, choice) pair, or None."""
    estimated = []
    for p, choice in run.order:
        key = (p, str(choice))
        if run.kernel_estimates.get(key) is not None and not choice.params:
            estimated.append((p, list(zip(run.kernel_roots[key],
                                          run.kernel_estimates[key]))))
    chosen = _combine(run.programs, estimated)
    if not chosen:
        return None
    run.programs.append(run.space.extract_choosing(chosen, run.dims))
    return (len(run.programs) - 1, _core.TuningChoice())


def rank_by_model(run: SearchRun, pool) -> None:
    """Orders the candidates by the calibrated model's estimate (the e-graph's order breaks
    ties), so that its pick is the first: the incumbent of timing.pick. Budget 1
    (``pool``: the extraction's order) estimates the first RANK_POOL and the model's
    combination of their fastest kernels (_model_combination), and keeps the best."""
    if pool is not None:
        run.order = list(pool[:RANK_POOL])
        for p, choice in run.order:
            estimate(run, p, choice)  # each kernel's estimate, for the combination
        combined = _model_combination(run)
        if combined is not None:
            run.order.append(combined)
        run.order_marks = [""] * len(run.order)
    est = [estimate(run, p, choice) for p, choice in run.order]
    ranked = sorted(range(len(run.order)), key=lambda i: (est[i], i))
    if pool is not None:
        ranked = ranked[:1]
    run.order = [run.order[i] for i in ranked]
    run.order_marks = [run.order_marks[i] for i in ranked]
    run.fingerprints = {m: i for i, m in enumerate(run.order_marks) if m}


def insert_combination(run: SearchRun, position: int) -> int:
    """Extracts the program that takes, per e-class, the schedule whose kernel ran
    fastest (_combine) and puts it at ``position`` in the order, unless it runs as a
    candidate already. Returns its index in programs, or -1."""
    chosen = _combine(run.programs, run.kernel_times)
    with _Phase(run.report, "extraction"):
        program = run.space.extract_choosing(chosen, run.dims) if chosen else None
    if program is None:
        return -1
    mark, prepared = _prepare(run.runtime, program, _core.TuningChoice())
    if mark in run.fingerprints:
        run.report.duplicates += 1
        return -1
    run.programs.append(program)
    combined = len(run.programs) - 1
    run.prepared[(combined, str(_core.TuningChoice()))] = prepared
    run.fingerprints[mark] = position
    run.order.insert(position, (combined, _core.TuningChoice()))
    run.order_marks.insert(position, mark)
    return combined
