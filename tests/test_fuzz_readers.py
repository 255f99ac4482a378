"""Fuzzers for the weight readers (#19): random bytes, and structured mutations of valid
safetensors and GGUF files (the header length, JSON fields of every type, counts, offsets,
dims, value and tensor types, nesting, truncation, flipped bytes). Whatever the file, a reader
raises WeightsError or loads it, and every tensor it lists then reads as an array of its
shape; never another exception. Deterministic (derandomized) and a few seconds each."""

import json
import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import luminal as lm
from luminal.weights import load_gguf, load_safetensors

from test_hostile_inputs import gguf_string, write_gguf, write_safetensors

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def read_all(load, path) -> None:
    """Loads ``path`` and reads every tensor: WeightsError is the only failure allowed."""
    try:
        f = load(path)
        for name in f:
            value = f[name]
            assert isinstance(value, np.ndarray)
            assert math.prod(value.shape) == value.size
        getattr(f, "metadata", None)
    except lm.WeightsError:
        pass


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---- safetensors -----------------------------------------------------------------------

def valid_safetensors() -> tuple:
    """(header, data) of a valid file: f32, f16 and i64 tensors, back to back."""
    header = {"__metadata__": {"format": "pt"},
              "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "F16", "shape": [4], "data_offsets": [24, 32]},
              "c": {"dtype": "I64", "shape": [1], "data_offsets": [32, 40]}}
    data = np.arange(6, dtype="<f4").tobytes() + np.ones(4, "<f2").tobytes() + \
        np.int64(7).tobytes()
    return header, data


# Values a mutated field may take: every JSON type, edge integers, nesting.
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.text(max_size=6) | st.floats(allow_nan=True) |
    st.sampled_from([0, -1, 1, 3, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -2**63]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8)
DTYPE_NAME = st.sampled_from(["F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64", "U8",
                              "BOOL", "F8_E4M3", "Q8", "f32", ""])


@st.composite
def safetensors_mutation(draw):
    header, data = valid_safetensors()
    header = json.loads(json.dumps(header))
    for _ in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(["a", "b", "c", "__metadata__", "new"]))
        entry = header.setdefault(name, {})
        if not isinstance(entry, dict) or name == "__metadata__":
            header[name] = draw(JSON_VALUE)
            continue
        field = draw(st.sampled_from(["dtype", "shape", "data_offsets", "extra"]))
        kind = draw(st.sampled_from(["any", "dtype", "ints"]))
        if kind == "dtype":
            entry[field] = draw(DTYPE_NAME)
        elif kind == "ints":
            entry[field] = draw(st.lists(st.sampled_from(
                [0, 1, 2, 3, 4, 8, 24, 40, 41, -1, 2**31, 2**62, 2**63 - 1, 2**64]), max_size=4))
        else:
            entry[field] = draw(JSON_VALUE)
    raw = json.dumps(header).encode()
    length = draw(st.sampled_from([len(raw), len(raw), 0, len(raw) + 1, len(raw) - 1, 2**63,
                                   2**64 - 1]))
    blob = struct.pack("<Q", length) + raw + data
    cut = draw(st.sampled_from([len(blob), len(blob), len(blob) - 1, 8 + len(raw), 5]))
    return blob[:cut]


@FUZZ
@given(data=st.binary(max_size=300))
def test_safetensors_random_bytes(tmp_path, data):
    read_all(load_safetensors, write(tmp_path, "r.safetensors", data))


@FUZZ
@given(header=st.binary(max_size=200), tail=st.binary(max_size=64))
def test_safetensors_random_header_bytes(tmp_path, header, tail):
    blob = struct.pack("<Q", len(header)) + header + tail
    read_all(load_safetensors, write(tmp_path, "h.safetensors", blob))


@FUZZ
@given(blob=safetensors_mutation())
def test_safetensors_structured_mutations(tmp_path, blob):
    read_all(load_safetensors, write(tmp_path, "m.safetensors", blob))


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=4))
def test_safetensors_flipped_bytes(tmp_path, flips):
    path = tmp_path / "f.safetensors"
    write_safetensors(path, *valid_safetensors())
    blob = bytearray(path.read_bytes())
    for at, mask in flips:
        blob[at % len(blob)] ^= mask
    read_all(load_safetensors, write(tmp_path, "f.safetensors", bytes(blob)))


