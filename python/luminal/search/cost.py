"""The search's calibrated cost model: a kernel's time estimated from the work of the kernel the
runtime would run (csrc/kernel/kernel_work.h: bytes, loads, flops, a matmul's multiply-adds,
a parallel region) with per-machine constants fitted by least squares to measured
``kernel_times``, and cached on disk beside the search cache. It ranks candidates; it decides
nothing about correctness. CpuRuntime only (the runtime that reports its kernels' work);
elsewhere the e-graph's cost stands. Pure: no graph, nn or runtime here; the probe graphs
the constants are fitted on are calibrate.py's."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from .. import _core
from . import cache

FORMAT = 2  # 2: parallel kernels' work split over their team
# The terms of an estimate, each a count times a fitted seconds-per-unit: a launch, a parallel
# region (its fork and join), bytes of the buffers read and written, loads issued (cache
# traffic), arithmetic, transcendental ops, a matmul's flops (a GEMM runs near the peak) and
# the runtime's cycle estimate of its matmul under its tiling (runtime/cpu/cpu_kernel_cost.h).
TERMS = ("launch", "parallel", "bytes", "loads", "flops", "special", "matmul_flops",
         "matmul_cycles")


def supported(runtime) -> bool:
    """Whether ``runtime`` reports its kernels' work (Runtime::reports_kernel_work)."""
    return bool(runtime._rt.reports_kernel_work())


def kernel_work(prepared, dims: dict, runtime) -> list:
    """The work of each kernel ``runtime`` (a Runtime or its core object) runs for
    ``prepared`` (Runtime._prepare: a candidate lowered once)."""
    return list(getattr(runtime, "_rt", runtime).kernel_work(prepared, dims))


def threads_of(runtime) -> int:
    """The OpenMP threads of a runtime (or of its core object): what kernel_work splits by."""
    return int(getattr(getattr(runtime, "_rt", runtime), "threads", 1))


def vector_width_of(runtime) -> int:
    """The floats per vector a runtime's kernels are built for."""
    width = int(getattr(getattr(runtime, "_rt", runtime), "vector_width", 0))
    return width or int(_core.cpu_native_vector_width())


def features(work) -> np.ndarray:
    """One row per kernel, a column per TERMS. A parallel kernel's work is split over its team
    (a matmul's cycles, the bytes it moves, its arithmetic); the region's fork and join is
    the ``parallel`` term."""
    return np.array([[1.0, float(w.parallel)] +
                     [v / w.team for v in (w.bytes_read + w.bytes_written, w.loads, w.flops,
                                           w.special, w.matmul_flops, w.matmul_cycles)]
                     for w in work], dtype=np.float64).reshape(-1, len(TERMS))


def _nonneg_lstsq(a: np.ndarray, b: np.ndarray, iterations: int = 100) -> np.ndarray:
    """min |a x - b| with x >= 0: Lawson and Hanson's active set method."""
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(iterations):
        grad = a.T @ (b - a @ x)
        if passive.all() or grad[~passive].max(initial=0) <= 1e-12 * max(abs(grad).max(), 1):
            break
        passive[np.argmax(np.where(passive, -np.inf, grad))] = True
        while True:
            z = np.zeros(n)
            z[passive], *_ = np.linalg.lstsq(a[:, passive], b, rcond=None)
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
    return x


