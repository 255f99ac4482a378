"""Movement ops are views: random chains of permute, reshape, expand, slice, pad and flip
on luminal must read the same elements as the same chain on torch."""

import functools
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import luminal as lm
import conftest
from conftest import assert_close, run


@pytest.fixture(autouse=True)
def _on_every_runtime(runtime, monkeypatch):
    """Every test here runs on each runtime: run() defaults to the parametrized one."""
    monkeypatch.setattr(sys.modules[__name__], "run",
                        functools.partial(conftest.run, runtime=runtime))


@st.composite
def view_chains(draw):
    """A starting shape and a list of movement steps valid for it."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    steps = []
    cur = list(shape)
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["permute", "reshape", "expand", "slice", "pad", "flip"]))
        if kind == "permute":
            perm = draw(st.permutations(range(len(cur))))
            steps.append(("permute", list(perm)))
            cur = [cur[p] for p in perm]
        elif kind == "reshape":
            n = int(np.prod(cur))
            divisors = [d for d in range(1, n + 1) if n % d == 0]
            first = draw(st.sampled_from(divisors))
            new = [first, n // first] if draw(st.booleans()) else [n]
            if draw(st.booleans()):
                new = [1] + new
            steps.append(("reshape", list(new)))
            cur = list(new)
        elif kind == "expand":
            ones = [i for i, d in enumerate(cur) if d == 1]
            if ones:
                axis = draw(st.sampled_from(ones))
                size = draw(st.integers(2, 3))
                new = list(cur)
                new[axis] = size
                steps.append(("expand", list(new)))
                cur = list(new)
            else:
                steps.append(("unsqueeze", 0))
                cur = [1] + cur
        elif kind == "slice":
            axis = draw(st.integers(0, len(cur) - 1))
            start = draw(st.integers(0, cur[axis] - 1))
            stop = draw(st.integers(start + 1, cur[axis]))
            step = draw(st.integers(1, 2))
            steps.append(("slice", axis, start, stop, step))
            cur[axis] = len(range(start, stop, step))
        elif kind == "pad":
            axis = draw(st.integers(0, len(cur) - 1))
            before, after = draw(st.integers(0, 2)), draw(st.integers(0, 2))
            steps.append(("pad", axis, before, after))
            cur[axis] += before + after
        else:
            axis = draw(st.integers(0, len(cur) - 1))
            steps.append(("flip", axis))
    return shape, steps


def _apply(x, step, is_torch):
    kind = step[0]
    if kind == "permute":
        return x.permute(*step[1])
    if kind == "reshape":
        return x.reshape(*step[1])
    if kind == "expand":
        return x.expand(*step[1])
    if kind == "unsqueeze":
        return x.unsqueeze(step[1])
    if kind == "slice":
        _, axis, start, stop, step_ = step
        index = [slice(None)] * x.ndim if is_torch else [slice(None)] * x.ndim
        index[axis] = slice(start, stop, step_)
        return x[tuple(index)]
    if kind == "pad":
        _, axis, before, after = step
        pad = [0, 0] * (x.ndim - 1 - axis) + [before, after]
        if is_torch:
            return torch.nn.functional.pad(x, pad)
        return x.pad_zeros(pad)
    if kind == "flip":
        return x.flip([step[1]]) if is_torch else x.flip(step[1])
    raise AssertionError(kind)


@settings(max_examples=150, deadline=None)
@given(view_chains())
def test_random_view_chains_match_torch(chain):
    shape, steps = chain
    data = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape) + 1
    cx = lm.Graph()
    x = cx.tensor(tuple(shape))
    y, expected = x, data
    for step in steps:
        y = _apply(y, step, False)
        expected = _apply(expected, step, True)
    assert y.shape == tuple(expected.shape)
    (out,) = run(cx, {x: data}, [y])
    assert_close(out, expected)


def test_reshape_of_permuted_view_materializes():
    cx = lm.Graph()
    x = cx.tensor((2, 3))
    y = x.T.reshape(6)
    assert y.st.is_contiguous()  # read from a materialized copy
    (out,) = run(cx, {x: torch.arange(6.0).reshape(2, 3)}, [y])
    assert out.tolist() == torch.arange(6.0).reshape(2, 3).T.reshape(6).tolist()


def test_reshape_of_contiguous_view_is_free():
    cx = lm.Graph()
    x = cx.tensor((2, 3, 4))
    before = len(cx)
    y = x.reshape(6, 4).reshape(2, 12)[:, 1:].unsqueeze(0)
    assert len(cx) == before
    assert y.shape == (1, 2, 11)


def test_getitem_forms_match_torch():
    cx = lm.Graph()
    x = cx.tensor((4, 5, 6))
    data = torch.randn(4, 5, 6)
    keys = [
        (1,), (-1,), (slice(1, None), slice(None, None, 2)), (Ellipsis, -1),
        (None, 2, Ellipsis, slice(1, 3)), (slice(-3, -1), None, 0),
        (slice(10, 20),), (slice(None), slice(-100, 100)),
    ]
    outs = [x[k] for k in keys]
    results = run(cx, {x: data}, outs)
    for k, got in zip(keys, results):
        assert_close(got, data[k])


def test_integer_tensor_index_matches_torch():
    cx = lm.Graph()
    x = cx.tensor((4, 5))
    idx = cx.tensor((2, 2), lm.int32)
    data = torch.randn(4, 5)
    idx_data = torch.tensor([[0, -1], [2, 3]], dtype=torch.int32)
    (a, b) = run(cx, {x: data, idx: idx_data}, [x[idx], x[:, idx]])
    assert_close(a, data[idx_data.long()])
    assert_close(b, data[:, idx_data.long()])


def test_symbolic_reshape_split_and_merge():
    cx = lm.Graph()
    x = cx.tensor(("s", 4))
    y = x.reshape("s", 2, 2).permute(1, 0, 2).reshape(2, -1)
    cx.set_dim("s", 3)
    data = torch.randn(3, 4)
    (out,) = run(cx, {x: data}, [y])
    assert_close(out, data.reshape(3, 2, 2).permute(1, 0, 2).reshape(2, -1))


@pytest.mark.parametrize("bad", [(5,), (2, 4)])
def test_reshape_wrong_count(bad):
    cx = lm.Graph()
    x = cx.tensor((2, 3))
    with pytest.raises(lm.ShapeError, match="reshape"):
        x.reshape(*bad)
