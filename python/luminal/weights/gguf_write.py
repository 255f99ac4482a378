"""A GGUF writer of our own (format version 3): metadata, tensor infos and aligned tensor data,
the layout weights/gguf.py reads and llama.cpp loads. Values take GGUF's types from Python's:
bool -> BOOL, int -> UINT32 (INT64 outside it), float -> FLOAT32, str -> STRING, lists ->
ARRAY of their first element's type (ints in arrays: INT32, as llama.cpp's token types);
``Typed(kind, value)`` names a type explicitly. Not here: quantizing (quantize.py)."""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from .gguf import _ARRAY, _STRING

ALIGNMENT = 32
UINT32, INT32, FLOAT32, BOOL, UINT64, INT64 = 4, 5, 6, 7, 10, 11
_FORMAT = {UINT32: "<I", INT32: "<i", FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q"}


class Typed(NamedTuple):
    kind: int  # a GGUF value type (UINT32, INT32, ...)
    value: object


class Tensor(NamedTuple):
    name: str
    shape: tuple      # numpy order (GGUF stores it reversed)
    ggml_type: int    # weights/gguf.py GGML_* ids
    data: np.ndarray  # its bytes as stored: plain values, or uint8 rows of quantized blocks


def _kind_of(value, in_array: bool) -> int:
    if isinstance(value, Typed):
        return value.kind
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        if in_array:
            return INT32
        return UINT32 if 0 <= value < 2**32 else INT64
    if isinstance(value, float):
        return FLOAT32
    if isinstance(value, str):
        return _STRING
    if isinstance(value, (list, tuple)):
        return _ARRAY
    raise TypeError(f"no GGUF type for {type(value).__name__} {value!r}")


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _value(kind: int, value, out: list) -> None:
    value = value.value if isinstance(value, Typed) else value
    if kind == _STRING:
        out.append(_string(value))
    elif kind == _ARRAY:
        inner = _kind_of(value[0], True) if value else INT32
        out.append(struct.pack("<IQ", inner, len(value)))
        for item in value:
            _value(inner, item, out)
    else:
        out.append(struct.pack(_FORMAT[kind], value))


def write_gguf(path, metadata: dict, tensors: list) -> None:
    """Writes ``metadata`` (key -> value) and ``tensors`` (Tensor, in order) to ``path``."""
    head = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(metadata))]
    for key, value in metadata.items():
        kind = _kind_of(value, False)
        head.append(_string(key) + struct.pack("<I", kind))
        _value(kind, value, head)
    offset = 0
    for t in tensors:
        head.append(_string(t.name) + struct.pack("<I", len(t.shape)))
        head.append(struct.pack(f"<{len(t.shape)}Q", *reversed(t.shape)))
        head.append(struct.pack("<IQ", t.ggml_type, offset))
        offset += -(-t.data.nbytes // ALIGNMENT) * ALIGNMENT
    with open(path, "wb") as f:
        header = b"".join(head)
        f.write(header + bytes(-len(header) % ALIGNMENT))
        for t in tensors:
            raw = np.ascontiguousarray(t.data).tobytes()
            f.write(raw + bytes(-len(raw) % ALIGNMENT))
