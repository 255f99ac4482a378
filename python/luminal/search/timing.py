"""How the search times candidates and tells a real difference from noise: a first timing of
each (repeats, median, a race that stops hopeless ones), then the finalists re-timed together
in interleaved rounds, each with its spread, and the pick that keeps the incumbent (the cost
model's pick) unless a challenger is faster by more than the spread; the search's phases that
time (time_candidate, retime). Not the checking of candidates (check.py).
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING

from ..errors import LuminalError
from .check import _set_inputs
from .extract import prepared_of
from .report import CandidateResult, _Phase

if TYPE_CHECKING:
    from .driver import SearchRun

SLOW_RUN = 0.25  # seconds: a candidate whose checking run took longer is timed by that run
# A candidate is timed no further once RACE_SAMPLES runs all took over RACE_MARGIN x the best
# median so far: it cannot win, and a 16-layer model's slow candidates took seconds each.
RACE_SAMPLES = 2
RACE_MARGIN = 1.25
# A candidate whose checking run took over LOST_FLOOR and LOST_MARGIN x the best median so far
# has lost already: that run is its time, and its kernels are not timed one by one (at 1B
# parameters a GEMM at one row took 1 s a run against 0.09 s for the GEMV). Faster ones are
# still timed kernel by kernel: the combination of the fastest kernels reads their times.
LOST_MARGIN = 2.0
# The checking run is stopped there too (lost_after): a 1B model's candidate running a GEMM at
# one row ran 0.25 s of kernels (and the checker's samples beside them) when the floor was
# SLOW_RUN, against 0.065 s for the best.
LOST_FLOOR = 0.1
FINALISTS = 3         # the fastest candidates re-timed together (and the incumbent)
RETIME_ROUNDS = 3     # rounds of re-timing; each runs every finalist in turn
RETIME_RUNS = 3       # timed runs per finalist per round, after one warm-up
RETIME_SECONDS = 1.0  # re-timing is skipped when it would take longer (big programs)
# The least margin a challenger must win by, as a fraction of the incumbent's time: identical
# code timed 28% apart on a busy machine, and a spread of three rounds can come out small.
MIN_MARGIN = 0.03


def time_runs(core_rt, dims, warmup: int, repeats: int, best: float | None = None,
              samples: list | None = None) -> list:
    """``samples`` (seconds of runs already made) and more runs, up to ``repeats`` in all,
    after ``warmup`` more (2 s of runs at most). A candidate whose first RACE_SAMPLES all
    took over RACE_MARGIN x ``best`` (the fastest median so far) has lost the race: it stops
    there."""
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
    return times


def spread(samples: list) -> float:
    """The noise of one candidate's samples: their interquartile range (0 for fewer than 2)."""
    if len(samples) < 2:
        return 0.0
    q = statistics.quantiles(samples, n=4, method="inclusive")
    return q[2] - q[0]


def rounds_spread(rounds: list) -> float:
    """The noise of a finalist re-timed in rounds (a list of sample lists): how far its round
    medians moved (the machine's slow and fast spells), or the samples' spread if larger."""
    medians = [statistics.median(r) for r in rounds if r]
    pooled = [t for r in rounds for t in r]
    return max(max(medians) - min(medians), spread(pooled)) if medians else 0.0


def retime_fits(medians: list) -> bool:
    """Whether re-timing candidates of these first medians fits in RETIME_SECONDS."""
    return sum(medians) * RETIME_ROUNDS * (RETIME_RUNS + 1) <= RETIME_SECONDS


def margin(incumbent: tuple, challenger: tuple) -> float:
    """How much faster than the incumbent a challenger must be to replace it; each is
    (median, spread)."""
    return max(incumbent[1], challenger[1], MIN_MARGIN * incumbent[0])


def pick(timed: dict, incumbent) -> tuple:
    """(winner, margin): from ``timed`` ({key: (median, spread)}), the fastest, unless the
    ``incumbent`` (a key of timed, or None) is within the margin of it, which then stays."""
    fastest = min(timed, key=lambda k: (timed[k][0], k))
    if incumbent is None or incumbent not in timed:
        return fastest, max(timed[fastest][1], MIN_MARGIN * timed[fastest][0])
    needed = margin(timed[incumbent], timed[fastest])
    if timed[incumbent][0] - timed[fastest][0] > needed:
        return fastest, needed
    return incumbent, needed


