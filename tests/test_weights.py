"""Weight readers: safetensors (written by the safetensors package) and GGUF (written by the
gguf package) read back exactly; corrupt, truncated and mismatched files raise WeightsError
naming the file and tensor; load_state_dict checks keys and shapes."""

import json
import struct

import numpy as np
import pytest

import luminal as lm
from luminal.nn import Linear, Module
from luminal.weights import GGUFFile, load_gguf, load_safetensors

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


@pytest.fixture
def st_file(tmp_path):
    g = torch.Generator().manual_seed(0)
    tensors = {
        "f32": torch.randn(3, 4, generator=g),
        "f16": torch.randn(5, generator=g).half(),
        "bf16": torch.randn(2, 3, generator=g).bfloat16(),
        "i32": torch.arange(6, dtype=torch.int32).reshape(2, 3),
        "i64": torch.arange(-3, 3, dtype=torch.int64),
        "bool": torch.tensor([True, False, True]),
        "empty": torch.zeros(0, 4),
    }
    path = tmp_path / "w.safetensors"
    st_torch.save_file(tensors, str(path), metadata={"format": "pt"})
    return path, tensors


def test_safetensors_reads_every_dtype(st_file):
    path, tensors = st_file
    f = load_safetensors(path)
    assert set(f) == set(tensors)
    assert f.metadata == {"format": "pt"}
    for name, t in tensors.items():
        want = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        got = f[name]
        assert got.shape == tuple(t.shape), name
        np.testing.assert_array_equal(got, want, err_msg=name)
    raw, dtype = f.storage("bf16")
    assert dtype == lm.bfloat16 and raw.dtype == np.uint16
    np.testing.assert_array_equal(raw, tensors["bf16"].view(torch.int16).numpy().view(np.uint16))


def test_safetensors_is_memory_mapped(st_file):
    path, _ = st_file
    raw, _ = load_safetensors(path).storage("f32")
    assert isinstance(raw.base, np.ndarray) or raw.base is not None
    assert not raw.flags.owndata


def test_safetensors_directory_of_shards(tmp_path):
    st_torch.save_file({"a": torch.ones(2)}, str(tmp_path / "model-00001.safetensors"))
    st_torch.save_file({"b": torch.zeros(3)}, str(tmp_path / "model-00002.safetensors"))
    weights = load_safetensors(tmp_path)
    assert sorted(weights) == ["a", "b"]
    assert weights.locate("b")[0].endswith("model-00002.safetensors")
    np.testing.assert_array_equal(weights["b"], np.zeros(3, np.float32))


def test_truncated_safetensors(st_file, tmp_path):
    path, _ = st_file
    data = path.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:-10])
    with pytest.raises(lm.WeightsError, match=r"cut\.safetensors.*truncated.*tensor '"):
        load_safetensors(cut)
    cut.write_bytes(data[:5])
    with pytest.raises(lm.WeightsError, match="truncated"):
        load_safetensors(cut)


