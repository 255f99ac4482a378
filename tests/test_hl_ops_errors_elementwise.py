"""Wrong arguments to elementwise ops, reductions and sorting raise ShapeError / DTypeError
naming the op and the shapes, at graph-building time."""

import pytest

import luminal as lm


@pytest.fixture
def cx():
    return lm.Graph()


@pytest.mark.parametrize("build", [
    lambda a, b: a.maximum(b),
    lambda a, b: a.pow(b),
    lambda a, b: a.fmod(b),
    lambda a, b: a // b,
    lambda a, b: a.clamp(b, None),
    lambda a, b: a.lerp(b, 0.5),
    lambda a, b: lm.where(a > 0, a, b),
    lambda a, b: a == b,
])
def test_shapes_that_do_not_broadcast(cx, build):
    a, b = cx.tensor((3, 4)), cx.tensor((5, 4))
    with pytest.raises(lm.ShapeError, match=r"\(3, 4\).*\(5, 4\)"):
        build(a, b)


def test_broadcast_error_names_the_op(cx):
    a, b = cx.tensor((3, 4)), cx.tensor((2,))
    with pytest.raises(lm.ShapeError, match=r"^remainder: shapes \(3, 4\) and \(2,\)"):
        a % b


@pytest.mark.parametrize("build, op", [
    (lambda x: x.sum(2), "sum"),
    (lambda x: x.mean((0, 5)), "mean"),
    (lambda x: x.amax(-3), "amax"),
    (lambda x: x.max(dim=4), "max"),
    (lambda x: x.argmin(2), "argmin"),
    (lambda x: x.var(3), "var"),
    (lambda x: x.std(3), "std"),
    (lambda x: x.norm(dim=2), "norm"),
    (lambda x: x.any(2), "any"),
    (lambda x: x.logsumexp(7), "logsumexp"),
    (lambda x: x.cumsum(2), "cumsum"),
    (lambda x: x.cummax(-3), "cummax"),
    (lambda x: x.sort(2), "sort"),
    (lambda x: x.topk(1, dim=5), "topk"),
])
def test_bad_dim(cx, build, op):
    x = cx.tensor((3, 4))
    with pytest.raises(lm.ShapeError, match=rf"{op}: dim .* out of range for shape \(3, 4\)"):
        build(x)


@pytest.mark.parametrize("build", [
    lambda x: x.sum(1.5),
    lambda x: x.argmax("0"),
    lambda x: x.cumprod(None),
    lambda x: x.topk(1.5),
    lambda x: x.round(decimals=0.5),
])
def test_non_integer_dims(cx, build):
    x = cx.tensor((3, 4))
    with pytest.raises((lm.ShapeError, lm.DTypeError)):
        build(x)


def test_repeated_dim(cx):
    with pytest.raises(lm.ShapeError, match=r"sum: dim \(1, -1\) names an axis twice"):
        cx.tensor((3, 4)).sum((1, -1))


def test_topk_k_too_large(cx):
    with pytest.raises(lm.ShapeError, match=r"topk: k=5 .* shape \(3, 4\)"):
        cx.tensor((3, 4)).topk(5)


@pytest.mark.parametrize("build, pattern", [
    (lambda f, i, b: lm.where(f, f, f), "where: condition must be bool"),
    (lambda f, i, b: i.gelu(), "gelu: needs a float tensor"),
    (lambda f, i, b: i.silu(), "silu: needs a float tensor"),
    (lambda f, i, b: b.neg(), "neg: .*bool"),
    (lambda f, i, b: b.abs(), "abs: .*bool"),
    (lambda f, i, b: b.relu(), "relu: .*bool"),
    (lambda f, i, b: b.floor(), "floor: .*bool"),
    (lambda f, i, b: i.frac(), "frac: needs a float tensor"),
    (lambda f, i, b: b - b, "sub: .*bool"),
    (lambda f, i, b: i.mean(), "mean: needs a float tensor"),
    (lambda f, i, b: i.var(), "var: needs a float tensor"),
    (lambda f, i, b: i.norm(), "norm: needs a float tensor"),
    (lambda f, i, b: i ** -1, "pow: integers to negative integer powers"),
    (lambda f, i, b: f & f, "&: bitwise ops are only supported on bool"),
    (lambda f, i, b: b.fmod(b), "fmod: .*bool"),
    (lambda f, i, b: f + "x", "cannot use str"),
])
def test_wrong_dtypes(cx, build, pattern):
    f = cx.tensor((3, 4))
    i = cx.tensor((3, 4), lm.int32)
    b = cx.tensor((3, 4), lm.bool_)
    with pytest.raises(lm.DTypeError, match=pattern):
        build(f, i, b)


def test_bad_arguments(cx):
    x = cx.tensor((3, 4))
    with pytest.raises(lm.ShapeError, match="clamp: at least one of min and max"):
        x.clamp()
    with pytest.raises(lm.ShapeError, match="div: rounding_mode"):
        x.div(x, rounding_mode="up")
    with pytest.raises(lm.ShapeError, match="norm: unsupported p='nuc'"):
        x.norm(p="nuc")
    with pytest.raises(lm.DTypeError, match="gelu: approximate"):
        x.gelu(approximate="fast")


def test_tensors_of_two_graphs(cx):
    other = lm.Graph().tensor((3, 4))
    with pytest.raises(lm.ShapeError, match="another graph"):
        cx.tensor((3, 4)).maximum(other)
    with pytest.raises(lm.ShapeError, match="another graph"):
        lm.where(cx.tensor((3, 4), lm.bool_), other, 0.0)
