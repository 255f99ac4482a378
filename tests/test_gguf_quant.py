"""GGUF files with quantized tensors (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K): our writer's files read back
through the `gguf` package's reader; our reader keeps the tensors quantized as zero-copy views
of the memory-mapped file, dequantizing (f[name]) as gguf does; the other block types the
gguf package dequantizes (Q5_0, Q3_K, Q2_K, IQ4_XS, ...) are read as F16 with a warning, and a
Llama whose matrices are in one of them runs as transformers does on the same values; corrupt
quantized tensors and types nobody reads raise WeightsError naming the tensor."""

import gguf
import numpy as np
import pytest

import luminal as lm
from luminal.weights import load_gguf
from luminal.weights import gguf as lg
from luminal.weights.gguf_write import Tensor, write_gguf

QUANT = {lm.dtype.q8_0: lg.GGML_Q8_0, lm.dtype.q4_0: lg.GGML_Q4_0,
         lm.dtype.q4_k: lg.GGML_Q4_K, lm.dtype.q5_k: lg.GGML_Q5_K, lm.dtype.q6_k: lg.GGML_Q6_K}


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


def test_a_type_nobody_reads_names_the_tensor_and_type(tmp_path):
    path = tmp_path / "q.gguf"
    write_gguf(path, {}, [Tensor("w", (1, 256), 99, np.zeros(176, np.uint8))])
    with pytest.raises(lm.WeightsError, match="tensor 'w' has ggml type 99, which luminal "
                                              "does not read"):
        load_gguf(path)


QT = gguf.GGMLQuantizationType
# Block types luminal reads as F16: the byte offsets of each block's f16 scales.
SCALES = {QT.Q5_0: [0], QT.Q5_1: [0, 2], QT.Q3_K: [108], QT.Q2_K: [80, 82], QT.IQ4_XS: [0]}


@pytest.mark.parametrize("qtype", list(SCALES), ids=lambda t: t.name)
def test_other_block_types_are_read_as_f16_with_a_warning(tmp_path, qtype):
    block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    raw = np.random.default_rng(int(qtype)).integers(0, 256, (3, 2 * nbytes), dtype=np.uint8)
    for at in SCALES[qtype]:  # modest scales: f16 1/64
        for b in range(2):
            raw[:, b * nbytes + at] = 0x00
            raw[:, b * nbytes + at + 1] = 0x24
    path = tmp_path / "other.gguf"
    write_gguf(path, {}, [Tensor("w", (3, 2 * block), int(qtype), raw)])
    with pytest.warns(UserWarning, match=f"{qtype.name} \\(1 tensors\\) are dequantized to F16"):
        f = load_gguf(path)
    assert f.type_name("w") == qtype.name and f.file_dtype("w") == lm.float16
    values, dtype = f.storage("w")
    assert dtype == lm.float16 and values.shape == (3, 2 * block)
    want = gguf.quants.dequantize(raw, qtype).reshape(3, 2 * block).astype(np.float16)
    np.testing.assert_array_equal(values, want)


def test_other_block_types_past_f16_range_name_the_tensor(tmp_path):
    raw = np.zeros((1, 22), np.uint8)  # one Q5_0 block, scale f16 65504, quants at -16
    raw[0, 0:2] = np.array([65504.0], np.float16).view(np.uint8)
    path = tmp_path / "big.gguf"
    write_gguf(path, {}, [Tensor("w", (1, 32), int(QT.Q5_0), raw)])
    with pytest.warns(UserWarning):
        f = load_gguf(path)
    with pytest.raises(lm.WeightsError, match="tensor 'w' holds values past F16's range"):
        f.storage("w")


def test_a_llama_in_q5_0_runs_as_transformers_on_its_values(tmp_path):
    """luminal quantize's q8_0 file with every matrix re-encoded as Q5_0 by the gguf package
    (a type luminal reads as F16): the same greedy tokens as transformers on those values."""
    import torch
    import transformers
    from test_llama import hf_greedy, make_hf_llama

    from luminal.cli import main
    from luminal.models.generation import CausalLMSession
    from luminal.models.llama import LlamaForCausalLM

    hf = make_hf_llama(tmp_path, seed=9, hidden_size=64, intermediate_size=128,
                       num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    q8 = tmp_path / "m.q8_0.gguf"
    assert main(["quantize", str(tmp_path), str(q8), "--type", "q8_0"]) == 0
    src = load_gguf(q8)
    tensors = []
    for name in src:
        raw, dtype = src.storage(name)
        if lm.dtype.is_quantized(dtype):
            values = src[name]
            tensors.append(Tensor(name, values.shape, int(QT.Q5_0),
                                  gguf.quants.quantize(values, QT.Q5_0)))
        else:
            tensors.append(Tensor(name, raw.shape, lg.GGML_TYPE_OF[dtype], raw))
    path = tmp_path / "m.q5_0.gguf"
    write_gguf(path, src.metadata, tensors)
    with pytest.warns(UserWarning, match="Q5_0"):
        model = LlamaForCausalLM.from_gguf(path, max_context=32)
    twin = transformers.LlamaForCausalLM(hf.config).eval()
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(model.weights[name], np.float32)))
    ids = [3, 17, 5, 9]
    session = CausalLMSession(model, lm.CpuRuntime(), search=1)
    got = [int(session.step(np.array([ids], np.int32))[0, -1].argmax())]
    for _ in range(5):
        got.append(int(session.step(np.array([[got[-1]]], np.int32))[0, -1].argmax()))
    assert got == hf_greedy(twin, ids, 6)


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