class CostModel:
    """Seconds per unit of each of TERMS (``coef``)."""

    def __init__(self, coef):
        self.coef = np.asarray(coef, dtype=np.float64)

    def kernel_seconds(self, work) -> np.ndarray:
        return features(work) @ self.coef if work else np.zeros(0)

    def program_seconds(self, prepared, dims: dict, runtime) -> float:
        return float(self.kernel_seconds(kernel_work(prepared, dims, runtime)).sum())

    @staticmethod
    def fit(rows: np.ndarray, seconds: np.ndarray) -> "CostModel":
        """Fits the log of each estimate to the log of its measured time (a ranking is about
        ratios: a 10 us kernel weighs as much as a 10 ms one, and an estimate 10x low costs as
        much as one 10x high), by Levenberg-Marquardt over the logs of the constants, from the
        nonnegative least squares fit of the relative error."""
        scale = features_scale(rows)
        f = rows / scale
        start = _nonneg_lstsq(f / seconds[:, None], np.ones(len(seconds)))
        theta = np.log(np.maximum(start, 1e-9 * max(start.max(), 1e-30)))
        target = np.log(seconds)

        def residual(th):
            return np.log(np.maximum(f @ np.exp(th), 1e-30)) - target

        r = residual(theta)
        damping = 1e-3
        for _ in range(LM_STEPS):
            est = np.maximum(f @ np.exp(theta), 1e-30)
            jac = f * np.exp(theta)[None, :] / est[:, None]
            jtj = jac.T @ jac
            step = np.linalg.solve(jtj + damping * np.diag(np.diag(jtj) + 1e-12), -jac.T @ r)
            trial = np.clip(theta + step, -200, 50)
            r_trial = residual(trial)
            if r_trial @ r_trial < r @ r:
                theta, r, damping = trial, r_trial, damping / 3
            else:
                damping *= 4
        coef = np.exp(theta) / scale
        # A parallel region's wake-up is bimodal on a loaded machine (microseconds, or a
        # scheduler tick when a thread waits for a busy core): the log fit follows the median
        # and would price it at nothing while a third of them stall. Its price is the mean
        # extra time of the parallel kernels over the rest of their estimate.
        parallel = TERMS.index("parallel")
        hit = rows[:, parallel] > 0
        if hit.any():
            rest = rows @ coef - rows[:, parallel] * coef[parallel]
            extra = float(np.mean(seconds[hit] - rest[hit]) / np.mean(rows[hit, parallel]))
            coef[parallel] = max(coef[parallel], extra)
        return CostModel(coef)


LM_STEPS = 60


def features_scale(rows: np.ndarray) -> np.ndarray:
    return np.maximum(rows.max(axis=0), 1e-30)


def spearman(a, b) -> float:
    """Spearman's rank correlation (average ranks for ties); nan for fewer than 3 pairs."""
    if len(a) < 3:
        return float("nan")

    def ranks(v):
        v = np.asarray(v, dtype=np.float64)
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for value in np.unique(v):  # ties share their mean rank
            same = v == value
            r[same] = r[same].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def concordance(estimates, seconds, ratio: float = 2.0) -> float:
    """Of the pairs whose measured times differ by more than ``ratio``, the fraction the
    estimates order the same way (nan when there is none): a ranking figure that a loaded
    machine's noise does not move."""
    agree = total = 0
    for i in range(len(seconds)):
        for j in range(len(seconds)):
            if seconds[j] > ratio * seconds[i]:
                total += 1
                agree += estimates[j] > estimates[i]
    return agree / total if total else float("nan")


def _path(cache_dir: str, runtime) -> str:
    key = hashlib.sha256(f"{FORMAT} {runtime._rt.name} {cache.device_name(runtime)} "
                         f"{cache.core_identity()} "
                         f"threads {threads_of(runtime)} "
                         f"vector {vector_width_of(runtime)} "
                         f"dots {getattr(runtime._rt, 'dot_products', True)}".encode()).hexdigest()
    return os.path.join(cache_dir, f"cost-model-{key[:24]}.json")


def load(cache_dir: str, runtime) -> CostModel | None:
    """The model calibrated for this runtime, device, thread count and version, or None."""
    if not supported(runtime):
        return None
    try:
        with open(_path(cache_dir, runtime), encoding="utf-8") as f:
            entry = json.load(f)
        coef = entry["coef"]
        if entry.get("terms") != list(TERMS) or len(coef) != len(TERMS):
            return None
        return CostModel(coef)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(cache_dir: str, runtime, model: CostModel, note: dict | None = None) -> str:
    os.makedirs(cache_dir, exist_ok=True)
    path = _path(cache_dir, runtime)
    tmp = path + f".tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"terms": list(TERMS), "coef": [float(c) for c in model.coef],
                   "note": note or {}}, f)
    os.replace(tmp, path)
    return path
