"""Search over interacting choices: from the fastest candidate timed, a coordinate descent tries
each kernel's alternatives (SearchSpace.alternatives) one e-class at a time, the classes of the
slowest kernels first (by kernel_times), keeping a move when its program runs faster; then an
evolutionary step mutates several classes at once from the best. Not the attempt itself: the
caller compiles, checks and times each program (``attempt``), never re-timing a fingerprint."""

from __future__ import annotations

import random
import time

from .. import _core

# A move is kept when its program is faster than the best by more than this fraction (or the
# best's spread, if larger): a noisy tie does not walk the search away.
KEEP_MARGIN = 0.02
# Classes an evolutionary mutation changes at once.
MUTATION_WIDTH = 3


def program_choices(program) -> dict:
    """{e-class: schedule text} of each node of ``program`` ("" = unscheduled)."""
    out = {}
    graph, node_class = program.graph, program.node_class
    for node in graph.topo_order():
        cls = node_class[node] if 0 <= node < len(node_class) else -1
        if cls >= 0:
            out[cls] = _core.schedule_to_string(graph.node_schedule(node))
    return out


def class_order(program, kernel_times: list, alternatives: dict) -> list:
    """The classes of ``program`` that hold alternatives, those of its slowest kernels first
    (kernel_times: [(root node, seconds)]), then the rest in class order."""
    node_class = program.node_class
    seconds = {}
    for root, sec in kernel_times:
        cls = node_class[root] if 0 <= root < len(node_class) else -1
        seconds[cls] = seconds.get(cls, 0.0) + sec
    mine = [c for c in program_choices(program) if c in alternatives]
    return sorted(mine, key=lambda c: (-seconds.get(c, 0.0), c))


class Descent:
    """One descent: ``space`` (SearchSpace), ``dims``, ``attempt(program, label)`` -> (seconds,
    spread, kernel_times) or None (a duplicate, wrong or failed program), with at most
    ``candidates`` attempts and ``seconds`` of wall time."""

    def __init__(self, space, dims: dict, attempt, candidates: int, seconds: float | None,
                 seed: int = 0):
        self.space = space
        self.dims = dims
        self.attempt = attempt
        self.left = candidates
        self.deadline = None if seconds is None else time.perf_counter() + seconds
        self.rng = random.Random(seed)
        self.alternatives = {int(c): list(t) for c, t in space.alternatives().items()}
        self.tried = set()  # choice maps already extracted (as sorted tuples)
        self.moves_kept = 0

    def _spent(self) -> bool:
        return self.left <= 0 or (self.deadline is not None and
                                  time.perf_counter() > self.deadline)

    def _try(self, chosen: dict, label: str):
        key = tuple(sorted(chosen.items()))
        if key in self.tried:
            return None
        self.tried.add(key)
        program = self.space.extract_choosing(chosen, self.dims)
        if program is None:
            return None
        result = self.attempt(program, label)
        if result is not None:
            self.left -= 1
        return program, result

    def run(self, best_program, best_seconds: float, best_spread: float, kernel_times: list):
        """Coordinate descent, then mutations, from ``best_program``; returns the number of
        moves kept."""
        if not self.alternatives:
            return 0
        best = (best_program, best_seconds, best_spread or 0.0, kernel_times)
        improved = True
        while improved and not self._spent():
            improved = False
            current = program_choices(best[0])
            for cls in class_order(best[0], best[3], self.alternatives):
                for text in self.alternatives[cls]:
                    if self._spent() or text == current.get(cls):
                        continue
                    chosen = {**current, cls: text}
                    got = self._try(chosen, f"descent: class {cls} -> {text or 'default'}")
                    if got and self._better(got[1], best):
                        best = (got[0], *got[1])
                        self.moves_kept += 1
                        improved = True
                        break
                if improved:
                    break
        stale = 0
        while not self._spent() and stale < 4 * MUTATION_WIDTH:
            current = program_choices(best[0])
            classes = [c for c in current if c in self.alternatives]
            if not classes:
                break
            chosen = dict(current)
            for cls in self.rng.sample(classes, min(MUTATION_WIDTH, len(classes))):
                chosen[cls] = self.rng.choice(self.alternatives[cls])
            got = self._try(chosen, "mutation")
            if got and self._better(got[1], best):
                best = (got[0], *got[1])
                self.moves_kept += 1
                stale = 0
            else:
                stale += 1
        return self.moves_kept

    @staticmethod
    def _better(result, best) -> bool:
        if result is None:
            return False
        seconds = result[0]
        return seconds < best[1] - max(best[2], KEEP_MARGIN * best[1])
