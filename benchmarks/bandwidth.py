"""The read bandwidth a memory-bound kernel meets, measured the way such kernels read: the best
of a large torch.sum and a large torch.mv (a matrix-vector product, which streams its matrix
as a decode step streams its weights; on these machines it reads 20-40% faster than the sum),
each over 1 GiB of f32, best of 5. Used by cpu.py and llm.py for their bounds."""

from __future__ import annotations

import time


def read_bandwidth(threads: int | None = None) -> float:
    """Bytes per second read by the faster of torch.sum and torch.mv over 1 GiB."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    x = torch.ones(1 << 28, dtype=torch.float32)
    matrix, vector = x.view(8192, 32768), torch.ones(32768)
    best = float("inf")
    for run in (lambda: x.sum(), lambda: matrix @ vector):
        run()
        for _ in range(5):
            t0 = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t0)
    return x.numel() * 4 / best
