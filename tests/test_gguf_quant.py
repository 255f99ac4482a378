"""GGUF files with quantized tensors (Q8_0, Q4_0, Q4_K, Q6_K): our writer's files read back
through the `gguf` package's reader; our reader keeps the tensors quantized as zero-copy views
of the memory-mapped file, dequantizing (f[name]) as gguf does; corrupt quantized tensors and
types luminal does not read raise WeightsError naming the tensor."""

import gguf
import numpy as np
import pytest

import luminal as lm
from luminal.weights import load_gguf
from luminal.weights import gguf as lg
from luminal.weights.gguf_write import Tensor, write_gguf

QUANT = {lm.dtype.q8_0: lg.GGML_Q8_0, lm.dtype.q4_0: lg.GGML_Q4_0,
         lm.dtype.q4_k: lg.GGML_Q4_K, lm.dtype.q6_k: lg.GGML_Q6_K}


def raw_tensor(name, dtype, rows, blocks, rng):
    values, nbytes = lm._core.block_values(dtype), lm._core.block_bytes(dtype)
    raw = rng.integers(0, 256, (rows, blocks * nbytes), dtype=np.uint8)  # inf, nan scales too
    return Tensor(name, (rows, blocks * values), QUANT[dtype], raw)


def test_quantized_tensors_stay_quantized_and_mapped(tmp_path):
    rng = np.random.default_rng(0)
    tensors = [raw_tensor(f"t.{lm.dtype.name(d)}", d, 3, 2, rng) for d in QUANT]
    tensors.append(Tensor("plain", (2, 5), lg.GGML_F32,
                          rng.standard_normal((2, 5)).astype(np.float32)))
    path = tmp_path / "q.gguf"
    write_gguf(path, {"general.architecture": "llama", "test.list": [1, 2]}, tensors)
    f = load_gguf(path)
    reference = gguf.GGUFReader(str(path))
    by_name = {t.name: t for t in reference.tensors}
    for t in tensors[:-1]:
        raw, dtype = f.storage(t.name)
        assert dtype in QUANT and QUANT[dtype] == t.ggml_type
        assert raw.dtype == np.uint8 and np.shares_memory(raw, f._map)
        np.testing.assert_array_equal(raw, t.data)
        assert f.shape(t.name) == t.shape
        np.testing.assert_array_equal(np.asarray(by_name[t.name].data), t.data)
        with np.errstate(all="ignore"):
            want = gguf.quants.dequantize(t.data, gguf.GGMLQuantizationType(t.ggml_type))
        np.testing.assert_array_equal(f[t.name].view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(f["plain"], tensors[-1].data)
    assert reference.fields["test.list"].contents() == [1, 2]


def test_a_truncated_quantized_tensor_names_it(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "q.gguf"
    write_gguf(path, {}, [raw_tensor("blk.0.attn_q.weight", lm.dtype.q4_k, 2, 1, rng)])
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(lm.WeightsError, match=r"truncated file: tensor 'blk\.0\.attn_q\.weight'"):
        load_gguf(cut)


def test_a_row_that_splits_blocks_names_the_tensor(tmp_path):
    path = tmp_path / "q.gguf"
    bad = Tensor("w", (2, 48), lg.GGML_Q8_0, np.zeros(3 * 34, np.uint8))
    write_gguf(path, {}, [bad])
    with pytest.raises(lm.WeightsError, match="Q8_0 tensor 'w' has a row of 48 values, not a "
                                              "multiple of its block of 32"):
        load_gguf(path)


def test_a_type_luminal_does_not_read_names_the_tensor_and_type(tmp_path):
    path = tmp_path / "q.gguf"
    q5_k = int(gguf.GGMLQuantizationType.Q5_K)
    write_gguf(path, {}, [Tensor("w", (1, 256), q5_k, np.zeros(176, np.uint8))])
    with pytest.raises(lm.WeightsError, match=f"tensor 'w' has ggml type {q5_k}, which luminal "
                                              "does not read"):
        load_gguf(path)


def test_a_quantized_parameter_needs_quantized_storage(tmp_path):
    from luminal.nn import Linear

    lin = Linear(32, 3, bias=False)
    lin.weight.dtype = lm.dtype.q8_0
    cx = lm.Graph()
    x = cx.tensor((1, 32))
    lin(x).output()
    rt = cx.search(lm.NativeRuntime(), 1, cache=False, progress=False)
    with pytest.raises(lm.WeightsError, match="'weight' is not stored as q8_0"):
        lin.load_state_dict(rt, {"weight": np.ones((3, 32), np.float32)})
