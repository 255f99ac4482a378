"""Turns one tensor of a state dict (numpy array, torch tensor, or a weights reader entry)
into the storage layout of a parameter's dtype, checking its shape. Readers that expose
``storage(name)`` (safetensors, GGUF) hand their memory-mapped bytes over without a copy
when the file already holds the parameter's dtype."""

from __future__ import annotations

import numpy as np

from .. import dtype as dt
from ..errors import WeightsError
from ..runtime import _to_numpy, _to_storage


def bf16_to_f32(words: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as float32 values."""
    return (np.asarray(words, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _check_shape(shape, want, name: str, where: str) -> None:
    if tuple(int(d) for d in shape) != tuple(want):
        raise WeightsError(f"{where}: tensor '{name}' has shape {tuple(shape)}, the model "
                           f"expects {tuple(want)}")


def to_parameter_storage(state_dict, name: str, shape, dtype, where: str) -> np.ndarray:
    """``state_dict[name]`` as a contiguous array in ``dtype``'s storage layout."""
    locate = getattr(state_dict, "locate", None)
    if locate is not None:
        where, key = locate(name)
        if key != name:
            where = f"{where} (as the model's '{name}')"
        name_in_file = key
    else:
        name_in_file = name
    try:
        return _convert(state_dict, name, shape, dtype, where, name_in_file)
    except WeightsError:
        raise
    except (ValueError, TypeError, OSError) as e:
        raise WeightsError(f"{where}: cannot read tensor '{name_in_file}': {e}") from None


def _convert(state_dict, name, shape, dtype, where, label):
    storage = getattr(state_dict, "storage", None)
    raw = storage(name) if storage is not None else None
    if raw is not None:
        raw, raw_dtype = raw
        _check_shape(dt.element_shape(raw_dtype, raw.shape), shape, label, where)
        if raw_dtype == dtype:
            return np.ascontiguousarray(raw)
    if dt.is_quantized(dtype):
        raise WeightsError(f"{where}: tensor '{label}' is not stored as {dt.name(dtype)}, the "
                           f"parameter's dtype (luminal quantize writes quantized files)")
    array = _to_numpy(state_dict[name])
    _check_shape(array.shape, shape, label, where)
    if array.dtype == np.int64 and dtype == dt.int32:
        if array.size and (array.min() < -2**31 or array.max() >= 2**31):
            raise WeightsError(f"{where}: tensor '{label}' has int64 values outside int32")
    if array.dtype.kind not in "fiub":
        raise WeightsError(f"{where}: tensor '{label}' has unsupported numpy dtype {array.dtype}")
    return _to_storage(array, dtype)
