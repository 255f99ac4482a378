"""Llama against Hugging Face transformers: tiny random LlamaForCausalLM models (GQA or not,
tied or untied embeddings, llama3 rope scaling or none, f32 or bf16 weights) saved with
save_pretrained and loaded by luminal; prefill logits and 20 greedy tokens must match.
Also sampling, streaming stats, and the ``luminal run`` CLI."""

import numpy as np
import pytest

import luminal as lm
from luminal.models import CausalLMSession, GenerationStats, LlamaForCausalLM, Sampler, generate

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
CONFIGS = {
    "gqa-tied-llama3": dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                            tie_word_embeddings=True, rope_scaling=LLAMA3_ROPE),
    "mha-untied": dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                       tie_word_embeddings=False),
    "mqa-untied-llama3-vocab256": dict(hidden_size=64, num_attention_heads=4,
                                       num_key_value_heads=1, tie_word_embeddings=False,
                                       rope_scaling=LLAMA3_ROPE, vocab_size=256, head_dim=16),
}


def make_hf_llama(path, seed=0, dtype=torch.float32, **overrides):
    torch.manual_seed(seed)
    kw = dict(vocab_size=128, intermediate_size=64, num_hidden_layers=2,
              max_position_embeddings=128, rms_norm_eps=1e-5, initializer_range=0.3,
              bos_token_id=None, eos_token_id=None, pad_token_id=None)
    kw.update(overrides)
    config = transformers.LlamaConfig(**kw)
    model = transformers.LlamaForCausalLM(config).eval()
    model.to(dtype).save_pretrained(str(path))
    return model


def hf_greedy(model, ids, n):
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False,
                             min_new_tokens=n)
    return out[0, len(ids):].tolist()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_prefill_logits_and_greedy_decode_match_transformers(tmp_path, name):
    hf = make_hf_llama(tmp_path, **CONFIGS[name])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=64)
    session = CausalLMSession(model, all_logits=True)
    prompt = torch.randint(0, hf.config.vocab_size, (1, 9), generator=torch.Generator()
                           .manual_seed(1))
    logits = session.step(prompt.numpy())
    with torch.no_grad():
        want = hf(prompt).logits.numpy()
    np.testing.assert_allclose(logits, want, rtol=1e-4, atol=1e-4)
    tokens = list(generate(session, prompt[0].tolist(), 20))
    assert tokens == hf_greedy(hf, prompt[0].tolist(), 20)
    assert len(set(tokens)) > 3  # the test model is not degenerate


def test_every_runtime_matches_transformers(tmp_path, runtime):
    hf = make_hf_llama(tmp_path, seed=2, **CONFIGS["gqa-tied-llama3"])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32)
    session = CausalLMSession(model, runtime(), all_logits=True)
    prompt = [9, 8, 7, 6, 5]
    with torch.no_grad():
        want = hf(torch.tensor([prompt])).logits.numpy()
    np.testing.assert_allclose(session.step(np.array([prompt])), want, rtol=1e-4, atol=1e-4)
    assert list(generate(session, prompt, 12)) == hf_greedy(hf, prompt, 12)


def test_searched_program_matches_transformers(tmp_path):
    hf = make_hf_llama(tmp_path, seed=6, **CONFIGS["mqa-untied-llama3-vocab256"])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32)
    session = CausalLMSession(model, lm.NativeRuntime(), search=3)
    prompt = [11, 22, 33]
    assert list(generate(session, prompt, 10)) == hf_greedy(hf, prompt, 10)


def test_decode_logits_match_transformers_step_by_step(tmp_path):
    hf = make_hf_llama(tmp_path, seed=3, **CONFIGS["gqa-tied-llama3"])
    session = CausalLMSession(LlamaForCausalLM.from_pretrained(tmp_path, max_context=32))
    ids = [5, 17, 99, 3]
    logits = session.step(np.array([ids]))
    assert logits.shape == (1, 1, 128)  # only the last position by default
    for token in (7, 64, 2):
        ids.append(token)
        logits = session.step(np.array([[token]]))
        with torch.no_grad():
            want = hf(torch.tensor([ids])).logits[:, -1:].numpy()
        np.testing.assert_allclose(logits, want, rtol=1e-4, atol=1e-4)


