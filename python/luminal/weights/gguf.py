"""A GGUF reader of our own (format versions 2 and 3): metadata, tensor infos and
memory-mapped tensor data. F32, F16 and BF16 tensors are zero-copy views; Q8_0, Q4_0, Q4_K,
Q5_K and Q6_K tensors stay quantized: zero-copy views of their raw blocks (uint8 rows), read by a
Cast in the graph (core/quant.h). Tensors of the other block types the `gguf` package can
dequantize (Q5_0, Q3_K, IQ4_XS, ...) are dequantized to F16 when read, with a warning
when the file is opened. Shapes come out in numpy order (GGUF stores them reversed).
Not here: writing GGUF (gguf_write.py), or mapping llama.cpp tensor names onto a model's."""

from __future__ import annotations

import math
import os
import struct
import warnings

import numpy as np

from .. import _core
from .. import dtype as dt
from ..errors import WeightsError
from .convert import bf16_to_f32
from .mapping import WeightsMapping
from .pages import map_file
from .sizes import numpy_can_hold

_MAGIC = b"GGUF"
# ggml tensor types we read: type id -> (name, numpy storage dtype, luminal dtype)
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K = 0, 1, 2, 8, 12, 13, 14
GGML_I32, GGML_BF16 = 26, 30
_PLAIN = {
    GGML_F32: ("F32", np.dtype("<f4"), dt.float32),
    GGML_F16: ("F16", np.dtype("<f2"), dt.float16),
    GGML_I32: ("I32", np.dtype("<i4"), dt.int32),
    GGML_BF16: ("BF16", np.dtype("<u2"), dt.bfloat16),
}
# ggml block types kept quantized: type id -> (name, luminal dtype); sizes from the core
_QUANTIZED = {
    GGML_Q8_0: ("Q8_0", dt.q8_0), GGML_Q4_0: ("Q4_0", dt.q4_0),
    GGML_Q4_K: ("Q4_K", dt.q4_k), GGML_Q5_K: ("Q5_K", dt.q5_k), GGML_Q6_K: ("Q6_K", dt.q6_k),
}
GGML_TYPE_OF = {lm: kind for kind, (_, lm) in _QUANTIZED.items()}
GGML_TYPE_OF.update({lm: kind for kind, (_, _, lm) in _PLAIN.items()})

# GGUF metadata value types -> struct format (scalars); 8 string, 9 array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_MAX_NESTING = 8  # arrays of arrays: deeper than any real file, shallow enough for the stack


class _Cursor:
    """Reads little-endian values from a byte buffer, raising WeightsError past its end."""

    def __init__(self, data, path: str):
        self.data = data
        self.pos = 0
        self.path = path

    def take(self, n: int, what: str):
        if n < 0 or self.pos + n > len(self.data):
            raise WeightsError(f"{self.path}: truncated GGUF file while reading {what} "
                               f"(needs {n} bytes at offset {self.pos}, file has "
                               f"{len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def scalar(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.scalar("<Q", what)
        raw = bytes(self.take(n, what))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WeightsError(f"{self.path}: bad GGUF file: {what} is not UTF-8") from None

    def value(self, kind: int, what: str, depth: int = 0):
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind], what)
        if kind == _STRING:
            return self.string(what)
        if kind == _ARRAY:
            if depth >= _MAX_NESTING:
                raise WeightsError(f"{self.path}: bad GGUF file: {what} nests arrays more than "
                                   f"{_MAX_NESTING} deep")
            inner = self.scalar("<I", what)
            n = self.scalar("<Q", what)
            if n > len(self.data):
                raise WeightsError(f"{self.path}: bad GGUF file: {what} claims {n} elements")
            return [self.value(inner, what, depth + 1) for _ in range(n)]
        raise WeightsError(f"{self.path}: bad GGUF file: {what} has unknown value type {kind}")