def _best_time(results: list):
    times = [r.seconds for r in results if r.status == "ok" and r.seconds is not None]
    return min(times) if times else None


def lost_after(best: float | None) -> float:
    """The seconds a candidate's checking run may take before it has lost to the fastest
    so far (``best``, its median; None: nothing timed yet, no limit, 0): over LOST_FLOOR and
    LOST_MARGIN x best. The check then stops (check.check_candidate)."""
    return 0.0 if best is None else max(LOST_FLOOR, LOST_MARGIN * best)


def time_candidate(run: SearchRun, p: int, res: CandidateResult, t_check: float | None) -> None:
    """Times candidate ``p``, just run once (checked: the first warm-up): its kernels one
    by one when the runtime can (their total is the first sample, or with more warm-ups
    asked for, the second warm-up), then repeats (timing.time_runs), unless its
    check run took over SLOW_RUN, which then is its only sample, and all of its timing where
    it is also over LOST_MARGIN x the best so far."""
    samples = []
    warmups = run.warmup - 1
    best = _best_time(run.results)
    if t_check is not None and best is not None and t_check > lost_after(best):
        res.seconds, res.spread, res.status = t_check, 0.0, "ok"
        return
    if run.timing_kernels:
        kernels = run.core_rt.kernel_times(run.dims)
        run.kernel_times.append((p, kernels))
        if warmups > 0:
            warmups -= 1
        else:
            samples.append(sum(seconds for _, seconds in kernels))
    if t_check is not None and t_check > SLOW_RUN:
        samples = [t_check]
    else:
        samples = time_runs(run.core_rt, run.dims, warmups, run.repeats,
                            best, samples)
    res.seconds = statistics.median(samples)
    res.spread = spread(samples)
    res.status = "ok"


def retime(run: SearchRun) -> None:
    """Re-times the finalists together: the FINALISTS fastest candidates within
    RACE_MARGIN of the best, and the cost model's pick (the first candidate) if within it,
    in RETIME_ROUNDS interleaved rounds (each compiles them in turn, from the runtime's
    cache, on the ordinary inputs: a slow spell of the machine falls on all of them). Not
    when it would take over RETIME_SECONDS: their first timing stands."""
    timed = [i for i, r in enumerate(run.results) if r.status == "ok"]
    if len(timed) < 2:
        return
    best = min(run.results[i].seconds for i in timed)
    fast = sorted((i for i in timed if run.results[i].seconds <= RACE_MARGIN * best),
                  key=lambda i: (run.results[i].seconds, i))
    finalists = fast[:FINALISTS]
    if 0 in fast and 0 not in finalists:
        finalists.append(0)
    if len(finalists) < 2 or \
            not retime_fits([run.results[i].seconds for i in finalists]):
        return
    try:
        with _Phase(run.report, "timing"):
            rounds = _retime_rounds(run, finalists)
    except LuminalError:  # a recompile that failed: the first timings stand
        run.compiled = None
        return
    for i in finalists:
        res = run.results[i]
        res.seconds = statistics.median([t for r in rounds[i] for t in r])
        res.spread = rounds_spread(rounds[i])
        res.retimed = True


def _retime_rounds(run: SearchRun, finalists: list) -> dict:
    """{finalist: its samples of each round}: RETIME_ROUNDS rounds, each starting one
    finalist further along, each compiling and timing every finalist in turn."""
    rounds = {i: [] for i in finalists}
    for round_index in range(RETIME_ROUNDS):
        start = round_index % len(finalists)
        for i in finalists[start:] + finalists[:start]:
            p, choice = run.order[i]
            prog = run.programs[p]
            run.compiled = i
            run.core_rt.compile_prepared(prepared_of(run, p, choice))
            _set_inputs(run.core_rt, prog.inputs, run.inputs)
            rounds[i].append(time_runs(run.core_rt, run.dims, 1, RETIME_RUNS))
    return rounds