def test_bf16_checkpoint_loads_its_bits(tmp_path):
    make_hf_llama(tmp_path, seed=4, dtype=torch.bfloat16, **CONFIGS["gqa-tied-llama3"])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32)
    assert model.model.embed_tokens.weight.dtype == lm.bfloat16
    # the f32 reference computes with the very same (bf16-rounded) weights
    ref = transformers.LlamaForCausalLM.from_pretrained(str(tmp_path), dtype=torch.float32).eval()
    session = CausalLMSession(model, all_logits=True)
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    with torch.no_grad():
        want = ref(torch.tensor([prompt])).logits.numpy()
    np.testing.assert_allclose(session.step(np.array([prompt])), want, rtol=1e-4, atol=1e-4)


def test_sampling_is_seeded_and_top_p_narrows_to_greedy(tmp_path):
    make_hf_llama(tmp_path, **CONFIGS["mha-untied"])
    session = CausalLMSession(LlamaForCausalLM.from_pretrained(tmp_path, max_context=32))
    prompt = [1, 2, 3]
    a = list(generate(session, prompt, 8, Sampler(temperature=1.5, seed=7)))
    b = list(generate(session, prompt, 8, Sampler(temperature=1.5, seed=7)))
    assert a == b
    greedy = list(generate(session, prompt, 8))
    tiny_p = list(generate(session, prompt, 8, Sampler(temperature=1.0, top_p=1e-6, seed=1)))
    assert tiny_p == greedy
    stats = GenerationStats()
    out = list(generate(session, prompt, 5, stats=stats, eos_token_ids=(greedy[2],)))
    assert out == greedy[:3]
    assert stats.new_tokens == 3 and stats.prompt_tokens == 3
    assert stats.time_to_first_token > 0 and stats.tokens_per_second > 0


def test_sampler_distribution_follows_softmax():
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    sampler = Sampler(temperature=1.0, top_p=1.0, seed=0)
    counts = np.bincount([sampler(logits) for _ in range(4000)], minlength=3) / 4000
    np.testing.assert_allclose(counts, [0.5, 0.3, 0.2], atol=0.03)
    top = Sampler(temperature=1.0, top_p=0.7, seed=0)  # keeps the two tokens reaching 0.8
    assert set(top(logits) for _ in range(300)) == {0, 1}


def test_context_limit_is_checked(tmp_path):
    make_hf_llama(tmp_path, **CONFIGS["mha-untied"])
    session = CausalLMSession(LlamaForCausalLM.from_pretrained(tmp_path, max_context=8))
    with pytest.raises(lm.ShapeError, match="exceed the context of 8"):
        session.step(np.zeros((1, 9), np.int32))


def _tiny_tokenizer(path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    corpus = ["the quick brown fox jumps over the lazy dog", "luminal compiles models"] * 8
    trainer = trainers.BpeTrainer(vocab_size=128, special_tokens=["<unk>", "<s>", "</s>"])
    tok.train_from_iterator(corpus, trainer)
    tok.save(str(path / "tokenizer.json"))
    return tok


def test_cli_run_generates_what_transformers_does(tmp_path, capsys):
    from luminal.cli import main

    hf = make_hf_llama(tmp_path, seed=5, **CONFIGS["gqa-tied-llama3"])
    tok = _tiny_tokenizer(tmp_path)
    prompt = "the quick brown"
    ids = tok.encode(prompt).ids
    want = tok.decode(hf_greedy(hf, ids, 6), skip_special_tokens=True)
    assert main(["run", str(tmp_path), "--prompt", prompt, "--max-new-tokens", "6"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == (prompt + want).strip()
    assert "compiling Llama (2 layers" in err and "done in" in err
    assert "time to first token" in err and "tokens/s" in err


def test_cli_errors(tmp_path, capsys):
    from luminal.cli import main

    make_hf_llama(tmp_path, **CONFIGS["mha-untied"])
    _tiny_tokenizer(tmp_path)
    if not hasattr(lm, "CudaRuntime"):
        assert main(["run", str(tmp_path), "--prompt", "x", "--runtime", "cuda"]) == 1
        assert "no CudaRuntime" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "nope"), "--prompt", "x"]) == 1
    assert "not a model directory" in capsys.readouterr().err
    assert main(["embed", str(tmp_path), "hello"]) == 1
    assert "takes BERT models" in capsys.readouterr().err
