"""`luminal quantize`: a Hugging Face Llama directory to a llama.cpp GGUF in each type. The
`gguf` package's reader reads back our tensors (same blocks, names, shapes, types) and
metadata; our quantizers match gguf-py's for Q8_0 and Q4_0 bit for bit and stay close for the
K types; `luminal run OUT.gguf` gives the greedy tokens transformers gives on the same
(dequantized) weights, and the quantized models' logits stay close to the f32 model's."""

import gguf
import numpy as np
import pytest
import torch
import transformers

import luminal as lm
from luminal.cli import main
from luminal.models.generation import CausalLMSession
from luminal.models.llama import LlamaForCausalLM
from luminal.weights import load_gguf
from luminal.weights.gguf import dequantize
from luminal.weights.quantize import quantize

from test_llama import _tiny_tokenizer, hf_greedy, make_hf_llama

# Rows of 256: the K types' blocks (a smaller model would write them all as F16).
TINY = dict(hidden_size=256, intermediate_size=256, num_attention_heads=4,
            num_key_value_heads=2, tie_word_embeddings=False, initializer_range=0.05)
QT = gguf.GGMLQuantizationType
GGML = {"q8_0": QT.Q8_0, "q4_0": QT.Q4_0, "q4_k": QT.Q4_K, "q5_k": QT.Q5_K, "q6_k": QT.Q6_K,
        "f16": QT.F16}


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf")
    hf = make_hf_llama(path, seed=16, **TINY)
    _tiny_tokenizer(path)
    return path, hf


@pytest.mark.parametrize("kind", ["q8_0", "q4_0"])
def test_quantizers_match_gguf_py_bit_for_bit(kind):
    x = np.random.default_rng(0).standard_normal((5, 256)).astype(np.float32)
    x[1, :32] = 0.0
    np.testing.assert_array_equal(quantize(x, lm.dtype.to_dtype(kind)),
                                  gguf.quants.quantize(x, GGML[kind]))


@pytest.mark.parametrize("kind,tolerance", [("q4_k", 0.1), ("q5_k", 0.05), ("q6_k", 0.025)])
def test_k_quantizers_are_close(kind, tolerance):
    x = np.random.default_rng(1).standard_normal((8, 512)).astype(np.float32)
    with np.errstate(all="ignore"):
        y = gguf.quants.dequantize(quantize(x, lm.dtype.to_dtype(kind)), GGML[kind])
    assert np.sqrt(((y - x) ** 2).mean() / (x ** 2).mean()) < tolerance


@pytest.mark.parametrize("kind", list(GGML))
def test_gguf_reader_reads_back_tensors_and_metadata(hf_dir, tmp_path, kind):
    path, hf = hf_dir
    out = tmp_path / f"m.{kind}.gguf"
    assert main(["quantize", str(path), str(out), "--type", kind]) == 0
    reader = gguf.GGUFReader(str(out))
    ours = load_gguf(out)
    fields = {k: reader.fields[k].contents() for k in reader.fields}
    assert fields["general.architecture"] == "llama"
    assert fields["llama.block_count"] == 2 and fields["llama.embedding_length"] == 256
    assert fields["llama.attention.head_count_kv"] == 2
    assert fields["tokenizer.ggml.model"] == "llama"
    assert len(fields["tokenizer.ggml.tokens"]) == hf.config.vocab_size
    assert {t.name for t in reader.tensors} == set(ours.keys())
    assert len(reader.tensors) == 3 + 9 * 2  # embeddings, norm, head; 9 tensors a layer
    # llama.cpp's Q4_K_M / Q5_K_M: Q6_K for the output, and for attn_v and ffn_down in the
    # last eighth of the layers (of two: layer 1) and the first (none).
    k_m = {"output.weight", "blk.1.attn_v.weight", "blk.1.ffn_down.weight"}
    for t in reader.tensors:
        assert tuple(int(d) for d in reversed(t.shape)) == ours.shape(t.name)
        two_d = len(ours.shape(t.name)) == 2
        want = GGML["q6_k" if kind in ("q4_k", "q5_k") and t.name in k_m else kind]
        assert t.tensor_type == (want if two_d else QT.F32), t.name
        raw, _ = ours.storage(t.name)
        np.testing.assert_array_equal(np.asarray(t.data).reshape(-1).view(np.uint8),
                                      raw.reshape(-1).view(np.uint8))
    down = hf.model.layers[1].mlp.down_proj.weight.detach().numpy()
    with np.errstate(all="ignore"):
        back = gguf.quants.dequantize(np.asarray(reader.get_tensor(
            [t.name for t in reader.tensors].index("blk.1.ffn_down.weight")).data),
            GGML["q6_k" if kind in ("q4_k", "q5_k") else kind])
    np.testing.assert_array_equal(ours["blk.1.ffn_down.weight"], back)
    assert np.abs(back - down).max() < 0.2 * np.abs(down).max()


def _dequantized_hf(hf, gguf_path):
    """transformers' model with the weights the GGUF holds (dequantized, q/k un-permuted)."""
    model = LlamaForCausalLM.from_gguf(gguf_path)
    twin = transformers.LlamaForCausalLM(hf.config).eval()
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(model.weights[name], np.float32)))
    return twin


