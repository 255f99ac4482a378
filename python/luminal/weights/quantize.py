"""Quantizing float32 rows into GGUF blocks (the layouts of core/quant.h), for writing files:
Q8_0 and Q4_0 as llama.cpp's reference quantizers round (bit-identical to gguf-py's), Q4_K,
Q5_K and Q6_K by a plain per-sub-block min/max and abs-max fit (valid blocks that llama.cpp reads; not
its iterative scale search, so a little less accurate). Each takes an (rows, k) float32 array,
k a multiple of the block, and returns uint8 rows of blocks. Not here: reading blocks back
(the interpreter's Cast is the definition: weights/gguf.py dequantize)."""

from __future__ import annotations

import numpy as np

from .. import dtype as dt


def _roundf(x: np.ndarray) -> np.ndarray:
    """C's roundf: halves away from zero."""
    a = np.abs(x)
    floored = np.floor(a)
    return np.sign(x) * (floored + np.floor(2 * (a - floored)))


def _inverse(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d == 0, 0, 1 / d)


def _f16_bytes(d: np.ndarray) -> np.ndarray:
    """(n, 1) float32 scales as their f16 bytes, (n, 2)."""
    return d.astype(np.float16).view(np.uint8).reshape(d.shape[0], 2)


def _q8_0(blocks: np.ndarray) -> np.ndarray:
    d = np.abs(blocks).max(axis=1, keepdims=True) / 127
    qs = _roundf(blocks * _inverse(d)).astype(np.int8).view(np.uint8)
    return np.concatenate([_f16_bytes(d), qs], axis=1)


def _q4_0(blocks: np.ndarray) -> np.ndarray:
    at = np.abs(blocks).argmax(axis=-1, keepdims=True)
    d = np.take_along_axis(blocks, at, axis=-1) / -8
    qs = np.trunc(blocks * _inverse(d) + np.float32(8.5), dtype=np.float32)
    qs = qs.astype(np.uint8).clip(0, 15).reshape(-1, 2, 16)
    return np.concatenate([_f16_bytes(d), qs[:, 0] | (qs[:, 1] << np.uint8(4))], axis=1)


def _q4_k(blocks: np.ndarray, bits: int = 4) -> np.ndarray:
    """Eight sub-blocks of 32: value = (d * sc) * q - dmin * m, q in 0..15 (Q5_K, bits 5:
    0..31, the fifth bits in 32 bytes before the nibbles), sc and m 6-bit."""
    n = blocks.shape[0]
    top = (1 << bits) - 1
    sub = blocks.reshape(n, 8, 32)
    low = np.minimum(sub.min(axis=-1), 0)       # (n, 8): the sub-block's min, never above 0
    scale = (sub.max(axis=-1) - low) / top      # (n, 8)
    d = (scale.max(axis=-1, keepdims=True) / 63).astype(np.float16).astype(np.float32)
    dmin = ((-low).max(axis=-1, keepdims=True) / 63).astype(np.float16).astype(np.float32)
    sc = _roundf(scale * _inverse(d)).clip(0, 63).astype(np.uint8)
    m = _roundf(-low * _inverse(dmin)).clip(0, 63).astype(np.uint8)
    eff_scale = (d * sc)[..., None]
    eff_min = (dmin * m)[..., None]
    q = _roundf((sub + eff_min) * _inverse(eff_scale)).clip(0, top).astype(np.uint8)
    scales = np.zeros((n, 12), np.uint8)
    scales[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    scales[:, 4:8] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:] & 15) | ((m[:, 4:] & 15) << 4)
    pairs = (q & 15).reshape(n, 4, 2, 32)  # sub-blocks 2c and 2c + 1 share bytes [32c, 32c + 32)
    qs = (pairs[:, :, 0] | (pairs[:, :, 1] << 4)).reshape(n, 128)
    head = [_f16_bytes(d), _f16_bytes(dmin), scales]
    if bits == 4:
        return np.concatenate([*head, qs], axis=1)
    fifth = (q >> 4).reshape(n, 8, 32) << np.arange(8, dtype=np.uint8)[None, :, None]
    return np.concatenate([*head, np.bitwise_or.reduce(fifth, axis=1), qs], axis=1)


def _q6_k(blocks: np.ndarray) -> np.ndarray:
    """Sixteen sub-blocks of 16: value = (d * scale) * (q - 32), q in 0..63, scale int8."""
    n = blocks.shape[0]
    sub = blocks.reshape(n, 16, 16)
    at = np.abs(sub).argmax(axis=-1)[..., None]
    scale = np.take_along_axis(sub, at, axis=-1)[..., 0] / -32  # (n, 16), as llama.cpp's nmax
    d = (np.abs(scale).max(axis=-1, keepdims=True) / 127).astype(np.float16).astype(np.float32)
    sc = _roundf(scale * _inverse(d)).clip(-128, 127).astype(np.int8)
    eff = (d * sc.astype(np.float32))[..., None]
    q = (_roundf(sub * _inverse(eff)).clip(-32, 31) + 32).astype(np.uint8).reshape(n, 2, 128)
    low, high = q & 15, q >> 4
    ql = (low[:, :, :64] | (low[:, :, 64:] << 4)).reshape(n, 128)
    h = high.reshape(n, 2, 4, 32)
    qh = (h[:, :, 0] | (h[:, :, 1] << 2) | (h[:, :, 2] << 4) | (h[:, :, 3] << 6)).reshape(n, 64)
    return np.concatenate([ql, qh, sc.view(np.uint8), _f16_bytes(d)], axis=1)


_QUANTIZERS = {dt.q8_0: _q8_0, dt.q4_0: _q4_0, dt.q4_k: _q4_k,
               dt.q5_k: lambda blocks: _q4_k(blocks, 5), dt.q6_k: _q6_k}


def quantize(rows: np.ndarray, dtype) -> np.ndarray:
    """(rows, k) values as uint8 rows of ``dtype`` blocks, (rows, k / block * block bytes)."""
    from .. import _core

    values = _core.block_values(dtype)
    rows = np.ascontiguousarray(rows, np.float32)
    if rows.ndim != 2 or rows.shape[1] % values:
        raise ValueError(f"quantize: {dt.name(dtype)} takes rows of whole blocks of {values}, "
                         f"got shape {rows.shape}")
    with np.errstate(invalid="ignore", over="ignore"):
        blocks = _QUANTIZERS[dtype](rows.reshape(-1, values))
    return blocks.reshape(rows.shape[0], -1)
