"""Quantized storage dtypes (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: GGUF's block layouts, core/quant.h): a
Cast to f32 on NativeRuntime, the executable definition of dequantization, is bit-identical to
the `gguf` package's reference quants.dequantize on random blocks (quantized from ordinary and
extreme values, and raw random bytes: every scale, inf and nan ones included); the graph refuses
other ops on them, views that split their blocks and shapes that are not whole blocks."""

import gguf
import numpy as np
import pytest

import luminal as lm
from luminal.errors import DTypeError, ShapeError

QTYPES = {
    lm.dtype.q8_0: gguf.GGMLQuantizationType.Q8_0,
    lm.dtype.q4_0: gguf.GGMLQuantizationType.Q4_0,
    lm.dtype.q4_k: gguf.GGMLQuantizationType.Q4_K,
    lm.dtype.q5_k: gguf.GGMLQuantizationType.Q5_K,
    lm.dtype.q6_k: gguf.GGMLQuantizationType.Q6_K,
}
QUANTIZABLE = (lm.dtype.q8_0, lm.dtype.q4_0)  # gguf-py quantizes only these of the five


def block_size(dtype):
    return lm._core.block_values(dtype), lm._core.block_bytes(dtype)


def dequantize_on_native(dtype, raw: np.ndarray, shape, to=lm.float32):
    cx = lm.Graph()
    w = cx.tensor(shape, dtype, name="w", parameter=True)
    y = w.to(to).output()
    rt = cx.search(lm.NativeRuntime(), 1, cache=False, progress=False)
    rt.set_storage(w, raw)
    rt.execute()
    return rt.get(y)


def random_blocks(dtype, rows, blocks_per_row, rng):
    """Raw random bytes: every scale bit pattern (subnormal, huge, inf, nan) appears."""
    values, nbytes = block_size(dtype)
    raw = rng.integers(0, 256, (rows, blocks_per_row * nbytes), dtype=np.uint8)
    return raw, (rows, blocks_per_row * values)


def same_bits(actual, expected):
    a = np.asarray(actual, np.float32).view(np.uint32)
    e = np.asarray(expected, np.float32).view(np.uint32)
    assert a.shape == e.shape
    bad = np.flatnonzero(a != e)
    assert bad.size == 0, f"{bad.size} elements differ, first at {bad[0]}: " \
        f"{actual.reshape(-1)[bad[0]]} vs {expected.reshape(-1)[bad[0]]}"


@pytest.mark.parametrize("dtype", list(QTYPES), ids=str)
def test_dequantization_of_random_raw_blocks_is_bit_identical_to_gguf(dtype):
    rng = np.random.default_rng(16)
    raw, shape = random_blocks(dtype, 3, 5, rng)
    if dtype in (lm.dtype.q8_0, lm.dtype.q4_0):
        raw[0, 0:2] = [0x00, 0x7C]  # +inf scale
        raw[1, 0:2] = [0x01, 0x7E]  # a nan scale with a payload
        raw[2, 0:2] = [0x00, 0x00]  # zero scale
    with np.errstate(all="ignore"):
        expected = gguf.quants.dequantize(raw, QTYPES[dtype])
    same_bits(dequantize_on_native(dtype, raw, shape), expected)


@pytest.mark.parametrize("dtype", QUANTIZABLE, ids=str)
@pytest.mark.parametrize("scale", [1.0, 1e-6, 6e4, 0.0])
def test_dequantization_of_quantized_values_is_bit_identical_to_gguf(dtype, scale):
    rng = np.random.default_rng(7)
    values, _ = block_size(dtype)
    x = (rng.standard_normal((7, 4 * values)) * scale).astype(np.float32)
    x[0, :values] = 0.0  # an all-zero block: zero scale
    raw = gguf.quants.quantize(x, QTYPES[dtype])
    expected = gguf.quants.dequantize(raw, QTYPES[dtype])
    same_bits(dequantize_on_native(dtype, raw, x.shape), expected)


@pytest.mark.parametrize("dtype", [lm.dtype.q4_k, lm.dtype.q5_k, lm.dtype.q6_k], ids=str)
def test_k_quant_dequantization_to_half_rounds_the_reference(dtype):
    """A Cast to f16 rounds the f32 dequantization (nans compare as nans: the f16 conversion
    keeps no payload)."""
    rng = np.random.default_rng(3)
    raw, shape = random_blocks(dtype, 2, 2, rng)
    with np.errstate(all="ignore"):
        expected = gguf.quants.dequantize(raw, QTYPES[dtype]).astype(np.float16)
    actual = dequantize_on_native(dtype, raw, shape, lm.float16)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan)
    np.testing.assert_array_equal(actual[~nan].view(np.uint16), expected[~nan].view(np.uint16))


def test_block_byte_sizes_are_ggufs():
    for dtype, qtype in QTYPES.items():
        values, nbytes = gguf.constants.GGML_QUANT_SIZES[qtype]
        assert block_size(dtype) == (values, nbytes)
        assert lm._core.storage_bytes(dtype, 3 * values) == 3 * nbytes
    with pytest.raises(ShapeError, match="whole number of blocks"):
        lm._core.storage_bytes(lm.dtype.q8_0, 33)


def test_quantized_storage_is_read_only_through_a_cast():
    cx = lm.Graph()
    w = cx.tensor((2, 64), lm.dtype.q4_0, name="w")
    with pytest.raises(DTypeError, match="'w' is parameter storage only"):
        w + w
    with pytest.raises(DTypeError, match="'w' is parameter storage only"):
        w.sum(-1)
    with pytest.raises(DTypeError, match="dequantizes to a float"):
        w.to(lm.int32)
    x = cx.tensor((2, 64))
    with pytest.raises(DTypeError, match="not an op"):
        x.to(lm.dtype.q8_0)


def test_views_that_split_blocks_are_refused_naming_the_tensor():
    cx = lm.Graph()
    w = cx.tensor((4, 64), lm.dtype.q8_0, name="wq")
    with pytest.raises(ShapeError, match="'wq' splits its blocks of 32"):
        w[:, 5:37].to(lm.float32)
    with pytest.raises(ShapeError, match="'wq' splits its blocks"):
        w.reshape(16, 16).to(lm.float32)
    w[1:3, 32:].to(lm.float32)  # whole blocks: fine
    w.t().to(lm.float32)        # a transpose keeps each block contiguous


def test_a_row_that_is_not_whole_blocks_is_refused():
    cx = lm.Graph()
    with pytest.raises(ShapeError, match="input 'w' of q4_k.*blocks of 256"):
        cx.tensor((4, 300), lm.dtype.q4_k, name="w")


def test_set_storage_checks_the_byte_count():
    cx = lm.Graph()
    w = cx.tensor((2, 32), lm.dtype.q8_0, name="w", parameter=True)
    w.to(lm.float32).output()
    rt = cx.search(lm.NativeRuntime(), 1, cache=False, progress=False)
    with pytest.raises(DTypeError, match="whole blocks of 34"):
        rt.set_storage(w, np.zeros((2, 33), np.uint8))
    with pytest.raises(DTypeError, match="set_storage"):
        rt.set_data(w, np.zeros((2, 32), np.float32))
