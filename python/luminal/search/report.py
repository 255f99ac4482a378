"""What a search tells its user: each candidate's result (CandidateResult), the report left in
``cx.last_search_report`` (SearchReport, its text and plot), the seconds of each phase, the
progress line, and how a candidate and a kernel are described. Not the choosing itself
(driver.py and timing.py)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import cost

if TYPE_CHECKING:
    from .driver import SearchRun


@dataclass
class CandidateResult:
    rank: int                 # position in the cost model's order of programs
    choice: str               # the tuning choice
    cost: float               # the cost model's estimate
    # "ok", "untimed", "wrong" (disagrees with the reference), "failed", "skipped" (time limit),
    # "lost" (its checking run passed timing.lost_after: stopped there, not usable)
    status: str = "untimed"
    seconds: float | None = None  # median execute time (of the re-timing, when re-timed)
    spread: float | None = None   # the interquartile range of those samples
    retimed: bool = False     # a finalist, re-timed in interleaved rounds
    fingerprint: str = ""     # what the runtime runs, hashed (search: _fingerprint)
    detail: str = ""
    failed_set: str = ""      # "wrong": the check set it disagreed on
    # Checked on the ordinary set only so far: the pick checks the others before it takes
    # it (check.check_rest); a candidate that lost stays so.
    deferred: bool = False
    estimate: float | None = None  # the calibrated cost model's seconds (cost.py)


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
    # (timing.pick), seconds; None when nothing was timed.
    margin: float | None = None
    seconds: float = 0.0
    # The winner's kernels, slowest first, when the runtime times kernels one by one:
    # (seconds, what the kernel computes: op, shape and schedule).
    winner_kernels: list = field(default_factory=list)
    # Wall seconds per step of the search, in the order first met: "saturation",
    # "extraction", "reference" (compiling it and drawing the check inputs, which overlap),
    # "reference run", "compile", "check", "timing", "load" (the winner into the runtime).
    phases: dict = field(default_factory=dict)
    # The "check" phase split by check set (check_sets' names): wall seconds over every
    # candidate, kernel-by-kernel checks included.
    check_seconds: dict = field(default_factory=dict)
    # With a calibrated cost model: Spearman's rank correlation of its estimates with the
    # measured seconds, over the timed candidates and over their kernels (kernel_times).
    rank_correlation: float | None = None
    kernel_rank_correlation: float | None = None
    descent: str = ""  # what the descent (descent.py) tried and kept
    # The progress line of the search under way (_Progress), whose step _Phase names.
    progress: object = field(default=None, repr=False, compare=False)

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
            note = " (checked on the ordinary set only)" if c.deferred else ""
            lines.append(f" {mark} program {c.rank} [{c.choice}] cost {c.cost:.4g}: {c.status} "
                         f"{t} {c.detail}{note}".rstrip())
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
        if self.check_seconds:
            lines.append("   check seconds by set: " + ", ".join(
                f"{name} {sec:.2f}" for name, sec in self.check_seconds.items()))
        if self.winner_kernels:
            total = sum(sec for sec, _ in self.winner_kernels)
            lines.append(f"   winner's kernels ({len(self.winner_kernels)}, {total * 1e3:.3f} ms "
                         f"in one run), slowest first:")
            for sec, what in self.winner_kernels[:8]:
                lines.append(f"     {sec * 1e3:9.3f} ms  {what}")
        return "\n".join(lines)

    def plot(self, path) -> None:
        """Draws measured against estimated time per timed candidate into ``path`` (a PNG,
        SVG or PDF; matplotlib, the ``plot`` extra): plot.plot_report."""
        from .plot import plot_report

        plot_report(self, path)


class _Phase:
    """``with _Phase(report, name):`` adds the block's wall seconds to report.phases[name], and
    names the step on the search's progress line (report.progress), if it has one."""

    def __init__(self, report: SearchReport, name: str):
        self.report = report
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()
        if self.report.progress is not None:
            self.report.progress.step(self.name)

    def __exit__(self, *exc):
        seconds = time.perf_counter() - self.t0
        self.report.phases[self.name] = self.report.phases.get(self.name, 0.0) + seconds


