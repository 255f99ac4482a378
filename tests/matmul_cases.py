"""Shared by the CPU matmul tests (test_gemv, test_params, test_runtime_rules): the weight
dtypes and their torch twins, a tensor with a schedule attached, seeded weights, and the
comparison against torch (relative to the result's scale), and the default block's vector
width and columns on this machine (16 and 64 with AVX-512, else 8 and 16: c/schedule.h)."""

import numpy as np
import torch

import luminal as lm
from luminal.graph import GraphTensor

TORCH = {lm.float32: torch.float32, lm.bfloat16: torch.bfloat16, lm.float16: torch.float16}
WEIGHTS = [lm.float32, lm.bfloat16, lm.float16]
WIDTH = lm.CpuRuntime(cache_dir="").vector_width  # the machine's, or LUMINAL_CPU_VECTOR_WIDTH
TILE_N = 64 if WIDTH == 16 else 16


def scheduled(t, schedule):
    """The same node as tensor t with `schedule` attached."""
    return GraphTensor(t.graph, t.graph._g.scheduled(t.id, schedule), t.st, t.dtype)


def weights(shape, wdtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(TORCH[wdtype])


def check(got, want):
    want = want.numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)