def test_the_valid_safetensors_file_loads():
    """The base of the mutations is itself valid: a fuzzer that only ever sees broken files
    would pass a reader that refuses everything."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "v.safetensors"
        write_safetensors(path, *valid_safetensors())
        f = load_safetensors(path)
        np.testing.assert_array_equal(f["a"], np.arange(6).reshape(2, 3))
        assert f["b"].tolist() == [1.0] * 4 and f["c"].tolist() == [7]


# ---- GGUF ------------------------------------------------------------------------------

U32 = lambda v: struct.pack("<I", v)  # noqa: E731


def valid_gguf_parts() -> tuple:
    """(metadata, tensors, data) of a valid file: an f32 and an f16 tensor."""
    metadata = [("general.architecture", 8, gguf_string("llama")),
                ("general.alignment", 4, U32(32)),
                ("list", 9, struct.pack("<IQ", 4, 2) + U32(1) + U32(2))]
    tensors = [("w", [3, 2], 0, 0), ("h", [4], 1, 32)]
    data = np.arange(6, dtype="<f4").tobytes() + bytes(8) + np.ones(4, "<f2").tobytes()
    return metadata, tensors, data


EDGE_U64 = st.sampled_from([0, 1, 2, 3, 4, 8, 9, 31, 32, 33, 2**31, 2**32, 2**62, 2**64 - 1])


@st.composite
def gguf_value(draw, depth=0):
    """(type id, bytes) of a metadata value, types and lengths possibly lying."""
    kind = draw(st.integers(0, 14))
    if kind == 8:
        n = draw(st.sampled_from([0, 3, 2**40, 2**64 - 1]))
        return kind, struct.pack("<Q", n) + draw(st.binary(max_size=8))
    if kind == 9 and depth < 3:
        inner, value = draw(gguf_value(depth + 1))
        n = draw(st.sampled_from([0, 1, 2, 2**33, 2**64 - 1]))
        return kind, struct.pack("<IQ", inner, n) + value * draw(st.integers(0, 2))
    return kind, draw(st.binary(max_size=9))


@st.composite
def gguf_mutation(draw):
    metadata, tensors, data = valid_gguf_parts()
    metadata, tensors = list(metadata), [list(t) for t in tensors]
    for _ in range(draw(st.integers(1, 4))):
        what = draw(st.sampled_from(["value", "new key", "dims", "dim", "type", "offset",
                                     "tensor name", "drop tensor", "alignment"]))
        if what == "value":
            i = draw(st.integers(0, len(metadata) - 1))
            metadata[i] = (metadata[i][0],) + draw(gguf_value())
        elif what == "new key":
            metadata.append((draw(st.text(max_size=8)),) + draw(gguf_value()))
        elif what == "alignment":
            metadata[1] = ("general.alignment", draw(st.integers(0, 12)), draw(st.sampled_from(
                [U32(0), U32(3), U32(2**31), struct.pack("<Q", 64), b""])))
        elif tensors and what == "drop tensor":
            tensors.pop()
        elif tensors:
            t = tensors[draw(st.integers(0, len(tensors) - 1))]
            if what == "dims":
                t[1] = draw(st.lists(EDGE_U64, max_size=6))
            elif what == "dim" and t[1]:
                t[1][0] = draw(EDGE_U64)
            elif what == "type":
                t[2] = draw(st.sampled_from([0, 1, 2, 8, 30, 39, 1000, 2**32 - 1]))
            elif what == "offset":
                t[3] = draw(EDGE_U64)
            else:
                t[0] = draw(st.sampled_from(["w", "h", "", "\u00e9"]))
    return metadata, [tuple(t) for t in tensors], data, draw(st.sampled_from(
        [None, None, 0, 8, 24, 40, 60]))


@FUZZ
@given(data=st.binary(max_size=300))
def test_gguf_random_bytes(tmp_path, data):
    read_all(load_gguf, write(tmp_path, "r.gguf", data))
    read_all(load_gguf, write(tmp_path, "m.gguf", b"GGUF" + U32(3) + data))


@FUZZ
@given(counts=st.tuples(EDGE_U64, EDGE_U64), version=st.sampled_from([1, 2, 3, 4, 2**32 - 1]),
       rest=st.binary(max_size=120))
def test_gguf_random_header_counts(tmp_path, counts, version, rest):
    blob = b"GGUF" + struct.pack("<IQQ", version, *counts) + rest
    read_all(load_gguf, write(tmp_path, "c.gguf", blob))


@FUZZ
@given(parts=gguf_mutation())
def test_gguf_structured_mutations(tmp_path, parts):
    metadata, tensors, data, cut = parts
    path = tmp_path / "s.gguf"
    try:
        write_gguf(path, metadata, tensors, data)
    except (struct.error, UnicodeEncodeError):
        return  # a value the writer cannot spell (a dim past u64): nothing to read
    if cut is not None:
        blob = path.read_bytes()
        path.write_bytes(blob[:len(blob) - cut])
    read_all(load_gguf, path)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=4))
def test_gguf_flipped_bytes(tmp_path, flips):
    path = tmp_path / "f.gguf"
    write_gguf(path, *valid_gguf_parts())
    blob = bytearray(path.read_bytes())
    for at, mask in flips:
        blob[at % len(blob)] ^= mask
    read_all(load_gguf, write(tmp_path, "f.gguf", bytes(blob)))


def test_the_valid_gguf_file_loads(tmp_path):
    path = tmp_path / "v.gguf"
    write_gguf(path, *valid_gguf_parts())
    f = load_gguf(path)
    assert f.metadata["list"] == [1, 2] and f.metadata["general.architecture"] == "llama"
    np.testing.assert_array_equal(np.asarray(f["w"]).reshape(-1), np.arange(6))
    assert np.asarray(f["h"]).tolist() == [1.0] * 4
