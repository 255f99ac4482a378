"""Dtypes: the names users write (``lm.float32``, ``"f16"``, ``torch.bfloat16``,
``np.int32``), their numpy storage, and PyTorch's type promotion.

Promotion follows torch for the dtypes we have: bool < int < float; a float tensor meets a
wider float by widening (f16 with bf16 gives f32); Python scalars do not widen a tensor of
their own category (``half_tensor * 2.0`` stays f16, ``int_tensor * 2`` stays int); int
tensors meeting a Python float become f32. There is no f64 or i64: those map to f32 and i32.
"""

import numpy as np

from . import _core
from ._core import DType
from .errors import DTypeError

float32 = f32 = DType.F32
float16 = f16 = half = DType.F16
bfloat16 = bf16 = DType.BF16
int32 = i32 = DType.Int
bool_ = DType.Bool
# GGUF's quantized blocks: parameter storage only, read through .cast(float32) (core/quant.h)
q8_0, q4_0, q4_k, q5_k, q6_k = DType.Q8_0, DType.Q4_0, DType.Q4_K, DType.Q5_K, DType.Q6_K
QUANTIZED = (q8_0, q4_0, q4_k, q5_k, q6_k)

_BY_NAME = {
    "f32": DType.F32, "float32": DType.F32, "float": DType.F32, "float64": DType.F32,
    "f16": DType.F16, "float16": DType.F16, "half": DType.F16,
    "bf16": DType.BF16, "bfloat16": DType.BF16,
    "int": DType.Int, "i32": DType.Int, "int32": DType.Int, "int64": DType.Int, "long": DType.Int,
    "bool": DType.Bool,
    "q8_0": DType.Q8_0, "q4_0": DType.Q4_0, "q4_k": DType.Q4_K, "q5_k": DType.Q5_K,
    "q6_k": DType.Q6_K,
}

# The numpy dtype each dtype is stored as when data crosses into the core.
_STORAGE = {
    DType.F32: np.dtype(np.float32),
    DType.F16: np.dtype(np.float16),
    DType.BF16: np.dtype(np.uint16),
    DType.Int: np.dtype(np.int32),
    DType.Bool: np.dtype(np.bool_),
    **{q: np.dtype(np.uint8) for q in QUANTIZED},  # raw block bytes
}

_FLOAT_RANK = {DType.F16: 1, DType.BF16: 1, DType.F32: 2}


def to_dtype(value) -> DType:
    """Accepts a DType, a name, a numpy dtype or type, or a torch dtype."""
    if isinstance(value, DType):
        return value
    if value is bool:
        return DType.Bool
    if value is int:
        return DType.Int
    if value is float:
        return DType.F32
    if isinstance(value, str):
        name = value
    else:
        name = str(value).replace("torch.", "")
        try:
            name = np.dtype(value).name
        except TypeError:
            pass
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise DTypeError(f"unknown dtype {value!r} (use float32, float16, bfloat16, int32 or bool)")


def is_float(dtype: DType) -> bool:
    return dtype in _FLOAT_RANK


def storage(dtype: DType) -> np.dtype:
    return _STORAGE[dtype]


def is_quantized(dtype: DType) -> bool:
    return dtype in QUANTIZED


def element_shape(dtype: DType, storage_shape: tuple) -> tuple:
    """The shape in elements of quantized storage of ``storage_shape`` bytes (rows of whole
    blocks); plain dtypes: the shape itself."""
    if not is_quantized(dtype) or not storage_shape:
        return tuple(storage_shape)
    block_bytes, block_values = _core.block_bytes(dtype), _core.block_values(dtype)
    row = storage_shape[-1]
    if row % block_bytes:
        raise DTypeError(f"{name(dtype)} storage rows of {row} bytes are not whole blocks of "
                         f"{block_bytes}")
    return (*storage_shape[:-1], row // block_bytes * block_values)


def storage_shape(dtype: DType, shape: tuple) -> tuple:
    """The shape of the storage of a tensor of ``shape``: element_shape's inverse."""
    if not is_quantized(dtype) or not shape:
        return tuple(shape)
    blocks = shape[-1] // _core.block_values(dtype)
    return (*shape[:-1], blocks * _core.block_bytes(dtype))


def promote(a: DType, b: DType) -> DType:
    """The dtype two tensors combine to, as torch.result_type does."""
    if a == b:
        return a
    if is_float(a) and is_float(b):
        return DType.F32 if _FLOAT_RANK[a] == _FLOAT_RANK[b] or DType.F32 in (a, b) else a
    if is_float(a):
        return a
    if is_float(b):
        return b
    return DType.Int  # int with bool


def scalar_dtype(value, tensor_dtype: DType) -> DType:
    """The dtype a Python scalar takes next to a tensor of ``tensor_dtype``."""
    if isinstance(value, bool):
        return tensor_dtype
    if isinstance(value, int):
        return tensor_dtype if tensor_dtype != DType.Bool else DType.Int
    if isinstance(value, float):
        return tensor_dtype if is_float(tensor_dtype) else DType.F32
    raise DTypeError(f"cannot use {type(value).__name__} {value!r} as a tensor operand")


def name(dtype: DType) -> str:
    return {DType.F32: "float32", DType.F16: "float16", DType.BF16: "bfloat16",
            DType.Int: "int32", DType.Bool: "bool", DType.Q8_0: "q8_0", DType.Q4_0: "q4_0",
            DType.Q4_K: "q4_k", DType.Q5_K: "q5_k", DType.Q6_K: "q6_k"}[dtype]
