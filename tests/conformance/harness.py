"""The conformance harness: one table row (Case) per op form, run through luminal and torch
on the same random inputs, in several variants, on every runtime.

Variants:
  contig     inputs as given
  noncontig  every input read through a non-contiguous view (transposed or strided)
  symbolic   the leading dim of the inputs that share it becomes the symbol "s"

check_grad runs a row's gradient the same way: d sum(out * r) / d input for a fixed random
cotangent r, with respect to each float32 input's buffer, against torch.autograd.
"""

from __future__ import annotations

import dataclasses
import zlib
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
    no_grad: str = ""                # why check_grad leaves this row out (torch's gradient is
                                     # undefined at its points), when it does

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


def _skip(reason: str):
    import pytest

    pytest.skip(reason)


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _reference(case: Case, datas):
    ref = case.ref or case.fn
    return _as_tuple(ref(torch, *datas) if case.takes_graph else ref(*datas))


def _build(case: Case, variant: str, specs, datas):
    """The row's graph in ``variant``: (graph, outputs, the stored inputs, their feeds, their
    layouts)."""
    if variant not in case.variants:
        _skip(f"{case.id} does not run in the {variant} variant")
    sym = _symbolic_dims(specs)
    if variant == "symbolic" and sym is None:
        _skip("no leading dim to make symbolic")
    cx = lm.Graph()
    stored, views, feeds, layouts = [], [], [], []
    for spec, data, is_sym in zip(specs, datas, sym[1] if sym else [False] * len(specs)):
        x, view, layout = _make_input(cx, spec, variant, is_sym)
        stored.append(x)
        views.append(view)
        feeds.append(_feed(data, layout))
        layouts.append(layout)
    if variant == "symbolic":
        cx.set_dim("s", sym[0])
    results = _as_tuple(case.fn(cx, *views) if case.takes_graph else case.fn(*views))
    return cx, results, stored, feeds, layouts


def _run(cx, runtime, stored, feeds, verify=True):
    """Compiles the cost model's pick (no search cache: each row's graph is its own, and the
    cache's fsync per store was a third of a row's time) and runs it on the feeds."""
    rt = cx.search(runtime(), 1, cache=False, verify=verify)
    for x, value in zip(stored, feeds):
        rt.set_data(x, value)
    rt.execute(cx.dyn_map)
    return rt


def check(case: Case, variant: str, runtime, seed: int = 0):
    """Runs one row in one variant and compares every output with torch."""
    specs = _inputs(case)
    datas = [make_data(s, seed + i) for i, s in enumerate(specs)]
    cx, results, stored, feeds, _ = _build(case, variant, specs, datas)
    expecteds = _reference(case, datas)
    assert len(results) == len(expecteds), f"{case.id}: {len(results)} outputs, torch gives " \
                                           f"{len(expecteds)}"
    for r in results:
        r.output()
    rt = _run(cx, runtime, stored, feeds)
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


# Why check_grad leaves out the rows whose inputs make NaN and infinities on purpose.
NAN_POINTS = ("its points make NaN and infinities on purpose: the gradient there is undefined "
              "(torch's is what its backward formulas give at them: 0 * inf, a NaN passed on "
              "by relu as if positive)")

# On runtimes that compile (CpuRuntime: ~0.8 s of C compiles a gradient graph), check_grad runs
# one (row, variant) pair in GRAD_SAMPLE, picked by a hash of its name; the interpreter runs all.
GRAD_SAMPLE = 40

GRAD_SCALE = 10  # a gradient's tolerance: its row's forward tolerance times this
GRAD_FLOOR = 1e-4  # and at least this, relative to the largest gradient element (>= 1)