def test_bad_safetensors_header(tmp_path):
    bad = tmp_path / "bad.safetensors"
    header = b"{not json"
    bad.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(lm.WeightsError, match=r"bad\.safetensors.*bad safetensors header"):
        load_safetensors(bad)
    bad.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(lm.WeightsError, match="claims"):
        load_safetensors(bad)
    entry = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}
    header = json.dumps(entry).encode()
    bad.write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    with pytest.raises(lm.WeightsError, match="tensor 'w'.*16 bytes.*12"):
        load_safetensors(bad)
    entry = {"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}
    header = json.dumps(entry).encode()
    bad.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    with pytest.raises(lm.WeightsError, match="unsupported dtype 'C64'"):
        load_safetensors(bad)


def test_missing_file():
    with pytest.raises(lm.WeightsError, match="cannot open"):
        load_safetensors("/nonexistent/w.safetensors")


class _Two(Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 3)
        self.out = Linear(3, 2, bias=False)

    def forward(self, x):
        return self.out(self.fc(x))


def _compiled_two():
    m = _Two()
    cx = lm.Graph()
    x = cx.tensor((1, 4), name="x")
    y = m(x).output()
    rt = cx.search(lm.NativeRuntime())
    return m, cx, x, y, rt


def test_load_state_dict_from_safetensors_matches_torch(tmp_path):
    torch.manual_seed(0)
    ref = torch.nn.Sequential()
    ref.add_module("fc", torch.nn.Linear(4, 3))
    ref.add_module("out", torch.nn.Linear(3, 2, bias=False))
    path = tmp_path / "two.safetensors"
    st_torch.save_file(ref.state_dict(), str(path))
    m, cx, x, y, rt = _compiled_two()
    m.load_state_dict(rt, load_safetensors(path))
    xv = torch.randn(1, 4)
    rt.set_data(x, xv)
    rt.execute()
    np.testing.assert_allclose(rt.get(y), ref(xv).detach().numpy(), rtol=1e-5, atol=1e-6)
    # the weights stay set: a second execute with new data needs no reload
    xv = torch.randn(1, 4)
    rt.set_data(x, xv)
    rt.execute()
    np.testing.assert_allclose(rt.get(y), ref(xv).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_errors(tmp_path):
    good = {"fc.weight": torch.zeros(3, 4), "fc.bias": torch.zeros(3),
            "out.weight": torch.zeros(2, 3)}
    m, cx, x, y, rt = _compiled_two()
    path = tmp_path / "shape.safetensors"
    st_torch.save_file({**good, "fc.weight": torch.zeros(4, 3)}, str(path))
    with pytest.raises(lm.WeightsError, match=r"shape\.safetensors: tensor 'fc\.weight' has "
                                              r"shape \(4, 3\), the model expects \(3, 4\)"):
        m.load_state_dict(rt, load_safetensors(path))
    path = tmp_path / "missing.safetensors"
    st_torch.save_file({k: v for k, v in good.items() if k != "fc.bias"}, str(path))
    with pytest.raises(lm.WeightsError, match=r"missing\.safetensors: missing 1 .*'fc\.bias'"):
        m.load_state_dict(rt, load_safetensors(path))
    with pytest.raises(lm.WeightsError, match=r"unexpected .*'extra'"):
        m.load_state_dict(rt, {**good, "extra": torch.zeros(1)})
    m.load_state_dict(rt, {**good, "extra": torch.zeros(1)}, strict=False)
    assert isinstance(lm.WeightsError("x"), lm.LuminalError)


def test_bf16_parameters_take_the_file_bits(tmp_path):
    torch.manual_seed(1)
    w = torch.randn(3, 4).bfloat16()
    path = tmp_path / "bf.safetensors"
    st_torch.save_file({"weight": w}, str(path))
    lin = Linear(4, 3, bias=False, dtype=lm.bfloat16)
    cx = lm.Graph()
    x = cx.tensor((2, 4))
    y = lin(x).output()
    rt = cx.search(lm.NativeRuntime())
    lin.load_state_dict(rt, load_safetensors(path))
    xv = torch.randn(2, 4)
    rt.set_data(x, xv)
    rt.execute()
    np.testing.assert_allclose(rt.get(y), (xv @ w.float().T).numpy(), rtol=1e-5, atol=1e-6)


# ---- GGUF ------------------------------------------------------------------------------
gguf = pytest.importorskip("gguf")


def _write_gguf(path, tensors, qtypes=None):
    qtypes = qtypes or {}
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("test.count", 7)
    w.add_string("test.name", "tiny")
    w.add_array("test.list", [1, 2, 3])
    for name, array in tensors.items():
        q = qtypes.get(name)
        if q is None:
            w.add_tensor(name, array)
        else:
            w.add_tensor(name, gguf.quants.quantize(array, q), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    q = gguf.GGMLQuantizationType
    tensors = {
        "f32": rng.standard_normal((4, 8)).astype(np.float32),
        "f16": rng.standard_normal((3, 5)).astype(np.float16),
        "q8": rng.standard_normal((2, 64)).astype(np.float32),
        "bf16": rng.standard_normal((2, 32)).astype(np.float32),
    }
    path = tmp_path / "t.gguf"
    _write_gguf(path, tensors, {"q8": q.Q8_0, "bf16": q.BF16})
    f = load_gguf(path)
    assert isinstance(f, GGUFFile)
    assert f.metadata["test.count"] == 7
    assert f.metadata["test.name"] == "tiny"
    assert f.metadata["test.list"] == [1, 2, 3]
    assert f.metadata["general.architecture"] == "llama"
    np.testing.assert_array_equal(f["f32"], tensors["f32"])
    np.testing.assert_array_equal(f["f16"], tensors["f16"])
    assert f.type_name("q8") == "Q8_0"
    want_q8 = gguf.quants.dequantize(gguf.quants.quantize(tensors["q8"], q.Q8_0), q.Q8_0)
    np.testing.assert_allclose(f["q8"], want_q8, rtol=0, atol=1e-6)
    np.testing.assert_allclose(f["q8"], tensors["q8"], atol=0.02)
    want_bf16 = gguf.quants.dequantize(gguf.quants.quantize(tensors["bf16"], q.BF16), q.BF16)
    np.testing.assert_array_equal(f["bf16"], want_bf16)
    assert f.storage("bf16")[1] == lm.bfloat16


def test_gguf_weights_load_into_a_module(tmp_path):
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((3, 32)).astype(np.float32)
    path = tmp_path / "lin.gguf"
    _write_gguf(path, {"weight": weight}, {"weight": gguf.GGMLQuantizationType.Q8_0})
    lin = Linear(32, 3, bias=False)
    cx = lm.Graph()
    x = cx.tensor((1, 32))
    y = lin(x).output()
    rt = cx.search(lm.NativeRuntime())
    f = load_gguf(path)
    lin.load_state_dict(rt, f)
    xv = rng.standard_normal((1, 32)).astype(np.float32)
    rt.set_data(x, xv)
    rt.execute()
    np.testing.assert_allclose(rt.get(y), xv @ f["weight"].T, rtol=1e-5, atol=1e-5)


def test_gguf_errors(tmp_path):
    path = tmp_path / "t.gguf"
    _write_gguf(path, {"a": np.ones((4, 8), np.float32)})
    data = path.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:-16])
    with pytest.raises(lm.WeightsError, match=r"cut\.gguf: truncated file: tensor 'a'"):
        load_gguf(cut)
    cut.write_bytes(data[:40])
    with pytest.raises(lm.WeightsError, match=r"cut\.gguf: truncated GGUF"):
        load_gguf(cut)
    cut.write_bytes(b"GGML" + data[4:])
    with pytest.raises(lm.WeightsError, match="not a GGUF file"):
        load_gguf(cut)
    with pytest.raises(lm.WeightsError, match="no tensor named 'b'"):
        load_gguf(path)["b"]
