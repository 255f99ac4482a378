"""Conformance table: movement and indexing ops (views, joins, pads, gathers, scatters and
index_put, diagonals, triangles, windows), checked against torch in every variant; plus a check that the view ops
add no nodes to the graph."""

import pytest
import torch
import torch.nn.functional as F

import luminal as lm
from harness import VARIANTS, Case, Input, check, check_grad


def idx(shape, n):
    return Input(shape, lm.int32, f"index:{n}")


def _perm_index(x, rows, cols, n):
    """A (rows, cols) int index whose rows hold distinct values below n (luminal or torch)."""
    if isinstance(x, torch.Tensor):
        return torch.fmod(torch.arange(cols).reshape(1, cols) * 3
                          + torch.arange(rows).reshape(rows, 1), n)
    cx = x.graph
    return (cx.arange(cols).reshape(1, cols) * 3 + cx.arange(rows).reshape(rows, 1)).fmod(n)


def _evens(x, n):
    """0, 2, 4, ... (n of them) as an int index (luminal or torch)."""
    if isinstance(x, torch.Tensor):
        return torch.arange(n) * 2
    return x.graph.arange(n) * 2


CASES = [
    Case("reshape", lambda x: x.reshape(-1, 2), [(3, 4)]),
    Case("reshape", lambda x: x.reshape(x.shape[0], 2, 2, 1), [(3, 4)], label="split_dims"),
    Case("view", lambda x: x.view(-1, 1, 3), [(4, 3)]),
    Case("reshape", lambda x: x.reshape(-1), [(2, 3, 1)], label="flat"),
    Case("permute", lambda x: x.permute(2, 0, 1), [(2, 3, 4)]),
    Case("permute", lambda x: x.permute(-1, 0), [(3, 1)], label="size1"),
    Case("transpose", lambda x: x.transpose(0, -1), [(2, 3, 4)]),
    Case("t", lambda x: x.t(), [(3, 4)]),
    Case("t", lambda x: x.t(), [(5,)], label="1d"),
    Case("flatten", lambda x: x.flatten(), [(2, 3, 4)]),
    Case("flatten", lambda x: x.flatten(1), [(2, 3, 4)], label="start1"),
    Case("unflatten", lambda x: x.unflatten(1, (2, -1)), [(3, 4)]),
    Case("squeeze", lambda x: x.squeeze(), [(3, 1, 4, 1)]),
    Case("squeeze", lambda x: x.squeeze(1), [(3, 1, 4)], label="dim"),
    Case("unsqueeze", lambda x: x.unsqueeze(-1), [(3, 4)]),
    Case("unsqueeze", lambda x: x.unsqueeze(0), [(3,)], label="front"),
    Case("expand", lambda x: x.expand(2, -1, 4), [(3, 1)]),
    Case("broadcast_to", lambda x: x.broadcast_to((2, x.shape[0], 4)), [(3, 1)]),
    Case("repeat", lambda x: x.repeat(2, 3), [(3, 2)]),
    Case("repeat", lambda x: x.repeat(2, 1, 2), [(1, 3)], label="new_dims"),
    Case("tile", lambda x: x.tile((2,)), [(3, 2)]),
    Case("tile", lambda x: x.tile((2, 1, 2)), [(3, 2)], label="more_dims"),
    Case("flip", lambda x: x.flip(0, 1), [(3, 4)]),
    Case("flip", lambda x: x.flip(-1), [(5,)], label="1d"),
    Case("roll", lambda x: x.roll(1, 0), [(4, 3)]),
    Case("roll", lambda x: x.roll((-2, 5), (1, 0)), [(3, 4)], label="multi"),
    Case("roll", lambda x: x.roll(3), [(2, 3)], label="flat"),
    Case("narrow", lambda x: x.narrow(1, 1, 2), [(3, 4)]),
    Case("narrow", lambda x: x.narrow(-1, -3, 3), [(3, 4)], label="negative_start"),
    Case("getitem", lambda x: x[1:, ::2], [(4, 6)], label="slices"),
    Case("getitem", lambda x: x[None, ..., -1], [(3, 4, 2)], label="none_ellipsis_int"),
    Case("getitem", lambda x: x[1, -2:, None], [(3, 4)], label="int_neg_slice"),
    Case("getitem", lambda x, i: x[i], [(4, 3), idx((5,), 4)], lambda x, i: x[i.long()],
         label="tensor"),
    Case("getitem", lambda x, i: x[:, i - 3], [(3, 4), idx((2, 2), 4)],
         lambda x, i: x[:, (i - 3).long()], label="negative_tensor"),
    Case("getitem", lambda x, i, j: x[i, :, j], [(3, 2, 4), idx((5,), 3), idx((1,), 4)],
         lambda x, i, j: x[i.long(), :, j.long()], label="split_advanced"),
    Case("getitem", lambda x, i: x[1, i], [(3, 4, 2), idx((2, 3), 4)],
         lambda x, i: x[1, i.long()], label="int_tensor"),
    Case("getitem", lambda x: x[[2, 0, 2]], [(3, 4)], label="list"),
    Case("cat", lambda a, b: lm.cat([a, b], 1), [(3, 2), (3, 4)],
         lambda a, b: torch.cat([a, b], 1)),
    Case("cat", lambda a, b: lm.cat((a, b, a)), [(2, 3), (1, 3)],
         lambda a, b: torch.cat((a, b, a)), label="three"),
    Case("cat", lambda a, b: lm.cat([a, b], -1), [(3, 2), Input((3, 1), lm.int32)],
         lambda a, b: torch.cat([a, b], -1), label="promote"),
    Case("stack", lambda a, b: lm.stack([a, b]), [(3, 2), (3, 2)],
         lambda a, b: torch.stack([a, b])),
    Case("stack", lambda a, b: lm.stack([a, b], -1), [(3, 2), (3, 2)],
         lambda a, b: torch.stack([a, b], -1), label="last"),
    Case("split", lambda x: x.split(2, 1), [(3, 5)]),
    Case("split", lambda x: x.split([1, 3], -1), [(3, 4)], label="sections"),
    Case("chunk", lambda x: x.chunk(3, 1), [(2, 7)]),
    Case("chunk", lambda x: x.chunk(2, -1), [(3, 4)], label="even"),
    Case("pad", lambda x: x.pad((1, 2)), [(3, 4)], lambda x: F.pad(x, (1, 2))),
    Case("pad", lambda x: x.pad((1, 0, 2, 1), value=-1.5), [(3, 4)],
         lambda x: F.pad(x, (1, 0, 2, 1), value=-1.5), label="value"),
    Case("pad", lambda x: x.pad((0, 2), value=float("-inf")), [(2, 3)],
         lambda x: F.pad(x, (0, 2), value=float("-inf")), label="neg_inf"),
    Case("pad", lambda x: x.pad((-1, 2)), [(3, 4)], lambda x: F.pad(x, (-1, 2)),
         label="crop"),
    Case("pad", lambda x: x.pad((2, 1, 1, 2), mode="reflect"), [(2, 3, 4)],
         lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), label="reflect"),
    Case("pad", lambda x: x.pad((1, 1, 1, 2), mode="reflect"), [(3, 4)],
         lambda x: F.pad(x[None], (1, 1, 1, 2), mode="reflect")[0], label="reflect_lead"),
    Case("pad", lambda x: x.pad((1, 3), mode="replicate"), [(2, 3)],
         lambda x: F.pad(x, (1, 3), mode="replicate"), label="replicate"),
    Case("pad", lambda x: x.pad((2, 1, 1, 1), mode="replicate"), [(2, 3, 4)],
         lambda x: F.pad(x, (2, 1, 1, 1), mode="replicate"), label="replicate_2d"),
    Case("pad", lambda x: x.pad((1, 2), mode="circular"), [(2, 3)],
         lambda x: F.pad(x, (1, 2), mode="circular"), label="circular"),
    Case("gather", lambda x, i: x.gather(1, i), [(3, 4), idx((3, 2), 4)],
         lambda x, i: x.gather(1, i.long())),
    Case("gather", lambda x, i: x.gather(0, i), [(3, 4), idx((5, 2), 3)],
         lambda x, i: x.gather(0, i.long()), label="dim0_smaller"),
    Case("index_select", lambda x, i: x.index_select(1, i), [(3, 4), idx((5,), 4)],
         lambda x, i: x.index_select(1, i.long())),
    Case("index_select", lambda x, i: x.index_select(0, i), [(3, 2, 2), idx((2,), 3)],
         lambda x, i: x.index_select(0, i.long()), label="dim0"),
    Case("take_along_dim", lambda x, i: x.take_along_dim(i, 1), [(3, 4), idx((3, 2), 4)],
         lambda x, i: x.take_along_dim(i.long(), 1)),
    Case("take_along_dim", lambda x, i: x.take_along_dim(i, -1), [(3, 4), idx((1, 5), 4)],
         lambda x, i: x.take_along_dim(i.long(), -1), label="broadcast"),
    Case("take_along_dim", lambda x, i: x.take_along_dim(i), [(3, 4), idx((5,), 12)],
         lambda x, i: x.take_along_dim(i.long()), label="flat"),
    Case("scatter", lambda x, s: x.scatter(1, _perm_index(x, 3, 4, 5), s), [(3, 5), (3, 4)],
         lambda x, s: x.scatter(1, _perm_index(x, 3, 4, 5), s)),
    Case("scatter", lambda x: x.scatter(1, _perm_index(x, 2, 3, 5), 2.5), [(3, 5)],
         lambda x: x.scatter(1, _perm_index(x, 2, 3, 5), 2.5), label="value"),
    Case("scatter_add", lambda x, i, s: x.scatter_add(1, i, s),
         [(3, 5), idx((3, 4), 5), (3, 4)], lambda x, i, s: x.scatter_add(1, i.long(), s)),
    Case("scatter_add", lambda x, i, s: x.scatter_add(0, i, s),
         [(3, 2), idx((4, 2), 3), (5, 2)], lambda x, i, s: x.scatter_add(0, i.long(), s),
         label="dim0_dups"),
    # ---- index_put and the scatter family (unique indices where torch leaves duplicates
    # undefined) -----------------------------------------------------------------------------
    Case("index_put", lambda x, v: x.index_put((_evens(x, 3),), v), [(5, 4), (3, 4)],
         lambda x, v: x.index_put((_evens(x, 3),), v)),
    Case("index_put", lambda x, i, v: x.index_put((i,), v, accumulate=True),
         [(5, 4), idx((6,), 5), (6, 4)],
         lambda x, i, v: x.index_put((i.long(),), v, accumulate=True), label="accumulate_dups"),
    Case("index_put", lambda x, v: x.index_put((_evens(x, 2) - 4,), v), [(5, 4), (4,)],
         lambda x, v: x.index_put((_evens(x, 2) - 4,), v), label="negative_broadcast"),
    Case("index_put", lambda x, a, b, v: x.index_put((a, None, b), v, True),
         [(3, 4, 5), idx((2,), 3), idx((2,), 5), (2, 4)],
         lambda x, a, b, v: torch.ops.aten.index_put(x, (a.long(), None, b.long()), v, True),
         label="apart"),
    Case("index_put", lambda x, a, b, v: x.index_put((None, a, b), v, True),
         [(3, 4, 5), idx((2, 1), 4), idx((4,), 5), (3, 2, 4)],
         lambda x, a, b, v: torch.ops.aten.index_put(x, (None, a.long(), b.long()), v, True),
         label="adjacent_broadcast"),
    Case("index_put", lambda x, m: x.index_put((m,), 2.5), [(4, 5), Input((4, 5), lm.bool_)],
         lambda x, m: x.index_put((m,), torch.tensor(2.5)), label="mask"),
    Case("index_add", lambda x, i, s: x.index_add(0, i, s, alpha=2),
         [(5, 3), idx((4,), 5), (4, 3)], lambda x, i, s: x.index_add(0, i.long(), s, alpha=2)),
    Case("index_copy", lambda x, s: x.index_copy(1, _evens(x, 2), s), [(3, 5), (3, 2)],
         lambda x, s: x.index_copy(1, _evens(x, 2), s)),
    Case("index_fill", lambda x, i: x.index_fill(1, i, -1.5), [(3, 5), idx((3,), 5)],
         lambda x, i: x.index_fill(1, i.long(), -1.5)),
    Case("put", lambda x, i, s: x.put(i, s, accumulate=True), [(3, 4), idx((5,), 12), (5,)],
         lambda x, i, s: x.put(i.long(), s, accumulate=True)),
    Case("masked_scatter", lambda x, m, s: x.masked_scatter(m, s),
         [(3, 4), Input((3, 4), lm.bool_), (12,)]),
    Case("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "sum"),
         [(3, 5), idx((3, 4), 5), (3, 4)],
         lambda x, i, s: x.scatter_reduce(1, i.long(), s, "sum"), label="sum"),
    Case("scatter_reduce", lambda x, i, s: x.scatter_reduce(0, i, s, "prod", include_self=False),
         [(3, 2), idx((4, 2), 3), (4, 2)],
         lambda x, i, s: x.scatter_reduce(0, i.long(), s, "prod", include_self=False),
         label="prod"),
    Case("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "mean"),
         [(3, 5), idx((3, 4), 5), (3, 4)],
         lambda x, i, s: x.scatter_reduce(1, i.long(), s, "mean"), label="mean"),
    Case("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False),
         [Input((3, 5), lm.int32, "int"), idx((3, 4), 5), Input((3, 4), lm.int32, "int")],
         lambda x, i, s: x.scatter_reduce(1, i.long(), s, "mean", include_self=False),
         label="mean_int"),
    Case("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
         [(3, 5), idx((3, 4), 5), (3, 4)],
         lambda x, i, s: x.scatter_reduce(1, i.long(), s, "amax"), label="amax"),
    Case("scatter_reduce", lambda x, i, s: x.scatter_reduce(1, i, s, "amin", include_self=False),
         [(3, 5), idx((3, 4), 5), (3, 4)],
         lambda x, i, s: x.scatter_reduce(1, i.long(), s, "amin", include_self=False),
         label="amin"),
    Case("index_reduce", lambda x, i, s: x.index_reduce(0, i, s, "amax"),
         [(5, 3), idx((4,), 5), (4, 3)], lambda x, i, s: x.index_reduce(0, i.long(), s, "amax")),
    Case("index_reduce", lambda x, i, s: x.index_reduce(1, i, s, "mean", include_self=False),
         [(3, 5), idx((4,), 5), (3, 4)],
         lambda x, i, s: x.index_reduce(1, i.long(), s, "mean", include_self=False),
         label="mean"),
    Case("slice_scatter", lambda x, s: x.slice_scatter(s, 1, 1, 5, 2), [(4, 6), (4, 2)]),
    Case("select_scatter", lambda x, s: x.select_scatter(s, 1, -1), [(3, 4), (3,)]),
    # (symbolic: src's length is the symbol, the diagonal's min(s, 3), not provably equal)
    Case("diagonal_scatter", lambda x, s: x.diagonal_scatter(s, 1), [(3, 4), (3,)],
         variants=("contig", "noncontig")),
    Case("diagonal_scatter", lambda x, s: x.diagonal_scatter(s, -1, 2, 0), [(3, 2, 4), (2, 3)],
         variants=("contig", "noncontig"), label="dims"),
    Case("diag_embed", lambda x: x.diag_embed(), [(2, 3)]),
    Case("diag_embed", lambda x: x.diag_embed(-1, 0, 2), [(2, 3)], label="offset_dims"),
    Case("tril", lambda x: x.tril(), [(4, 3)]),
    Case("tril", lambda x: x.tril(-1), [(2, 3, 4)], label="batched_neg"),
    Case("triu", lambda x: x.triu(1), [(3, 4)]),
    Case("triu", lambda x: x.triu(-2), [(4, 4)], label="neg"),
    Case("movedim", lambda x: x.movedim(0, -1), [(2, 3, 4)]),
    Case("diagonal", lambda x: x.diagonal(), [(3, 4)]),
    Case("diagonal", lambda x: x.diagonal(1, -1, 0), [(2, 3, 4)], label="offset_dims"),
    Case("unbind", lambda x: x.unbind(1), [(3, 2)]),
    Case("unfold", lambda x: x.unfold(1, 2, 1), [(3, 5)]),
    Case("unfold", lambda x: x.unfold(-1, 3, 2), [(2, 2, 7)], label="stride"),
    Case("unfold", lambda x: x.unfold(0, 2, 2), [(5, 3)], label="dim0"),
]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_movement(case, variant, runtime):
    check(case, variant, runtime)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_movement_grad(case, variant, runtime):
    check_grad(case, variant, runtime)