def _torch_grads(case: Case, datas, wrt, seed: int):
    """torch.autograd's gradients of sum_k(out_k * r_k) w.r.t. the inputs ``wrt``: (the
    differentiated outputs k, their cotangents r_k, the gradients), or None where torch
    differentiates none of the outputs; raises RuntimeError where torch refuses an input."""
    leaves = [d.clone().requires_grad_(i in wrt) for i, d in enumerate(datas)]
    expecteds = _reference(case, leaves)
    outs = [k for k, e in enumerate(expecteds) if isinstance(e, torch.Tensor) and e.requires_grad]
    if not outs:
        return None
    g = torch.Generator().manual_seed(seed + 1000)
    cotangents = [torch.randn(expecteds[k].shape, generator=g) for k in outs]
    loss = sum((expecteds[k].float() * r).sum() for k, r in zip(outs, cotangents))
    wants = torch.autograd.grad(loss, [leaves[i] for i in wrt], allow_unused=True)
    return outs, cotangents, [torch.zeros_like(datas[i]) if w is None else w
                              for i, w in zip(wrt, wants)]


_TORCH_GRADS = {}  # (id(case), seed) -> _differentiable_reference's answer


def _differentiable_reference(case: Case, specs, datas, seed: int):
    """(the float32 inputs torch differentiates some output by, and _torch_grads' answer for
    them), or ([], None, None, None)."""
    wrt = []
    for i, spec in enumerate(specs):
        if spec.dtype != lm.float32:
            continue
        try:
            if _torch_grads(case, datas, [i], seed) is not None:
                wrt.append(i)
        except RuntimeError:  # torch does not differentiate this input
            continue
    if not wrt:
        return [], None, None, None
    return (wrt, *_torch_grads(case, datas, wrt, seed))


def check_grad(case: Case, variant: str, runtime, seed: int = 0):
    """The gradient of sum_k(out_k * r_k) over the row's float outputs, for fixed random
    cotangents r_k, with respect to the buffer of each float32 input (so a non-contiguous
    input's gradient lands in its stored layout), against torch.autograd on the same data.
    On compiled runtimes only a deterministic sample of the pairs runs (GRAD_SAMPLE).
    Skipped by rule where there is nothing to differentiate: no float32 input torch
    differentiates (it refuses batch_norm's running statistics, a loss's class weights,
    floor_divide), or no output it differentiates (ints, bools, argmax, comparisons, creation
    ops)."""
    if case.no_grad:
        _skip(f"{case.id}: {case.no_grad}")
    sampled = zlib.crc32(f"{case.id}/{variant}".encode()) % GRAD_SAMPLE == 0
    if runtime is not lm.NativeRuntime and not sampled:
        _skip(f"{case.id}: gradients on compiled runtimes run for a sample of the rows")
    specs = _inputs(case)
    datas = [make_data(s, seed + i) for i, s in enumerate(specs)]
    reference = _TORCH_GRADS.get((id(case), seed))
    if reference is None:  # the same in every variant and on every runtime: once per row
        reference = _differentiable_reference(case, specs, datas, seed)
        _TORCH_GRADS[(id(case), seed)] = reference
    wrt, outs, cotangents, wants = reference
    if not wrt:
        _skip(f"{case.id}: torch differentiates no output with respect to a float32 input")
    cx, results, stored, feeds, layouts = _build(case, variant, specs, datas)
    seeds = [cx.tensor(tuple(results[k].st.dims)) for k in outs]
    graph_loss = None
    for k, r in zip(outs, seeds):
        term = (results[k].to(lm.float32) * r).sum()
        graph_loss = term if graph_loss is None else graph_loss + term
    grads = [t.output() for t in lm.grad(graph_loss, [stored[i] for i in wrt])]
    # unverified: the comparison with torch below is the check
    rt = _run(cx, runtime, stored + seeds, feeds + cotangents, verify=False)
    forward_rtol, forward_atol = TOLERANCE[lm.float32]
    rtol = case.rtol if case.rtol is not None else forward_rtol
    atol = case.atol if case.atol is not None else forward_atol
    for i, got, want in zip(wrt, grads, wants):
        want = _feed(want, layouts[i]).double().numpy()
        finite = np.abs(want[np.isfinite(want)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(rt.get(got).astype(np.float64), want,
                                   rtol=max(GRAD_SCALE * rtol, GRAD_FLOOR),
                                   atol=max(GRAD_SCALE * atol, GRAD_FLOOR) * scale,
                                   equal_nan=True, err_msg=f"{case.id}: gradient of input {i}")
