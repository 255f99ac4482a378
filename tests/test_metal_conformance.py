"""The conformance suite (tests/conformance: every op form, in its contiguous and symbolic
variants; the non-contiguous one changes only the index arithmetic every renderer prints
alike, Expr.to_c) through the Metal renderer, run by the MSL emulator (tests/metal_emu.py)
against torch. Each row's graph is lowered as written and rendered as MSL; the rows are compiled
in chunks (one host compile per chunk: a compile per row would take minutes), each chunk a test
that reports every row of it that differs from torch. The fused mappings the search may choose
are test_metal_emulated's."""

import importlib
import os
import sys

import numpy as np
import pytest
import torch

import luminal as lm

import metal_emu
from cuda_emu import compiler

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "conformance"))
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")

TABLES = ["test_creation", "test_elementwise", "test_matmul", "test_movement",
          "test_nn_functional", "test_reductions"]
CHUNKS = 12
VARIANTS = ["contig", "symbolic"]


def _rows():
    """(table, case, variant) of every row the conformance suite runs, in a fixed order."""
    rows = []
    for table in TABLES:
        for case in importlib.import_module(table).CASES:
            rows += [(table, case, v) for v in VARIANTS if v in case.variants]
    return rows


ROWS = _rows()


def _build(case, variant):
    """The row's graph with its outputs marked, its feeds and torch's results; None where the
    harness skips the row in this variant."""
    specs = harness._inputs(case)
    datas = [harness.make_data(s, i) for i, s in enumerate(specs)]
    try:
        cx, results, stored, feeds, _ = harness._build(case, variant, specs, datas)
    except pytest.skip.Exception:
        return None
    for r in results:
        r.output()
    # torch's bf16 is no numpy dtype: floats fed as f32 (exact), rounded to storage by the run
    feeds = {x: v.float().numpy() if v.is_floating_point() else v.numpy()
             for x, v in zip(stored, feeds)}
    return cx, results, feeds, harness._reference(case, datas)


def _differences(case, results, got, expected) -> str:
    """"" where every output matches torch as harness.check requires, else what differs."""
    for k, (r, g, e) in enumerate(zip(results, got, expected)):
        e = torch.as_tensor(e)
        want_dtype = harness.LM_DTYPE[e.dtype]
        if r.dtype != want_dtype:
            return f"output {k}: dtype {lm.dtype.name(r.dtype)}, torch gives {e.dtype}"
        rtol, atol = harness.TOLERANCE[want_dtype]
        rtol = case.rtol if case.rtol is not None else rtol
        atol = case.atol if case.atol is not None else atol
        if g.size != e.numel():
            return f"output {k}: {g.size} elements, torch gives {tuple(e.shape)}"
        try:
            np.testing.assert_allclose(g.reshape(tuple(e.shape)), e.double().numpy(), rtol=rtol,
                                       atol=atol, equal_nan=True)
        except AssertionError as err:
            lines = str(err).strip().splitlines()
            worst = [x for x in lines if x.startswith("Max absolute difference")]
            return f"output {k}: {(worst or lines)[0].strip()}"
    return ""


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_conformance_rows_through_msl(chunk, tmp_path):
    rows = ROWS[chunk::CHUNKS]
    built = [(t, c, v, _build(c, v)) for t, c, v in rows]
    built = [b for b in built if b[3] is not None]
    assert built, "a chunk without rows"
    emu = metal_emu.Emulated([(b[3][0], None, dict(b[3][0].dyn_map)) for b in built],
                             str(tmp_path))
    failures = []
    for i, (table, case, variant, (cx, results, feeds, expected)) in enumerate(built):
        try:
            got = emu.run(i, feeds, list(results))
        except lm.LuminalError as e:  # a Gather's index fault where torch raises too, ...
            failures.append(f"{table} {case.id} [{variant}]: {type(e).__name__}: {e}")
            continue
        why = _differences(case, results, got, expected)
        if why:
            failures.append(f"{table} {case.id} [{variant}]: {why}")
    assert not failures, f"{len(failures)} of {len(built)} rows differ:\n" + "\n".join(failures)


def test_every_row_is_in_a_chunk():
    """The chunks cover the suite: as many rows as the conformance tables run, each once."""
    assert sum(len(ROWS[c::CHUNKS]) for c in range(CHUNKS)) == len(ROWS) > 1000