def test_triu_of_neg_inf_is_exact(runtime):
    """The causal-mask idiom: zeros stay zeros next to -inf (no 0 * inf NaNs)."""
    cx = lm.Graph()
    mask = cx.full((3, 3), float("-inf")).triu(1).output()
    rt = cx.search(runtime(), 1)
    rt.execute(cx.dyn_map)
    want = torch.full((3, 3), float("-inf")).triu(1)
    assert (torch.from_numpy(rt.get(mask)) == want).all()


VIEW_OPS = [
    lambda x: x.reshape(4, 6),
    lambda x: x.permute(1, 0),
    lambda x: x.t(),
    lambda x: x[1:, ::2, None, ..., -1] if x.ndim == 3 else x[1:, ::2],
    lambda x: x.unsqueeze(0).expand(3, 4, 6),
    lambda x: x.flip(0),
    lambda x: x.narrow(1, 2, 3),
    lambda x: x.split(2, 1)[1],
    lambda x: x.chunk(2, 0)[0],
    lambda x: x.unflatten(1, (2, 3)),
    lambda x: x.pad((1, 1)),
    lambda x: x[:, None].repeat(1, 3, 1),
]


@pytest.mark.parametrize("op", VIEW_OPS)
def test_view_ops_add_no_nodes(op):
    cx = lm.Graph()
    x = cx.tensor((4, 6))
    before = len(cx)
    op(x)
    assert len(cx) == before
