"""Wrong arguments to movement, indexing, creation and matmul ops raise ShapeError or
DTypeError whose message names the op and the shapes involved; nothing crashes."""

import pytest

import luminal as lm


@pytest.fixture
def cx():
    return lm.Graph()


def _x(cx, shape=(3, 4), dtype=lm.float32):
    return cx.tensor(shape, dtype)


# (what is wrong, the call, the error type, words the message must hold)
SHAPE_CASES = [
    ("reshape size", lambda cx: _x(cx).reshape(5, 3), ["reshape", "(3, 4)"]),
    ("reshape two -1", lambda cx: _x(cx).reshape(-1, -1), ["reshape", "-1"]),
    ("reshape -1 no fit", lambda cx: _x(cx).reshape(-1, 5), ["reshape", "(3, 4)"]),
    ("permute bad dim", lambda cx: _x(cx).permute(0, 2), ["permute", "(3, 4)"]),
    ("permute repeated", lambda cx: _x(cx).permute(0, 0), ["permute", "(3, 4)"]),
    ("transpose dim", lambda cx: _x(cx).transpose(0, 3), ["transpose", "(3, 4)"]),
    ("t of 3-d", lambda cx: _x(cx, (2, 3, 4)).t(), ["t:", "(2, 3, 4)"]),
    ("flatten order", lambda cx: _x(cx, (2, 3, 4)).flatten(2, 1), ["flatten", "(2, 3, 4)"]),
    ("unflatten sizes", lambda cx: _x(cx).unflatten(1, (3, 2)), ["unflatten", "(3, 4)"]),
    ("unsqueeze dim", lambda cx: _x(cx).unsqueeze(4), ["unsqueeze", "(3, 4)"]),
    ("squeeze dim", lambda cx: _x(cx).squeeze(2), ["squeeze", "(3, 4)"]),
    ("expand non-1", lambda cx: _x(cx).expand(2, 4), ["expand", "(3, 4)"]),
    ("expand fewer", lambda cx: _x(cx).expand(4), ["expand", "(3, 4)"]),
    ("broadcast_to", lambda cx: _x(cx).broadcast_to((3, 5)), ["expand", "(3, 4)"]),
    ("repeat fewer", lambda cx: _x(cx).repeat(2), ["repeat", "(3, 4)"]),
    ("flip dim", lambda cx: _x(cx).flip(2), ["flip", "(3, 4)"]),
    ("roll lengths", lambda cx: _x(cx).roll((1, 2), 0), ["roll", "(1, 2)"]),
    ("narrow past end", lambda cx: _x(cx).narrow(1, 2, 3), ["narrow", "(3, 4)"]),
    ("split sections", lambda cx: _x(cx).split([1, 1], 0), ["split", "(3, 4)"]),
    ("split symbolic", lambda cx: _x(cx, ("s", 4)).split(2, 0), ["split", "symbolic"]),
    ("chunk zero", lambda cx: _x(cx).chunk(0), ["chunk", "0"]),
    ("index too many", lambda cx: _x(cx)[0, 0, 0], ["index", "(3, 4)"]),
    ("index range", lambda cx: _x(cx)[3], ["index", "(3, 4)"]),
    ("index step", lambda cx: _x(cx)[::-1], ["step", "(3, 4)"]),
    ("two ellipses", lambda cx: _x(cx)[..., ...], ["ellipsis", "(3, 4)"]),
    ("cat dims", lambda cx: lm.cat([_x(cx), cx.tensor((2, 3))], 0), ["cat", "(3, 4)", "(2, 3)"]),
    ("cat ranks", lambda cx: lm.cat([_x(cx), cx.tensor((4,))]), ["cat", "(3, 4)", "(4,)"]),
    ("cat empty", lambda cx: lm.cat([]), ["cat", "non-empty"]),
    ("cat dim", lambda cx: lm.cat([_x(cx), _x(cx)], 2), ["cat", "(3, 4)"]),
    ("stack shapes", lambda cx: lm.stack([_x(cx), cx.tensor((4, 3))]),
     ["stack", "(3, 4)", "(4, 3)"]),
    ("stack dim", lambda cx: lm.stack([_x(cx)], 4), ["stack", "(3, 4)"]),
    ("pad odd", lambda cx: _x(cx).pad((1,)), ["pad", "even"]),
    ("pad too long", lambda cx: _x(cx).pad((1, 1, 1, 1, 1, 1)), ["pad", "(3, 4)"]),
    ("pad mode", lambda cx: _x(cx).pad((1, 1), mode="wrap"), ["pad", "wrap"]),
    ("pad reflect size", lambda cx: _x(cx).pad((4, 0), mode="reflect"), ["pad", "(3, 4)"]),
    ("pad reflect value", lambda cx: _x(cx).pad((1, 1), mode="reflect", value=2.0),
     ["pad", "reflect"]),
    ("gather ranks", lambda cx: _x(cx).gather(0, cx.tensor((3,), lm.int32)),
     ["gather", "(3, 4)", "(3,)"]),
    ("gather larger", lambda cx: _x(cx).gather(0, cx.tensor((2, 5), lm.int32)),
     ["gather", "(3, 4)", "(2, 5)"]),
    ("gather dim", lambda cx: _x(cx).gather(2, cx.tensor((3, 4), lm.int32)), ["gather", "(3, 4)"]),
    ("index_select 2-d", lambda cx: _x(cx).index_select(0, cx.tensor((2, 2), lm.int32)),
     ["index_select", "(2, 2)"]),
    ("take_along_dim", lambda cx: _x(cx).take_along_dim(cx.tensor((2, 2), lm.int32), 1),
     ["take_along_dim", "(3, 4)", "(2, 2)"]),
    ("scatter larger", lambda cx: _x(cx).scatter_add(0, cx.tensor((2, 5), lm.int32),
                                                     cx.tensor((2, 5))),
     ["scatter_add", "(3, 4)", "(2, 5)"]),
    ("scatter both", lambda cx: _x(cx).scatter(0, cx.tensor((2, 4), lm.int32)), ["scatter"]),
    ("scatter_reduce op", lambda cx: _x(cx).scatter_reduce(
        0, cx.tensor((3, 4), lm.int32), _x(cx), "max"), ["scatter_reduce", "'max'", "(3, 4)"]),
    ("index_put count", lambda cx: _x(cx).index_put(
        [cx.tensor((2,), lm.int32)] * 3, 1.0), ["index_put", "3 indices", "(3, 4)"]),
    ("index_put values", lambda cx: _x(cx).index_put(
        [cx.tensor((2,), lm.int32)], cx.tensor((3, 4))), ["index_put", "(3, 4)"]),
    ("index_put mask values", lambda cx: _x(cx).index_put(
        [cx.tensor((3, 4), lm.bool_)], cx.tensor((5,))), ["index_put", "(5,)", "mask"]),
    ("index_add 2-d", lambda cx: _x(cx).index_add(0, cx.tensor((2, 2), lm.int32), _x(cx)),
     ["index_add", "(2, 2)"]),
    ("diag_embed dims", lambda cx: _x(cx).diag_embed(0, 1, 1), ["diag_embed", "(3, 4)"]),
    ("diag_embed range", lambda cx: _x(cx).diag_embed(0, 0, 3), ["diag_embed", "(3, 4)"]),
    ("diagonal_scatter dims", lambda cx: _x(cx).diagonal_scatter(cx.tensor((3,)), 0, 1, 1),
     ["diagonal_scatter", "(3, 4)"]),
    ("kthvalue k", lambda cx: _x(cx).kthvalue(5), ["kthvalue", "k=5", "(3, 4)"]),
    ("searchsorted rows", lambda cx: lm.searchsorted(_x(cx), cx.tensor((2, 3))),
     ["searchsorted", "(3, 4)", "(2, 3)"]),
    ("bucketize 2-d", lambda cx: lm.bucketize(_x(cx, (5,)), _x(cx)), ["bucketize", "(3, 4)"]),
    ("vector_norm ord", lambda cx: lm.linalg.vector_norm(_x(cx), "fro"),
     ["vector_norm", "'fro'", "(3, 4)"]),
    ("matrix_norm nuc", lambda cx: lm.linalg.matrix_norm(_x(cx), "nuc"),
     ["matrix_norm", "'nuc'", "(3, 4)"]),
    ("tril 1-d", lambda cx: _x(cx, (4,)).tril(), ["tril", "(4,)"]),
    ("unfold size", lambda cx: _x(cx).unfold(1, 5, 1), ["unfold", "(3, 4)"]),
    ("unfold step", lambda cx: _x(cx).unfold(1, 2, 0), ["unfold", "step"]),
    ("matmul align", lambda cx: _x(cx) @ cx.tensor((3, 4)), ["matmul", "(3, 4)"]),
    ("matmul batch", lambda cx: cx.tensor((2, 3, 4)) @ cx.tensor((3, 4, 5)),
     ["matmul", "(2, 3, 4)", "(3, 4, 5)"]),
    ("matmul 0-d", lambda cx: _x(cx) @ cx.tensor(()), ["matmul", "(3, 4)"]),
    ("mm rank", lambda cx: _x(cx).mm(cx.tensor((2, 4, 5))), ["mm", "(3, 4)", "(2, 4, 5)"]),
    ("bmm rank", lambda cx: _x(cx).bmm(_x(cx)), ["bmm", "(3, 4)"]),
    ("bmm batch", lambda cx: cx.tensor((2, 3, 4)).bmm(cx.tensor((3, 4, 5))),
     ["bmm", "(2, 3, 4)", "(3, 4, 5)"]),
    ("dot lengths", lambda cx: cx.tensor((3,)).dot(cx.tensor((4,))), ["dot", "(3,)", "(4,)"]),
    ("outer rank", lambda cx: _x(cx).outer(cx.tensor((3,))), ["outer", "(3, 4)"]),
    ("einsum count", lambda cx: lm.einsum("ij,jk->ik", _x(cx)), ["einsum", "(3, 4)"]),
    ("einsum labels", lambda cx: lm.einsum("ijk->i", _x(cx)), ["einsum", "(3, 4)"]),
    ("einsum typo", lambda cx: lm.einsum("i1->i", _x(cx)), ["einsum", "'1'"]),
    ("einsum sizes", lambda cx: lm.einsum("ij,ij->i", _x(cx), cx.tensor((3, 5))),
     ["einsum", "(3, 4)", "(3, 5)"]),
    ("einsum output", lambda cx: lm.einsum("ij->k", _x(cx)), ["einsum", "'k'"]),
    ("einsum arrows", lambda cx: lm.einsum("ij->j->i", _x(cx)), ["einsum", "->"]),
    ("einsum repeat out", lambda cx: lm.einsum("ij->ii", _x(cx)), ["einsum", "'i'"]),
    ("einsum dots", lambda cx: lm.einsum("i..j->i", _x(cx)), ["einsum", "ellipsis"]),
    ("linear features", lambda cx: lm.hl_ops.matmul.linear(_x(cx), cx.tensor((2, 5))),
     ["linear", "(3, 4)", "(2, 5)"]),
    ("arange step", lambda cx: cx.arange(0, 5, 0), ["arange", "step"]),
    ("zeros negative", lambda cx: cx.zeros(2, -1), ["zeros", "-1"]),
    ("linspace steps", lambda cx: cx.linspace(0, 1, -2), ["linspace", "steps"]),
    ("eye size", lambda cx: cx.eye(2.5), ["eye", "2.5"]),
    ("rand seed", lambda cx: cx.rand(3, seed=1.5), ["rand", "seed"]),
]

