"""Conformance table: reductions (one dim, several, all; keepdim), arg-extremes, statistics,
cumulative ops and sorting. Tie-heavy int inputs (index:3) check which index torch reports."""

import pytest
import torch

import luminal as lm
from harness import NAN_POINTS, VARIANTS, Case, Input, check, check_grad

I32, BOOL, F16, BF16 = lm.int32, lm.bool_, lm.float16, lm.bfloat16


def ints(*shape):
    return Input(shape, I32, "int")


def ties(*shape, dtype=I32):
    """Values 0, 1, 2 only: many ties."""
    return Input(shape, dtype, "index:3")


def bools(*shape):
    return Input(shape, BOOL)


def pos(*shape):
    return Input(shape, lm.float32, "positive")


def special(x):
    """NaN where x < 0, -inf on (0, 0.25), +inf on (0.25, 0.5), finite from 0.5 (the same
    in torch)."""
    return (x * 4).log() / x.round()


def stable_sort(x, dim=-1, descending=False):
    return tuple(torch.sort(x, dim=dim, descending=descending, stable=True))


CASES = [
    # ---- sum and mean ----------------------------------------------------------------------
    Case("sum", lambda x: x.sum(), [(3, 4)], label="all"),
    Case("sum", lambda x: x.sum(1), [(3, 4)], label="dim"),
    Case("sum", lambda x: x.sum(-1, keepdim=True), [(2, 3, 4)], label="keepdim"),
    Case("sum", lambda x: x.sum((0, 2)), [(2, 3, 4)], label="dims"),
    Case("sum", lambda x: x.sum(dim=(-1, 0), keepdim=True), [(2, 1, 4)], label="dims_keep"),
    Case("sum", lambda x: x.sum(0), [(3, 1)], label="size1"),
    Case("sum", lambda x: x.sum(1), [ints(3, 4)], label="int"),
    Case("sum", lambda x: x.sum(), [bools(3, 4)], label="bool"),
    Case("sum", lambda x: x.sum(0), [Input((6, 3), F16)], label="f16"),
    Case("sum", lambda x: x.sum(1, dtype=torch.float32), [ints(3, 4)],
         ref=lambda x: x.sum(1, dtype=torch.float32), label="dtype"),
    Case("mean", lambda x: x.mean(), [(3, 4)], label="all"),
    Case("mean", lambda x: x.mean(0), [(3, 4)], label="dim"),
    Case("mean", lambda x: x.mean((1, 2), keepdim=True), [(2, 3, 4)], label="dims_keep"),
    Case("mean", lambda x: x.mean(-1), [Input((3, 8), BF16)], label="bf16"),
    # ---- products --------------------------------------------------------------------------
    Case("prod", lambda x: x.prod(1), [(3, 5)], label="dim"),
    Case("prod", lambda x: x.prod(0), [(5, 3)], label="dim0"),
    Case("prod", lambda x: x.prod(), [(2, 3)], label="all"),
    Case("prod", lambda x: x.prod(-1, keepdim=True), [ints(3, 4)], label="int"),
    Case("prod", lambda x: x.prod(1), [bools(3, 4)], label="bool"),
    Case("prod", lambda x: special(x).prod(1), [(4, 3)],
         ref=lambda x: special(x).prod(1), label="special"),
    # ---- extremes --------------------------------------------------------------------------
    Case("amax", lambda x: x.amax(1), [(3, 4)]),
    Case("amax", lambda x: x.amax((0, 1), keepdim=True), [(3, 4)], label="dims"),
    Case("amax", lambda x: x.amax(), [ints(3, 4)], label="int"),
    Case("amin", lambda x: x.amin(0), [(3, 4)]),
    Case("amin", lambda x: x.amin(-1), [ints(3, 4)], label="int"),
    Case("amin", lambda x: x.amin(1), [bools(3, 4)], label="bool"),
    Case("amax", lambda x: special(x).amax(1), [(3, 4)],
         ref=lambda x: special(x).amax(1), label="special"),
    Case("max", lambda x: x.max(), [(3, 4)], label="all"),
    Case("max", lambda x: x.max(1), [(3, 4)], ref=lambda x: tuple(x.max(1)), label="dim"),
    Case("max", lambda x: x.max(0, keepdim=True), [ties(4, 3)],
         ref=lambda x: tuple(x.max(0, keepdim=True)), label="ties"),
    Case("max", lambda x: special(x).max(1), [(4, 5)],
         ref=lambda x: tuple(special(x).max(1)), label="special"),
    Case("max", lambda x, y: x.max(y), [(3, 4), (4,)], label="other"),
    Case("min", lambda x: x.min(), [ints(3, 4)], label="all"),
    Case("min", lambda x: x.min(-1), [ties(3, 5)], ref=lambda x: tuple(x.min(-1)), label="ties"),
    Case("min", lambda x: x.min(0), [bools(3, 4)], ref=lambda x: tuple(x.min(0)), label="bool"),
    Case("argmax", lambda x: x.argmax(), [(3, 4)], label="all"),
    Case("argmax", lambda x: x.argmax(1), [ties(3, 6)], label="ties"),
    Case("argmax", lambda x: x.argmax(0, keepdim=True), [ties(6, 3)], label="keepdim"),
    Case("argmax", lambda x: x.argmax(1), [Input((3, 6), F16)], label="f16"),
    Case("argmin", lambda x: x.argmin(), [ties(3, 4)], label="all"),
    Case("argmin", lambda x: x.argmin(-1), [(3, 6)], label="dim"),
    Case("argmin", lambda x: special(x).argmin(1), [(4, 5)],
         ref=lambda x: special(x).argmin(1), label="special"),
    # ---- statistics ------------------------------------------------------------------------
    Case("var", lambda x: x.var(), [(3, 4)], label="all"),
    Case("var", lambda x: x.var(1), [(3, 5)], label="dim"),
    Case("var", lambda x: x.var(0, unbiased=False), [(5, 3)], label="biased"),
    Case("var", lambda x: x.var((0, 2), correction=2, keepdim=True), [(3, 2, 4)],
         label="correction"),
    Case("std", lambda x: x.std(), [(3, 4)], label="all"),
    Case("std", lambda x: x.std(-1, keepdim=True), [(3, 5)], label="dim"),
    Case("std", lambda x: x.std(0, correction=0), [Input((6, 3), F16)], label="f16"),
    Case("var_mean", lambda x: lm.var_mean(x, 1), [(3, 5)], ref=lambda x: torch.var_mean(x, 1)),
    Case("var_mean", lambda x: lm.var_mean(x, (0, 2), correction=0, keepdim=True),
         [(3, 2, 4)], ref=lambda x: torch.var_mean(x, (0, 2), correction=0, keepdim=True),
         label="dims_biased"),
    Case("std_mean", lambda x: lm.std_mean(x), [(3, 4)], ref=torch.std_mean),
    Case("std_mean", lambda x: lm.std_mean(x, -1, keepdim=True), [(3, 5)],
         ref=lambda x: torch.std_mean(x, -1, keepdim=True), label="dim"),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x), [(3, 4)],
         ref=torch.linalg.vector_norm),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x, 1, 1), [(3, 4)],
         ref=lambda x: torch.linalg.vector_norm(x, 1, 1), label="ord1"),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x, float("inf"), 0, True),
         [(3, 4)], ref=lambda x: torch.linalg.vector_norm(x, float("inf"), 0, True),
         label="inf_keep"),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x, -float("inf"), -1),
         [(3, 4)], ref=lambda x: torch.linalg.vector_norm(x, -float("inf"), -1),
         label="neg_inf"),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x.relu(), 0, 1), [(3, 4)],
         ref=lambda x: torch.linalg.vector_norm(x.relu(), 0, 1), label="ord0"),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x, 3.5, (0, 2)), [(2, 3, 4)],
         ref=lambda x: torch.linalg.vector_norm(x, 3.5, (0, 2)), rtol=1e-4, label="p3.5_dims"),
    Case("linalg.vector_norm", lambda x: lm.linalg.vector_norm(x, -1.5, 1), [pos(3, 4)],
         ref=lambda x: torch.linalg.vector_norm(x, -1.5, 1), rtol=1e-4, label="negative_p"),
    Case("linalg.matrix_norm", lambda x: lm.linalg.matrix_norm(x), [(2, 3, 4)],
         ref=torch.linalg.matrix_norm, label="fro"),
    Case("linalg.matrix_norm", lambda x: lm.linalg.matrix_norm(x, 1), [(2, 3, 4)],
         ref=lambda x: torch.linalg.matrix_norm(x, 1), label="ord1"),
    Case("linalg.matrix_norm", lambda x: lm.linalg.matrix_norm(x, -float("inf"), keepdim=True),
         [(3, 4)], ref=lambda x: torch.linalg.matrix_norm(x, -float("inf"), keepdim=True),
         label="neg_inf_keep"),
    Case("logsumexp", lambda x: x.logsumexp(1), [(3, 4)]),
    Case("logsumexp", lambda x: (x * 50).logsumexp((0, 1), keepdim=True), [(3, 4)],
         label="wide"),
    Case("logsumexp", lambda x: x.logsumexp(0), [ints(3, 4)], label="int"),
    Case("logsumexp", lambda x: special(x).logsumexp(1), [(4, 3)],
         ref=lambda x: special(x).logsumexp(1), label="special"),
    Case("norm", lambda x: x.norm(), [(3, 4)], label="fro"),
    Case("norm", lambda x: x.norm(p=1, dim=1), [(3, 4)], label="p1"),
    Case("norm", lambda x: x.norm(p=2, dim=0, keepdim=True), [(3, 4)], label="p2"),
    Case("norm", lambda x: x.norm(p=float("inf"), dim=-1), [(3, 4)], label="inf"),
    Case("norm", lambda x: x.norm(p="fro", dim=(0, 1)), [(2, 3, 4)], label="fro_dims"),
    Case("norm", lambda x: x.norm(p=3, dim=1), [(3, 4)], label="p3"),
    # ---- logic -----------------------------------------------------------------------------
    Case("all", lambda x: x.all(), [bools(3, 2)], label="all"),
    Case("all", lambda x: x.all(1), [bools(4, 2)], label="dim"),
    Case("all", lambda x: x.all(0, keepdim=True), [ties(3, 4)], label="int"),
    Case("any", lambda x: x.any(), [bools(3, 2)], label="all"),
    Case("any", lambda x: x.any(-1), [Input((3, 4), BOOL)], label="dim"),
    Case("any", lambda x: (x * 0.1).round().any(1), [(4, 3)],
         ref=lambda x: (x * 0.1).round().any(1), label="float"),
    # ---- cumulative ------------------------------------------------------------------------
    Case("cumsum", lambda x: x.cumsum(1), [(3, 5)], label="dim1"),
    Case("cumsum", lambda x: x.cumsum(0), [(5, 3)], label="dim0"),
    Case("cumsum", lambda x: x.cumsum(-1), [(6,)], label="1d"),
    Case("cumsum", lambda x: x.cumsum(1), [ints(3, 4)], label="int"),
    Case("cumsum", lambda x: x.cumsum(0), [bools(4, 3)], label="bool"),
    Case("cumsum", lambda x: special(x).cumsum(1), [(3, 5)],
         ref=lambda x: special(x).cumsum(1), label="special"),
    Case("cumprod", lambda x: x.cumprod(1), [(3, 5)], label="dim1"),
    Case("cumprod", lambda x: x.cumprod(0), [(4, 3)], label="dim0"),
    Case("cumprod", lambda x: x.cumprod(-1), [ints(2, 4)], label="int"),
    Case("cummax", lambda x: x.cummax(1), [(3, 5)], ref=lambda x: tuple(x.cummax(1)),
         label="dim1"),
    Case("cummax", lambda x: x.cummax(0), [ties(5, 3)], ref=lambda x: tuple(x.cummax(0)),
         label="ties"),
    Case("cummax", lambda x: special(x).cummax(1), [(3, 6)],
         ref=lambda x: tuple(special(x).cummax(1)), label="special"),
    Case("cummin", lambda x: x.cummin(1), [ties(3, 6)], ref=lambda x: tuple(x.cummin(1)),
         label="ties"),
    Case("cummin", lambda x: special(x).cummin(0), [(6, 2)],
         ref=lambda x: tuple(special(x).cummin(0)), label="special"),
    # ---- sorting ---------------------------------------------------------------------------
    Case("sort", lambda x: x.sort(), [(3, 5)], ref=stable_sort, label="last"),
    Case("sort", lambda x: x.sort(0, descending=True), [(5, 3)],
         ref=lambda x: stable_sort(x, 0, True), label="dim0_desc"),
    Case("sort", lambda x: x.sort(stable=True), [ties(3, 6)], ref=stable_sort, label="ties"),
    Case("sort", lambda x: x.sort(descending=True), [ties(3, 6)],
         ref=lambda x: stable_sort(x, descending=True), label="ties_desc"),
    Case("sort", lambda x: special(x).sort(), [(3, 6)], ref=lambda x: stable_sort(special(x)),
         label="special"),
    Case("sort", lambda x: x.sort(), [bools(2, 5)], ref=stable_sort, label="bool"),
    Case("argsort", lambda x: x.argsort(), [(3, 5)],
         ref=lambda x: torch.argsort(x, stable=True), label="last"),
    Case("argsort", lambda x: x.argsort(dim=0, descending=True), [ties(5, 2)],
         ref=lambda x: torch.argsort(x, dim=0, descending=True, stable=True), label="ties"),
    Case("topk", lambda x: x.topk(2), [(3, 5)], ref=lambda x: tuple(x.topk(2)), label="largest"),
    Case("topk", lambda x: x.topk(3, dim=0, largest=False), [(5, 3)],
         ref=lambda x: tuple(x.topk(3, dim=0, largest=False)), label="smallest"),
    Case("topk", lambda x: x.topk(1), [ints(4, 6)], ref=lambda x: tuple(x.topk(1)),
         label="int"),
    Case("msort", lambda x: x.msort(), [(5, 3)], ref=torch.msort),
    Case("kthvalue", lambda x: x.kthvalue(2), [(3, 5)], ref=lambda x: tuple(x.kthvalue(2))),
    Case("kthvalue", lambda x: x.kthvalue(3, 0, keepdim=True), [(5, 3)],
         ref=lambda x: tuple(x.kthvalue(3, 0, keepdim=True)), label="dim0_keep"),
    Case("median", lambda x: x.median(), [(3, 4)], label="all_even"),
    Case("median", lambda x: x.median(1), [(3, 5)], ref=lambda x: tuple(x.median(1)),
         label="dim"),
    Case("median", lambda x: special(x).median(1).values, [(4, 5)],
         ref=lambda x: special(x).median(1).values, label="nan", no_grad=NAN_POINTS),
    Case("median", lambda x: x.median(0, keepdim=True).values, [ints(5, 3)],
         ref=lambda x: x.median(0, keepdim=True).values, label="int"),
    Case("nanmedian", lambda x: special(x).nanmedian(1).values, [(4, 6)],
         ref=lambda x: special(x).nanmedian(1).values),
    Case("nanmedian", lambda x: special(x).nanmedian(), [(4, 6)],
         ref=lambda x: special(x).nanmedian(), label="all"),
    Case("searchsorted", lambda s, v: lm.searchsorted(s.sort().values, v),
         [ties(6), ties(3, 4)], ref=lambda s, v: torch.searchsorted(s.sort().values, v),
         label="left"),
    Case("searchsorted", lambda s, v: lm.searchsorted(s.sort().values, v, right=True),
         [ties(3, 5), ties(3, 4)],
         ref=lambda s, v: torch.searchsorted(s.sort().values, v, right=True), label="rows"),
    Case("bucketize", lambda x, b: lm.bucketize(x, b.sort().values, right=True), [(3, 4), (5,)],
         ref=lambda x, b: torch.bucketize(x, b.sort().values, right=True)),
]

for _case in CASES:
    if _case.label == "special":
        _case.no_grad = NAN_POINTS


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_reductions(case, variant, runtime):
    check(case, variant, runtime)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_reductions_grad(case, variant, runtime):
    check_grad(case, variant, runtime)
