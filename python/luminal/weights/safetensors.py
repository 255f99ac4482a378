"""A safetensors reader of our own: parses the JSON header, memory-maps the file with numpy
and hands out tensors as zero-copy views. Dtypes F32, F16, BF16, I32, I64, BOOL (plus the
other plain ints and F64, converted on use). Every defect names the file and the tensor.
Not here: writing files (tests use the ``safetensors`` package for that)."""

from __future__ import annotations

import json
import math
import os
import struct

import numpy as np

from .. import dtype as dt
from ..errors import WeightsError
from .convert import bf16_to_f32
from .mapping import WeightsMapping
from .pages import map_file
from .sizes import numpy_can_hold

# safetensors dtype name -> (numpy storage dtype, luminal dtype or None when converted)
_DTYPES = {
    "F32": (np.dtype("<f4"), dt.float32),
    "F16": (np.dtype("<f2"), dt.float16),
    "BF16": (np.dtype("<u2"), dt.bfloat16),
    "I32": (np.dtype("<i4"), dt.int32),
    "I64": (np.dtype("<i8"), None),
    "BOOL": (np.dtype("bool"), dt.bool_),
    "F64": (np.dtype("<f8"), None),
    "I16": (np.dtype("<i2"), None),
    "I8": (np.dtype("i1"), None),
    "U8": (np.dtype("u1"), None),
}
_MAX_HEADER = 100 * 1024 * 1024


class SafeTensorsFile(WeightsMapping):
    """One .safetensors file: ``f[name]`` is a numpy array (BF16 converted to float32);
    ``f.storage(name)`` the raw zero-copy view and its luminal dtype."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.source = self.path
        size = _file_size(self.path)
        with open(self.path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise WeightsError(f"{self.path}: truncated safetensors file ({size} bytes, no "
                                   f"header length)")
            (n,) = struct.unpack("<Q", head)
            if n > _MAX_HEADER or 8 + n > size:
                raise WeightsError(f"{self.path}: bad safetensors header: it claims {n} bytes "
                                   f"but the file has {size}")
            raw = f.read(n)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise WeightsError(f"{self.path}: bad safetensors header: not valid JSON ({e})") \
                from None
        except RecursionError:
            raise WeightsError(f"{self.path}: bad safetensors header: JSON nested too "
                               f"deeply") from None
        except ValueError as e:  # an integer of more digits than Python converts
            raise WeightsError(f"{self.path}: bad safetensors header: {e}") from None
        if not isinstance(header, dict):
            raise WeightsError(f"{self.path}: bad safetensors header: not a JSON object")
        self.metadata = header.pop("__metadata__", None) or {}
        self._data_start = 8 + n
        self._entries = {}
        for name, entry in header.items():
            self._entries[name] = self._parse_entry(name, entry, size)
        self._check_disjoint()
        self._map = None

    def _check_disjoint(self) -> None:
        """Tensors may not share bytes (the reference reader refuses it too): an overlap would
        load as aliased views."""
        spans = sorted((begin, begin + nbytes, name)
                       for name, (_, _, begin, nbytes) in self._entries.items() if nbytes)
        for (_, end, first), (begin, _, second) in zip(spans, spans[1:]):
            if begin < end:
                raise WeightsError(f"{self.path}: bad safetensors header: tensors '{first}' "
                                   f"and '{second}' overlap (bytes {begin} to {end})")

    def _parse_entry(self, name, entry, size):
        bad = f"{self.path}: bad safetensors header entry for tensor '{name}'"
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
            raise WeightsError(f"{bad}: needs dtype, shape and data_offsets")
        kind, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not isinstance(kind, str) or kind not in _DTYPES:
            raise WeightsError(f"{bad}: unsupported dtype {kind!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise WeightsError(f"{bad}: shape {shape!r} is not a list of sizes")
        ints = isinstance(offsets, list) and all(isinstance(o, int) for o in offsets)
        if not ints or len(offsets) != 2 or not 0 <= offsets[0] <= offsets[1]:
            raise WeightsError(f"{bad}: data_offsets {offsets!r} are not [begin, end]")
        np_dtype = _DTYPES[kind][0]
        if not numpy_can_hold(shape, np_dtype.itemsize):
            raise WeightsError(f"{bad}: shape {shape} needs more bytes than an array can hold")
        want = math.prod(shape) * np_dtype.itemsize  # Python ints: no wrap-around
        if offsets[1] - offsets[0] != want:
            raise WeightsError(f"{bad}: {kind} shape {shape} needs {want} bytes, the offsets "
                               f"give {offsets[1] - offsets[0]}")
        if self._data_start + offsets[1] > size:
            raise WeightsError(f"{self.path}: truncated file: tensor '{name}' ends at byte "
                               f"{self._data_start + offsets[1]}, the file has {size}")
        return kind, tuple(shape), offsets[0], want

    def __getitem__(self, name) -> np.ndarray:
        raw, _ = self.storage(name)
        kind = self._entries[name][0]
        return bf16_to_f32(raw) if kind == "BF16" else raw

    def locate(self, name: str):
        return self.path, name

    def dtype_name(self, name: str) -> str:
        """The safetensors dtype name ("F32", "BF16", ...) of ``name``."""
        return self._entry(name)[0]

    def shape(self, name: str) -> tuple:
        return self._entry(name)[1]

    def storage(self, name: str):
        """(zero-copy view, luminal dtype or None) of tensor ``name``. The map is copy-on-write
        (mode "c") because the core's set_data takes writable arrays only."""
        kind, shape, begin, nbytes = self._entry(name)
        np_dtype, lm_dtype = _DTYPES[kind]
        count = nbytes // np_dtype.itemsize
        if count == 0:
            return np.zeros(shape, np_dtype), lm_dtype
        if self._map is None:
            self._map = map_file(self.path)
        start = self._data_start + begin
        data = self._map[start:start + count * np_dtype.itemsize]
        return np.ndarray(shape, np_dtype, buffer=data), lm_dtype


class SafeTensorsDir(WeightsMapping):
    """All tensors of a model directory's *.safetensors files (sharded or not) as one map."""

    def __init__(self, directory):
        directory = os.fspath(directory)
        files = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors"))
        if not files:
            raise WeightsError(f"{directory}: no .safetensors files")
        self.source = directory
        self._files = [SafeTensorsFile(os.path.join(directory, f)) for f in files]
        self._entries = {}  # tensor name -> the file that holds it
        for f in self._files:
            for name in f:
                if name in self._entries:
                    raise WeightsError(f"{f.path}: tensor '{name}' also appears in "
                                       f"{self._entries[name].path}")
                self._entries[name] = f

    def file_of(self, name: str) -> SafeTensorsFile:
        return self._entry(name)

    def __getitem__(self, name):
        return self.file_of(name)[name]

    def locate(self, name):
        return self.file_of(name).path, name

    def storage(self, name):
        return self.file_of(name).storage(name)

    def dtype_name(self, name):
        return self.file_of(name).dtype_name(name)

    def shape(self, name):
        return self.file_of(name).shape(name)


def load_safetensors(path):
    """A file or a model directory of safetensors, as a lazy mapping of name -> array."""
    if os.path.isdir(path):
        return SafeTensorsDir(path)
    return SafeTensorsFile(path)


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError as e:
        raise WeightsError(f"{path}: cannot open weights file ({e.strerror})") from None