def test_luminal_run_of_a_q8_0_file_gives_transformers_tokens(hf_dir, tmp_path, capsys):
    path, hf = hf_dir
    out = tmp_path / "m.gguf"
    assert main(["quantize", str(path), str(out), "--type", "q8_0"]) == 0
    tok = _tiny_tokenizer(tmp_path)
    prompt = "the lazy dog"
    twin = _dequantized_hf(hf, out)
    want = tok.decode(hf_greedy(twin, tok.encode(prompt).ids, 6), skip_special_tokens=True)
    assert main(["run", str(out), "--prompt", prompt, "--max-new-tokens", "6", "--search", "1",
                 "--tokenizer", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == (prompt + want).strip()


def test_luminal_run_of_a_gguf_file_uses_the_tokenizer_it_carries(hf_dir, tmp_path, capsys):
    """No --tokenizer: the GGUF's own tokenizer.ggml.* metadata, the same text as with the
    directory's tokenizer.json."""
    path, _ = hf_dir
    out = tmp_path / "m.gguf"
    assert main(["quantize", str(path), str(out), "--type", "q8_0"]) == 0
    args = ["run", str(out), "--prompt", "the lazy dog", "--max-new-tokens", "6", "--search", "1"]
    assert main(args + ["--tokenizer", str(path)]) == 0
    want = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == want


def _byte_level_tokenizer(path):
    """A GPT-2 style byte-level BPE (llama.cpp writes these as "gpt2", as Llama 3's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["the quick brown fox jumps over the lazy dog", "luminal compiles models, fast!"]
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus * 8, trainer)
    tok.save(str(path / "tokenizer.json"))
    return tok


@pytest.mark.parametrize("kind", ["sentencepiece", "byte-level"])
def test_a_gguf_tokenizer_encodes_as_the_tokenizer_it_was_written_from(tmp_path, kind):
    from luminal.models.tokenizer import load_gguf_tokenizer

    hf = make_hf_llama(tmp_path, seed=3, **dict(TINY, vocab_size=300))
    tok = _tiny_tokenizer(tmp_path) if kind == "sentencepiece" else _byte_level_tokenizer(tmp_path)
    out = tmp_path / "m.gguf"
    assert main(["quantize", str(tmp_path), str(out), "--type", "f16"]) == 0
    assert hf.config.vocab_size >= tok.get_vocab_size()
    ours = load_gguf_tokenizer(str(out))
    for text in ["the quick brown fox", "luminal compiles models", "the  lazy dog jumps"]:
        assert ours.encode(text).ids == tok.encode(text).ids, text
        assert ours.decode(ours.encode(text).ids) == tok.decode(tok.encode(text).ids)


def test_a_gguf_file_without_a_tokenizer_names_what_is_missing(tmp_path):
    from luminal.errors import WeightsError
    from luminal.models.tokenizer import load_gguf_tokenizer

    writer = gguf.GGUFWriter(str(tmp_path / "bare.gguf"), "llama")
    writer.add_tensor("x", np.zeros(4, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(WeightsError, match="tokenizer"):
        load_gguf_tokenizer(str(tmp_path / "bare.gguf"))


def kl_and_top1(hf, gguf_path, positions: int, runtime=None):
    """Mean KL(f32 || quantized) of next-token distributions and top-1 agreement."""
    ids = np.random.default_rng(5).integers(0, hf.config.vocab_size, (1, positions))
    with torch.no_grad():
        want = torch.log_softmax(hf(torch.from_numpy(ids)).logits[0].double(), -1)
    model = LlamaForCausalLM.from_gguf(gguf_path, max_context=positions)
    session = CausalLMSession(model, runtime, all_logits=True)
    got = torch.log_softmax(torch.from_numpy(session.step(ids)[0]).double(), -1)
    kl = (want.exp() * (want - got)).sum(-1).mean().item()
    top1 = (want.argmax(-1) == got.argmax(-1)).double().mean().item()
    return kl, top1


@pytest.mark.parametrize("kind,most_kl,least_top1", [
    ("f16", 1e-5, 0.95), ("q8_0", 1e-3, 0.9), ("q6_k", 5e-3, 0.75), ("q5_k", 2e-2, 0.6),
    ("q4_k", 5e-2, 0.5), ("q4_0", 5e-2, 0.5)])
def test_quantized_logits_stay_close_to_the_f32_model(hf_dir, tmp_path, kind, most_kl,
                                                      least_top1):
    """A random model's next-token distributions are flat, so 4-bit weights move many argmaxes
    while the distributions stay close (KL)."""
    path, hf = hf_dir
    out = tmp_path / f"m.{kind}.gguf"
    assert main(["quantize", str(path), str(out), "--type", kind]) == 0
    kl, top1 = kl_and_top1(hf, out, 24)
    assert kl < most_kl and top1 >= least_top1, (kl, top1)


@pytest.mark.parametrize("kind", ["f16", "q4_k", "q5_k"])
def test_gguf_logits_on_the_cpu_runtime_stay_close_to_the_f32_model(hf_dir, tmp_path, kind):
    """The same on CpuRuntime: 16-bit matrices kept 16-bit (widened in the GEMV and GEMM),
    quantized ones read from their blocks (24 positions: the GEMM path with its
    dequantizing panels)."""
    path, hf = hf_dir
    out = tmp_path / f"m.{kind}.gguf"
    assert main(["quantize", str(path), str(out), "--type", kind]) == 0
    kl, top1 = kl_and_top1(hf, out, 24, lm.CpuRuntime())
    assert kl < (1e-5 if kind == "f16" else 5e-2) and top1 >= (0.95 if kind == "f16" else 0.5), \
        (kl, top1)