DTYPE_CASES = [
    ("float index", lambda cx: _x(cx)[cx.tensor((2,))], ["index", "float32"]),
    ("bool mask", lambda cx: _x(cx)[cx.tensor((3, 4), lm.bool_)], ["index", "bool"]),
    ("float scalar index", lambda cx: _x(cx)[1.5], ["index", "1.5"]),
    ("float slice bound", lambda cx: _x(cx)[0.5:], ["index", "0.5"]),
    ("list of floats", lambda cx: _x(cx)[[0.5]], ["index", "0.5"]),
    ("gather float", lambda cx: _x(cx).gather(0, _x(cx)), ["gather", "float32"]),
    ("index_select float", lambda cx: _x(cx).index_select(0, cx.tensor((2,))),
     ["index_select", "float32"]),
    ("scatter dtype", lambda cx: _x(cx).scatter_add(0, cx.tensor((3, 4), lm.int32),
                                                    cx.tensor((3, 4), lm.int32)),
     ["scatter_add", "int32", "float32"]),
    ("index_put dtype", lambda cx: _x(cx).index_put(
        [cx.tensor((2,), lm.int32)], cx.tensor((2, 4), lm.int32)), ["index_put", "int32"]),
    ("index_put float index", lambda cx: _x(cx).index_put([cx.tensor((2,))], 1.0),
     ["index_put", "float32"]),
    ("masked_scatter mask", lambda cx: _x(cx).masked_scatter(_x(cx), _x(cx)),
     ["masked_scatter", "bool", "(3, 4)"]),
    ("full value", lambda cx: cx.full((2,), "a"), ["full", "'a'"]),
    ("arange value", lambda cx: cx.arange("a"), ["arange", "'a'"]),
]


@pytest.mark.parametrize("what,call,words", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_bad_shapes_raise_shape_error(cx, what, call, words):
    with pytest.raises(lm.ShapeError) as info:
        call(cx)
    for word in words:
        assert word in str(info.value), f"{what}: {word!r} not in {str(info.value)!r}"


@pytest.mark.parametrize("what,call,words", DTYPE_CASES, ids=[c[0] for c in DTYPE_CASES])
def test_bad_dtypes_raise_dtype_error(cx, what, call, words):
    with pytest.raises(lm.DTypeError) as info:
        call(cx)
    for word in words:
        assert word in str(info.value), f"{what}: {word!r} not in {str(info.value)!r}"


def test_out_of_range_index_data_fails_at_run_time_not_crash():
    cx = lm.Graph()
    x = cx.tensor((3, 4))
    i = cx.tensor((2,), lm.int32)
    y = x.gather(0, i.reshape(2, 1)).output()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(x, [0.0] * 12)
    rt.set_data(i, [0, 7])
    with pytest.raises(lm.ShapeError, match="Gather"):
        rt.execute(cx.dyn_map)
    del y
