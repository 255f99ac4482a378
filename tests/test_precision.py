"""The half-precision pass (lm.to_half) on the NativeRuntime against torch in bf16/f16: inputs,
weights and activations in half, norms and softmax sums accumulated in f32."""

import numpy as np
import pytest
import torch

import luminal as lm
from conftest import assert_close

HALVES = [lm.bfloat16, lm.float16]
TORCH = {lm.bfloat16: torch.bfloat16, lm.float16: torch.float16}


def _run(cx, feeds, outputs):
    rt = cx.search(lm.NativeRuntime(), 1)
    for t, v in feeds.items():
        rt.set_data(t, v)
    rt.execute(cx.dyn_map)
    return [rt.get(t) for t in outputs]


def _softmax(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def _rms_norm(x, w, eps=1e-5):
    return x * ((x * x).mean(-1, keepdim=True) + eps).sqrt().reciprocal() * w


@pytest.mark.parametrize("half", HALVES, ids=lm.dtype.name)
def test_mlp_block_in_half_matches_torch(half):
    g = torch.Generator().manual_seed(0)
    x, w1, w2 = (torch.randn(s, generator=g) * 0.5 for s in [(4, 32), (32, 48), (48, 16)])
    cx = lm.Graph()
    tx, tw1, tw2 = cx.tensor((4, 32)), cx.tensor((32, 48)), cx.tensor((48, 16))
    out = _softmax((tx @ tw1).exp() @ tw2)
    out.output()
    lm.to_half(cx, half)
    assert tx.dtype == half and tw1.dtype == half and out.dtype == half
    got, = _run(cx, {tx: x, tw1: w1, tw2: w2}, [out])
    t = TORCH[half]
    ref = torch.softmax(((x.to(t) @ w1.to(t)).exp() @ w2.to(t)).float(), -1).to(t)
    assert got.dtype == (np.float16 if half == lm.float16 else np.float32)
    assert_close(got, ref.float(), half, rtol=3e-2, atol=3e-2)


def test_norm_accumulates_in_f32_not_f16():
    """Squares of |x| ~ 300 overflow f16 (max 65504): only an f32 chain into the sum gives the
    right norm, as torch computes it from f16 data in f32."""
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(3, 64, generator=g) * 300).half()
    w = torch.rand(64, generator=g).half() + 0.5
    cx = lm.Graph()
    tx, tw = cx.tensor((3, 64)), cx.tensor((64,))
    out = _rms_norm(tx, tw).output()
    lm.to_half(cx, lm.float16)
    got, = _run(cx, {tx: x.float(), tw: w.float()}, [out])
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()).half()
    assert np.isfinite(got).all()
    assert_close(got, ref.float(), lm.float16, rtol=1e-2, atol=1e-2)


def test_long_sum_in_bf16_is_exact_to_f32():
    """A sum of 4096 ones is 4096 only with an f32 accumulator (bf16 steps are 32 there)."""
    cx = lm.Graph()
    x = cx.tensor((4096,))
    s = (x * 1.0).sum().output()
    lm.to_half(cx, lm.bfloat16)
    got, = _run(cx, {x: np.ones(4096, np.float32)}, [s])
    ref = torch.ones(4096, dtype=torch.bfloat16).sum(dtype=torch.float32).to(torch.bfloat16)
    assert float(got) == float(ref) == 4096.0


def test_explicit_tensors_are_remapped_and_others_left_alone():
    cx = lm.Graph()
    a = cx.tensor((2, 3))
    b = (a * 2).output()
    lm.to_half(cx, lm.bfloat16, tensors=[a, b])
    assert a.dtype == lm.bfloat16 and b.dtype == lm.bfloat16
    got, = _run(cx, {a: np.arange(6, dtype=np.float32).reshape(2, 3)}, [b])
    assert_close(got, torch.arange(6.0).reshape(2, 3) * 2, lm.bfloat16)


def test_int_and_bool_tensors_keep_their_dtype():
    cx = lm.Graph()
    a = cx.tensor((5,))
    i = cx.tensor((5,), lm.int32)
    m = (a < 0.0)
    out = (a + i.float()).output()
    m.output()
    lm.to_half(cx, lm.float16)
    assert i.dtype == lm.int32 and m.dtype == lm.bool_ and out.dtype == lm.float16


def test_to_half_rejects_non_half_dtypes():
    cx = lm.Graph()
    cx.tensor((2,)).exp().output()
    with pytest.raises(lm.DTypeError, match="f16 or bf16"):
        lm.to_half(cx, lm.float32)