class GGUFFile(WeightsMapping):
    """One .gguf file: ``f.metadata`` (dict), ``f[name]`` a numpy array (BF16 and the
    quantized types as float32), ``f.storage(name)`` a zero-copy view in the file's dtype
    (quantized: uint8 rows of raw blocks)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.source = self.path
        try:
            self._map = map_file(self.path)
        except (OSError, ValueError) as e:
            raise WeightsError(f"{self.path}: cannot open GGUF file ({e})") from None
        cur = _Cursor(self._map, self.path)
        if bytes(cur.take(4, "the magic")) != _MAGIC:
            raise WeightsError(f"{self.path}: not a GGUF file (bad magic)")
        self.version = cur.scalar("<I", "the version")
        if self.version not in (2, 3):
            raise WeightsError(f"{self.path}: unsupported GGUF version {self.version}")
        n_tensors = cur.scalar("<Q", "the tensor count")
        n_kv = cur.scalar("<Q", "the metadata count")
        if n_tensors > len(self._map) or n_kv > len(self._map):
            raise WeightsError(f"{self.path}: bad GGUF header: {n_tensors} tensors, {n_kv} "
                               f"metadata entries")
        self.metadata = {}
        for i in range(n_kv):
            key = cur.string(f"metadata key {i}")
            kind = cur.scalar("<I", f"metadata '{key}'")
            self.metadata[key] = cur.value(kind, f"metadata '{key}'")
        infos = []
        for i in range(n_tensors):
            name = cur.string(f"tensor name {i}")
            n_dims = cur.scalar("<I", f"tensor '{name}'")
            if n_dims > 8:
                raise WeightsError(f"{self.path}: bad GGUF tensor '{name}': {n_dims} dims")
            dims = [cur.scalar("<Q", f"tensor '{name}'") for _ in range(n_dims)]
            kind = cur.scalar("<I", f"tensor '{name}'")
            offset = cur.scalar("<Q", f"tensor '{name}'")
            infos.append((name, tuple(reversed(dims)), kind, offset))
        align = self.metadata.get("general.alignment", 32)
        if isinstance(align, bool) or not isinstance(align, int) or align <= 0:
            raise WeightsError(f"{self.path}: bad GGUF alignment {align}")
        data_start = (cur.pos + align - 1) // align * align
        self._entries = {}
        self._widened = {}  # a block type luminal does not keep -> its tensors read as F16
        for name, shape, kind, offset in infos:
            nbytes = self._nbytes(name, shape, kind)
            begin = data_start + offset
            if begin + nbytes > len(self._map):
                raise WeightsError(f"{self.path}: truncated file: tensor '{name}' ends at byte "
                                   f"{begin + nbytes}, the file has {len(self._map)}")
            self._entries[name] = (shape, kind, begin, nbytes)
        if self._widened:
            kinds = ", ".join(f"{k} ({len(v)} tensors)" for k, v in sorted(self._widened.items()))
            warnings.warn(f"{self.path}: {kinds} are dequantized to F16 when read (luminal keeps "
                          f"Q8_0, Q4_0, Q4_K, Q5_K and Q6_K quantized): they take 2 bytes a "
                          f"weight in memory and per token", stacklevel=3)

    def _nbytes(self, name, shape, kind) -> int:
        count = math.prod(shape)  # Python ints: no wrap-around
        if not numpy_can_hold(shape, 4):  # 4: the widest array a tensor becomes (f32)
            raise WeightsError(f"{self.path}: bad GGUF tensor '{name}': shape {list(shape)} needs "
                               f"more bytes than an array can hold")
        if kind in _PLAIN:
            return count * _PLAIN[kind][1].itemsize
        if kind in _QUANTIZED:
            type_name, lm_dtype = _QUANTIZED[kind]
            blocks = type_name, _core.block_values(lm_dtype), _core.block_bytes(lm_dtype)
        else:
            blocks = _other_block_type(kind)
            if blocks is not None:
                self._widened.setdefault(blocks[0], []).append(name)
        if blocks is not None:
            type_name, block, block_bytes = blocks
            if not shape or shape[-1] % block:
                row = shape[-1] if shape else "no"
                raise WeightsError(f"{self.path}: {type_name} tensor '{name}' has a row of {row} "
                                   f"values, not a multiple of its block of {block}")
            return count // block * block_bytes
        raise WeightsError(f"{self.path}: tensor '{name}' has ggml type {kind}, which luminal "
                           f"does not read (F32, F16, BF16, I32, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K "
                           f"are read as they are, the other block types the `gguf` package knows "
                           f"as F16; convert the file with `luminal quantize`)")

    def shape(self, name: str) -> tuple:
        return self._entry(name)[0]

    def locate(self, name: str):
        return self.path, name

    def type_name(self, name: str) -> str:
        kind = self._entry(name)[1]
        if kind in _QUANTIZED:
            return _QUANTIZED[kind][0]
        return _PLAIN[kind][0] if kind in _PLAIN else _other_block_type(kind)[0]

    def file_dtype(self, name: str):
        """The luminal dtype storage(name) returns, without reading the tensor."""
        kind = self._entry(name)[1]
        if kind in _QUANTIZED:
            return _QUANTIZED[kind][1]
        return _PLAIN[kind][2] if kind in _PLAIN else dt.float16

    def storage(self, name: str):
        """(array, luminal dtype): a zero-copy view of the file's bytes (quantized types:
        uint8 rows of raw blocks, dt.element_shape gives the tensor's shape)."""
        shape, kind, begin, nbytes = self._entry(name)
        data = self._map[begin:begin + nbytes]
        if kind not in _PLAIN:  # blocks: uint8 rows
            rows = math.prod(shape[:-1])
            row_bytes = nbytes // rows if rows else 0
            raw = np.ndarray((*shape[:-1], row_bytes), np.uint8, buffer=data)
            if kind in _QUANTIZED:
                return raw, _QUANTIZED[kind][1]
            return self._dequantized(name, shape, kind, raw), dt.float16
        _, np_dtype, lm_dtype = _PLAIN[kind]
        if nbytes == 0:
            return np.zeros(shape, np_dtype), lm_dtype
        return np.ndarray(shape, np_dtype, buffer=data), lm_dtype

    def _dequantized(self, name, shape, kind, raw) -> np.ndarray:
        """A tensor of a block type luminal does not keep (``raw``: its rows of blocks),
        dequantized by the `gguf` package, as F16 (a value past F16's range is a WeightsError
        naming the tensor)."""
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize as gguf_dequantize

        try:
            with np.errstate(all="ignore"):
                values = gguf_dequantize(raw, GGMLQuantizationType(kind)).reshape(shape)
        except NotImplementedError:
            raise WeightsError(f"{self.path}: tensor '{name}' is {self.type_name(name)}, which "
                               f"neither luminal nor the gguf package reads") from None
        finite = values[np.isfinite(values)]
        if finite.size and np.abs(finite).max() > np.finfo(np.float16).max:
            raise WeightsError(f"{self.path}: {self.type_name(name)} tensor '{name}' holds values "
                               f"past F16's range; luminal reads this block type as F16")
        return values.astype(np.float16)

    def __getitem__(self, name) -> np.ndarray:
        array, lm_dtype = self.storage(name)
        if dt.is_quantized(lm_dtype):
            return dequantize(array, lm_dtype)
        return bf16_to_f32(array) if lm_dtype == dt.bfloat16 else array


def _other_block_type(kind: int):
    """(name, values per block, bytes per block) of a ggml block type the `gguf` package can
    dequantize and luminal does not keep, or None."""
    try:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    except ImportError:
        return None
    try:
        qtype = GGMLQuantizationType(kind)
    except ValueError:
        return None
    if qtype not in GGML_QUANT_SIZES:
        return None
    block, block_bytes = GGML_QUANT_SIZES[qtype]
    return qtype.name, block, block_bytes


def dequantize(raw: np.ndarray, dtype) -> np.ndarray:
    """float32 values of quantized storage ``raw`` (uint8 rows of blocks of ``dtype``), by the
    interpreter's Cast: the one definition of dequantization."""
    from ..graph import Graph
    from ..runtime import NativeRuntime

    shape = dt.element_shape(dtype, raw.shape)
    if math.prod(shape) == 0:
        return np.zeros(shape, np.float32)
    cx = Graph()
    w = cx.tensor(shape, dtype, name="w")
    y = w.to(dt.float32).output()
    rt = NativeRuntime()
    rt._load(cx)
    rt.set_storage(w, raw)
    rt.execute()
    return rt.get(y)


def load_gguf(path) -> GGUFFile:
    return GGUFFile(path)