class StatusLine:
    """The running search's status ("compile, candidate 2/4, best 85.210 ms"), for
    whoever draws the terminal's line: a display of the caller's that claims it (the CLI's
    spinner, cli.Progress, which shows it beside its own label) or else the search's
    _Progress. "" while no search runs."""

    text = ""
    claimed = False


class _Progress:
    """The search's progress line on stderr: its step (a phase) and how far it is through
    its candidates. Drawn in place (a carriage return) on a terminal only, once the search
    has run 1 s or when asked (``mode`` True); into a pipe or a log, nothing unless asked,
    and then one line per candidate. ``mode`` False: never. While a caller's display claims
    the line (StatusLine), it draws the status there instead."""

    def __init__(self, mode, total: int | None = None):
        self.mode = mode
        self.total = total
        self.start = time.perf_counter()
        self.shown = False
        self.tty = sys.stderr.isatty()
        self.name = ""
        self.done = 0
        self.best = None
        self.written = -1  # the candidates done at the last line written into a pipe

    def step(self, name: str) -> None:
        self.name = name
        self._draw(False)

    def update(self, done: int, best: float | None) -> None:
        self.done, self.best = done, best
        self._draw(True)

    def status(self) -> str:
        text = self.name
        if self.total:
            text += f", candidate {min(self.done + 1, self.total)}/{self.total}"
        if self.best is not None:
            text += f", best {self.best * 1e3:.3f} ms"
        return text

    def _draw(self, candidate_done: bool) -> None:
        StatusLine.text = self.status()
        if self.mode is False or StatusLine.claimed:
            return
        if not self.tty:
            if self.mode is True and candidate_done and self.done != self.written:
                self.written = self.done
                sys.stderr.write(f"luminal search: {self.done}/{self.total} done"
                                 f"{self._best_text()}\n")
                sys.stderr.flush()
            return
        if self.mode is None and time.perf_counter() - self.start < 1.0:
            return
        sys.stderr.write(f"\rluminal search: {StatusLine.text}, "
                         f"{time.perf_counter() - self.start:.1f} s\033[K")
        sys.stderr.flush()
        self.shown = True

    def _best_text(self) -> str:
        return f", best {self.best * 1e3:.3f} ms" if self.best is not None else ""

    def close(self) -> None:
        StatusLine.text = ""
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


def fill_report(run: SearchRun) -> None:
    """Report: every candidate, the winner's program text, with a calibrated model its rank
    correlations (_rank_correlation), and the winner's kernels, slowest first."""
    run.report.candidates = run.results + run.skipped
    run.report.winner_program = run.win_text
    if run.model is not None:
        _rank_correlation(run)
    if run.report.winner is not None:
        run.report.winner_kernels = _winner_kernels(run)


def _rank_correlation(run: SearchRun) -> None:
    """Spearman of the model's estimates with the measured seconds: over the timed
    candidates, and over their kernels (kernel_times)."""
    timed = [r for r in run.results if r.status == "ok" and r.estimate is not None
             and r.seconds is not None]
    if len(timed) >= 3:
        run.report.rank_correlation = cost.spearman(
            [r.estimate for r in timed], [r.seconds for r in timed])
    est, sec = [], []
    for p, times in run.kernel_times:
        choice = next(c for q, c in run.order if q == p)
        kernels = run.kernel_estimates.get((p, str(choice)))
        if kernels is not None and len(kernels) == len(times):
            est += list(kernels)
            sec += [t for _, t in times]
    if len(sec) >= 3:
        run.report.kernel_rank_correlation = cost.spearman(est, sec)


def _winner_kernels(run: SearchRun) -> list:
    """(seconds, what the kernel computes) for the winner's kernels, slowest first."""
    p_win = run.order[run.report.winner][0]
    times = next((t for q, t in run.kernel_times if q == p_win), [])
    kernels = [(sec, _kernel_desc(run.win_program.graph, root)) for root, sec in times]
    return sorted(kernels, key=lambda t: -t[0])
