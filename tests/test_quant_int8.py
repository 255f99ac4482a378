"""Quantized activations (F.quantize_activations, hl_ops/quant_activations.py) and the CPU's
integer dot products of them with quantized weights (rule cpu-quant-int8,
codegen/c_quant_int8.cc). The hl op against gguf-py's Q8_0 quantize + dequantize and a float64
numpy replica of its formula; the int8 kernel against the interpreter on the same graph."""

import numpy as np
import pytest

import gguf
import luminal as lm
from luminal.nn.functional import quantize_activations

from conftest import CpuRuntime

Q8_0 = gguf.GGMLQuantizationType.Q8_0


def gguf_round_trip(x):
    return gguf.quants.dequantize(gguf.quants.quantize(x, Q8_0), Q8_0).reshape(x.shape)


def replica(x):
    """The hl op's formula in float64, each step rounded to f32 where the graph's is: d is
    amax / 127 correctly rounded (float64 quotient rounded once), id = f32(1 / d)."""
    f32 = np.float32
    xb = x.astype(np.float64).reshape(*x.shape[:-1], -1, 32)
    amax = np.abs(xb).max(-1, keepdims=True)
    d = (amax / 127).astype(f32).astype(np.float64)
    d16 = d.astype(np.float16).astype(np.float64)
    with np.errstate(divide="ignore"):
        inv = np.where(d16 == 0, 0.0, (1 / d).astype(f32).astype(np.float64))
    y = (xb * inv).astype(f32).astype(np.float64)
    q = np.sign(y) * np.floor(np.abs(y) + 0.5)  # exact in float64: halves away from zero
    return (q * d16).astype(f32).reshape(x.shape)


def run_native(shape, x, dims=None):
    cx = lm.Graph()
    t = cx.tensor(shape)
    out = quantize_activations(t).output()
    rt = lm.NativeRuntime()
    rt._load(cx)
    rt.set_data(t, x)
    rt.execute(dims or {})
    return np.asarray(rt.get_f32(out)).reshape(x.shape)


def scaled_rows(rows, k, seed=0):
    """Rows of normal values at scales from 1e-30 to 1e6 (past 127 * 65504 the f16 scale is
    inf), with a zero block, a block of one nonzero value and exact halves of a scale."""
    rng = np.random.default_rng(seed)
    scales = rng.choice([1e-30, 1e-9, 1e-3, 1.0, 37.0, 1e4, 1e6], size=(rows, 1))
    x = (rng.standard_normal((rows, k)) * scales).astype(np.float32)
    x[0, :32] = 0.0
    if k >= 64:
        x[0, 32:64] = 0.0
        x[0, 40] = -3.0
    if k >= 96:  # amax 127, so d = 1 and halves meet the rounding
        x[0, 64:96] = np.concatenate([[127.0, -127.0], np.arange(-14.5, 15.5)])
    return x


@pytest.mark.parametrize("rows,k", [(1, 32), (7, 256), (3, 2048), (13, 96)])
def test_quantize_activations_is_gguf_q8_0_round_trip(rows, k):
    x = scaled_rows(rows, k, seed=rows)
    got = run_native((rows, k), x)
    np.testing.assert_array_equal(got, gguf_round_trip(x))  # bit for bit: no mismatch
    np.testing.assert_array_equal(got, replica(x))


def test_quantize_activations_random_amax_over_binades_matches_gguf():
    # amax = 127 d over every binade a block's scale meets (d from 2^-24 to 2^15), so d's
    # correct rounding is exercised where a plain amax * f32(1/127) is 4.7% wrong.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 1024)).astype(np.float32)
    x *= np.exp2(rng.integers(-20, 20, (64, 32, 1))).repeat(32, -1).reshape(64, 1024)
    got = run_native((64, 1024), x)
    np.testing.assert_array_equal(got, gguf_round_trip(x))


def test_quantize_activations_symbolic_rows_on_cpu():
    cx = lm.Graph()
    t = cx.tensor(("s", 2, 64))
    out = quantize_activations(t).output()
    rt = CpuRuntime()
    rt._load(cx)
    for s in (1, 5):
        x = scaled_rows(s * 2, 64, seed=s).reshape(s, 2, 64)
        rt.set_data(t, x)
        rt.execute({"s": s})
        got = np.asarray(rt.get_f32(out)).reshape(x.shape)
        np.testing.assert_array_equal(got, gguf_round_trip(x.reshape(-1, 64)).reshape(x.shape))


def test_quantize_activations_refuses_bad_inputs():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match="multiple of 32"):
        quantize_activations(cx.tensor((2, 48)))
    with pytest.raises(lm.DTypeError, match="scheme"):
        quantize_activations(cx.tensor((2, 32)), "q4_0")
    with pytest.raises(lm.DTypeError, match="f32"):
        quantize_activations(cx.tensor((2, 32), lm.float16))
