"""F.normalize, F.cosine_similarity and nn.CosineSimilarity (nn/similarity.py) against torch
2.13 on both reference runtimes: broadcasting x1 against x2, positive and negative dims, zero
and tiny vectors (torch clamps each norm at eps), other p-norms, and the errors for shapes that
do not broadcast, bad dims and int inputs. torch.compile of both runs through luminal."""

import numpy as np
import pytest

import luminal as lm
from luminal.nn import CosineSimilarity
from luminal.nn import functional as LF

torch = pytest.importorskip("torch")
F = torch.nn.functional


def run(build, arrays, runtime):
    """``build(*graph inputs)`` on inputs shaped like ``arrays``, run on ``runtime``."""
    cx = lm.Graph()
    tensors = [cx.tensor(a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
    y = build(*tensors).output()
    rt = cx.search(runtime(), 1)
    for t, a in zip(tensors, arrays):
        rt.set_data(t, a)
    rt.execute({})
    return rt.get(y)


def close(got, want):
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


COSINE_CASES = [
    ((4, 6), (4, 6), 1),
    ((4, 6), (4, 6), -1),
    ((4, 6), (4, 6), 0),
    ((3, 1, 5), (4, 5), -1),   # broadcast to (3, 4, 5)
    ((2, 3, 4), (3, 1), -2),
    ((5,), (5,), 0),
    ((2, 1, 7), (1, 3, 7), 2),
]


@pytest.mark.parametrize("shape1, shape2, dim", COSINE_CASES)
def test_cosine_similarity_matches_torch(shape1, shape2, dim, runtime):
    x1, x2 = randn(*shape1, seed=1), randn(*shape2, seed=2)
    got = run(lambda a, b: LF.cosine_similarity(a, b, dim=dim), [x1.numpy(), x2.numpy()],
              runtime)
    close(got, F.cosine_similarity(x1, x2, dim=dim))


def test_cosine_similarity_of_zero_and_tiny_vectors(runtime):
    """Each norm is clamped at eps on its own (not their product): a zero row gives 0, and a
    row whose norm is below eps is divided by eps."""
    x1 = torch.tensor([[0.0, 0.0, 0.0], [1e-5, 0.0, 0.0], [1e-2, 0.0, 0.0], [1.0, 2.0, 3.0]])
    x2 = torch.tensor([[1.0, 2.0, 3.0], [1e-5, 0.0, 0.0], [1e-2, 0.0, 0.0], [0.0, 0.0, 0.0]])
    for eps in (1e-8, 1e-3, 1e-1):
        got = run(lambda a, b: LF.cosine_similarity(a, b, eps=eps), [x1.numpy(), x2.numpy()],
                  runtime)
        close(got, F.cosine_similarity(x1, x2, eps=eps))


def test_cosine_similarity_module_and_zero_dim_inputs():
    x1, x2 = randn(3, 4, 2, seed=3), randn(3, 4, 2, seed=4)
    got = run(CosineSimilarity(dim=-2, eps=1e-6), [x1.numpy(), x2.numpy()], lm.NativeRuntime)
    close(got, torch.nn.CosineSimilarity(dim=-2, eps=1e-6)(x1, x2))
    s1, s2 = torch.tensor(-2.0), torch.tensor(3.0)
    got = run(lambda a, b: LF.cosine_similarity(a, b, dim=0), [s1.numpy(), s2.numpy()],
              lm.NativeRuntime)
    close(got, F.cosine_similarity(s1, s2, dim=0))


@pytest.mark.parametrize("p, dim", [(2.0, 1), (2.0, -1), (1.0, 0), (3.0, -2),
                                    (float("inf"), 1)])
def test_normalize_matches_torch(p, dim, runtime):
    x = randn(3, 4, 5, seed=5)
    x[0, :, :] = 0.0  # zero vectors along every dim stay zero
    x[1, 2, :] = 0.0
    x[2, :, 3] = 0.0
    got = run(lambda a: LF.normalize(a, p=p, dim=dim), [x.numpy()], runtime)
    close(got, F.normalize(x, p=p, dim=dim))


def test_normalize_tiny_vectors_and_eps():
    x = torch.tensor([[1e-13, 0.0], [3e-4, 4e-4], [3.0, 4.0]])
    for eps in (1e-12, 1e-3):
        got = run(lambda a: LF.normalize(a, eps=eps), [x.numpy()], lm.NativeRuntime)
        close(got, F.normalize(x, eps=eps))
    s = torch.tensor(-2.0)
    close(run(lambda a: LF.normalize(a, dim=0), [s.numpy()], lm.NativeRuntime),
          F.normalize(s, dim=0))


def test_errors_name_the_shapes_and_dtypes():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match=r"cosine_similarity: shapes \(3, 4\) and \(3, 5\) "
                                            r"do not broadcast"):
        LF.cosine_similarity(cx.tensor((3, 4)), cx.tensor((3, 5)))
    with pytest.raises(lm.ShapeError, match="cosine_similarity: dim 2 is out of range"):
        LF.cosine_similarity(cx.tensor((3, 4)), cx.tensor((3, 4)), dim=2)
    with pytest.raises(lm.DTypeError, match="cosine_similarity: the common dtype.*int32"):
        LF.cosine_similarity(cx.tensor((3,), lm.int32), cx.tensor((3,), lm.int32), dim=0)
    with pytest.raises(lm.ShapeError, match="normalize: dim -3 is out of range"):
        LF.normalize(cx.tensor((3, 4)), dim=-3)
    with pytest.raises(lm.DTypeError, match="normalize: input must be a float tensor"):
        LF.normalize(cx.tensor((3, 4), lm.int32))


def test_an_int_side_is_promoted_as_in_torch():
    x1 = torch.tensor([[1, 2, 3], [0, 0, 0]], dtype=torch.int32)
    x2 = randn(2, 3, seed=6)
    cx = lm.Graph()
    a, b = cx.tensor((2, 3), lm.int32, "a"), cx.tensor((2, 3), name="b")
    y = LF.cosine_similarity(a, b).output()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(a, x1)
    rt.set_data(b, x2)
    rt.execute({})
    close(rt.get(y), F.cosine_similarity(x1, x2))


def test_torch_compile_runs_both_in_luminal():
    import luminal.fx  # noqa: F401  (registers the backend)
    from luminal.fx import report

    def f(a, b):
        return F.cosine_similarity(a, b, dim=-1), F.normalize(a, dim=1)

    report.reset()
    compiled = torch.compile(f, backend="luminal", options={"runtime": "native"})
    a, b = randn(3, 4, 5, seed=7), randn(4, 5, seed=8)
    a[0, 1] = 0.0
    for got, want in zip(compiled(a, b), f(a, b)):
        close(got.numpy(), want)
    assert report.compiled == 1 and not report.fallbacks
