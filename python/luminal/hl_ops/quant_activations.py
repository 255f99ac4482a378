"""quantize_activations: the Q8_0 round trip of a tensor along its last dim, in primitives, as
llama.cpp quantizes the activations a quantized matmul reads (PyTorch has no equal). Its
result is the f32 values a Q8_0 block stores; a CPU rule multiplies them with a quantized
weight in integers (codegen/c/quant_int8.cc), which this graph makes an explicit choice.
Not the weights' quantization (weights/quantize.py) nor the block layouts (core/quant.h)."""

from __future__ import annotations

from .._core import OpKind
from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from .tensor_utils import full_like

Q8_0_BLOCK = 32
# f32(1 / 127); 2^-24 (1 + 2^-23), whose product with d0 lies in (ulp(d0) / 2, ulp(d0)]; the
# largest f32 below 0.5. The C kernel (codegen/c/quant_int8.cc) spells the same constants.
_RECIP_127 = 1.0 / 127.0
_NEXT_UP = 2.0 ** -24 + 2.0 ** -47
_BELOW_HALF = 0.4999999701976776


def _bin(op, a, b):
    return a._binary(op, b)


def _const(x, value, dtype=dt.float32):
    return full_like(x, value, dtype)


def _add(a, b):
    return _bin(OpKind.Add, a, b)


def _mul(a, b):
    return _bin(OpKind.Mul, a, b)


def _less(a, b):
    return _bin(OpKind.LessThan, a, b)._cast(dt.float32)


def _mul_c(a, value):
    return _mul(a, _const(a, value))


def _abs_sign(x):
    """(|x|, s) with s = -1 where x < 0, else 1: |x| = x * s (exact, -0 stays -0)."""
    s = _add(_mul_c(_less(x, _const(x, 0.0)), -2.0), _const(x, 1.0))
    return _mul(x, s), s


def quantize_activations(x, scheme: str = "q8_0"):
    """The values ``x`` takes through a Q8_0 block and back, along its last dim (a multiple of
    32), bit for bit gguf-py's ``dequantize(quantize(x, Q8_0))`` for |x| < 127 * 65504 (past
    that the f16 scale is inf, as there):

        amax = max |x| over each block of 32
        d    = amax / 127, correctly rounded (amax * f32(1/127), moved up one ulp where the
               residual amax - 127 d0, computed exactly, says the quotient lies above the
               midpoint; the product alone differs from the quotient for 4.7% of amax)
        d16  = d rounded to f16
        id   = 1 / d, or 0 where d16 is 0 (the block is 0 then, as gguf's)
        q    = round(x * id), halves away from zero (roundf; gguf-py's np_roundf)
        out  = q * d16

    Every value is an integer q in [-127, 127] times its block's f16 scale. A graph reading
    this where a Linear's quantized weight is multiplied runs, on the CPU, as integer dot
    products (rule cpu-quant-int8); elsewhere it runs as the primitives it is."""
    if scheme != "q8_0":
        raise DTypeError(f"quantize_activations: scheme must be 'q8_0', got {scheme!r}")
    if x.dtype != dt.float32:
        raise DTypeError(f"quantize_activations: needs an f32 tensor, got {dt.name(x.dtype)} "
                         f"of shape {x.shape}")
    if x.ndim == 0:
        raise ShapeError("quantize_activations: needs at least one dim, got a scalar")
    k = x.shape[-1]
    if not isinstance(k, int) or k % Q8_0_BLOCK != 0:
        raise ShapeError(f"quantize_activations: the last dim of shape {x.shape} must be a "
                         f"multiple of {Q8_0_BLOCK}")
    lead = list(x.shape[:-1])
    xb = x.reshape(lead + [k // Q8_0_BLOCK, Q8_0_BLOCK])
    ax, _ = _abs_sign(xb)
    amax = ax._reduce(OpKind.MaxReduce, xb.ndim - 1)  # (..., blocks)
    d0 = _mul_c(amax, _RECIP_127)
    ulp = _add(_add(d0, _mul_c(d0, _NEXT_UP)), _mul_c(d0, -1.0))
    residual = _add(_add(amax, _mul_c(d0, -128.0)), d0)  # amax - 127 d0, exact
    up = _less(_mul_c(ulp, 63.5), residual)
    d = _add(d0, _mul(up, ulp))
    d16 = d._cast(dt.float16)._cast(dt.float32)
    keep = _less(_const(d16, 0.0), d16)
    inv = _mul(_add(d, _add(_mul_c(keep, -1.0), _const(keep, 1.0)))._unary(OpKind.Recip), keep)
    y = _mul(xb, inv.unsqueeze(-1).expand(xb.shape))
    a, s = _abs_sign(y)
    frac = _bin(OpKind.Mod, a, _const(a, 1.0))
    rounded = _add(_add(a, _mul_c(frac, -1.0)), _less(_const(frac, _BELOW_HALF), frac))
    q = _mul(rounded, s)
    out = _mul(q, d16.unsqueeze(-1).expand(xb.shape))
    return out.reshape(lead + [k])
