"""The conformance harness: one table row (Case) per op form, run through luminal and torch
on the same random inputs, in several variants, on every runtime.

Variants:
  contig     inputs as given
  noncontig  every input read through a non-contiguous view (transposed or strided)
  symbolic   the leading dim of the inputs that share it becomes the symbol "s"
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np
import torch

import luminal as lm

TORCH_DTYPE = {lm.float32: torch.float32, lm.float16: torch.float16,
               lm.bfloat16: torch.bfloat16, lm.int32: torch.int32, lm.bool_: torch.bool}
LM_DTYPE = {torch.float32: lm.float32, torch.float64: lm.float32, torch.float16: lm.float16,
            torch.bfloat16: lm.bfloat16, torch.int32: lm.int32, torch.int64: lm.int32,
            torch.bool: lm.bool_}
TOLERANCE = {lm.float32: (1e-5, 1e-5), lm.float16: (5e-3, 5e-3), lm.bfloat16: (3e-2, 3e-2),
             lm.int32: (0, 0), lm.bool_: (0, 0)}
VARIANTS = ["contig", "noncontig", "symbolic"]


@dataclasses.dataclass
class Input:
    shape: tuple
    dtype: object = lm.float32
    # normal | positive (> 0.1) | unit (-0.9..0.9) | int (-10..10) | index:N (0..N-1) | bool
    domain: str = "normal"


@dataclasses.dataclass
class Case:
    op: str                          # the PyTorch name the row checks, e.g. "softmax"
    fn: Callable                     # luminal: fn(*tensors) or fn(cx, *tensors) if takes_graph
    inputs: Sequence                 # Input or shape tuples (float32, normal)
    ref: Optional[Callable] = None   # torch: defaults to fn (same method names)
    rtol: Optional[float] = None
    atol: Optional[float] = None
    variants: Sequence[str] = tuple(VARIANTS)
    takes_graph: bool = False        # fn(cx, ...) / ref(torch, ...) for creation ops
    label: str = ""                  # distinguishes rows of the same op

    @property
    def id(self) -> str:
        return f"{self.op}[{self.label}]" if self.label else self.op


def _inputs(case: Case):
    return [i if isinstance(i, Input) else Input(tuple(i)) for i in case.inputs]


def make_data(spec: Input, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shape = spec.shape
    if spec.domain == "bool" or spec.dtype == lm.bool_:
        return torch.randint(0, 2, shape, generator=g).bool()
    if spec.domain.startswith("index:"):
        n = int(spec.domain.split(":")[1])
        return torch.randint(0, n, shape, generator=g, dtype=torch.int32)
    if spec.domain == "int" or spec.dtype == lm.int32:
        x = torch.randint(-10, 11, shape, generator=g, dtype=torch.int32)
        return x.to(TORCH_DTYPE[spec.dtype])
    x = torch.randn(shape, generator=g)
    if spec.domain == "positive":
        x = x.abs() + 0.1
    elif spec.domain == "unit":
        x = torch.tanh(x) * 0.9
    return x.to(TORCH_DTYPE[spec.dtype])


def _symbolic_dims(specs):
    """Which inputs get a symbolic leading dim: those sharing the first input's."""
    if not specs or not specs[0].shape:
        return None
    lead = specs[0].shape[0]
    return lead, [bool(s.shape) and s.shape[0] == lead for s in specs]


def _make_input(cx, spec: Input, variant: str, symbolic_mask: bool):
    shape = list(spec.shape)
    if variant == "symbolic" and symbolic_mask:
        shape[0] = "s"
    if variant == "noncontig" and len(shape) >= 2:
        # Store transposed, read back through a permuted view.
        stored = shape[:-2] + [shape[-1], shape[-2]]
        x = cx.tensor(tuple(stored), spec.dtype)
        return x, x.transpose(-1, -2), "transpose"
    if variant == "noncontig" and len(shape) == 1 and isinstance(shape[0], int):
        x = cx.tensor((2 * shape[0],), spec.dtype)
        return x, x[::2], "stride"
    x = cx.tensor(tuple(shape), spec.dtype)
    return x, x, None


def _feed(data: torch.Tensor, layout):
    if layout == "transpose":
        return data.transpose(-1, -2).contiguous()
    if layout == "stride":
        return torch.stack([data, torch.zeros_like(data)], 1).reshape(-1)
    return data


def check(case: Case, variant: str, runtime, seed: int = 0):
    """Runs one row in one variant and compares every output with torch."""
    if variant not in case.variants:
        import pytest

        pytest.skip(f"{case.id} does not run in the {variant} variant")
    specs = _inputs(case)
    datas = [make_data(s, seed + i) for i, s in enumerate(specs)]
    cx = lm.Graph()
    sym = _symbolic_dims(specs)
    if variant == "symbolic" and sym is None:
        import pytest

        pytest.skip("no leading dim to make symbolic")
    tensors, feeds = [], {}
    for spec, data, is_sym in zip(specs, datas, sym[1] if sym else [False] * len(specs)):
        x, view, layout = _make_input(cx, spec, variant, is_sym)
        tensors.append(view)
        feeds[x] = _feed(data, layout)
    if variant == "symbolic":
        cx.set_dim("s", sym[0])
    result = case.fn(cx, *tensors) if case.takes_graph else case.fn(*tensors)
    ref = case.ref or case.fn
    expected = ref(torch, *datas) if case.takes_graph else ref(*datas)
    results = result if isinstance(result, (tuple, list)) else (result,)
    expecteds = expected if isinstance(expected, (tuple, list)) else (expected,)
    assert len(results) == len(expecteds), f"{case.id}: {len(results)} outputs, torch gives " \
                                           f"{len(expecteds)}"
    for r in results:
        r.output()
    rt = cx.search(runtime(), 1)
    for x, value in feeds.items():
        rt.set_data(x, value)
    rt.execute(cx.dyn_map)
    for k, (r, e) in enumerate(zip(results, expecteds)):
        e = torch.as_tensor(e)
        got = rt.get(r)
        want_dtype = LM_DTYPE[e.dtype]
        assert r.dtype == want_dtype, f"{case.id} output {k}: dtype {lm.dtype.name(r.dtype)}, " \
                                      f"torch gives {e.dtype}"
        assert got.shape == tuple(e.shape), f"{case.id} output {k}: shape {got.shape}, torch " \
                                            f"gives {tuple(e.shape)}"
        rtol, atol = TOLERANCE[want_dtype]
        rtol = case.rtol if case.rtol is not None else rtol
        atol = case.atol if case.atol is not None else atol
        np.testing.assert_allclose(got.astype(np.float64), e.double().numpy(), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=f"{case.id} output {k}")
