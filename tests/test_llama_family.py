"""The Llama family's members against Hugging Face transformers: tiny random Mistral, Phi-3,
Qwen2, Qwen3, Gemma, Gemma 2 and Gemma 3 models saved with save_pretrained and loaded by luminal's
AutoModelForCausalLM; prefill logits and 20 greedy tokens must match. Sliding windows are
shorter than the prompt, soft-caps small enough to bend the scores, and norm weights random,
so each difference from Llama is exercised (Gemma 2 and 3 untied: with tied embeddings and
their norms a random model only repeats its last token). Also the CLI on one of them."""

import json

import numpy as np
import pytest

import luminal as lm
from luminal.models import AutoModelForCausalLM, CausalLMSession, generate
from test_llama import hf_greedy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SMALL = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
             rms_norm_eps=1e-5, initializer_range=0.3, bos_token_id=None, eos_token_id=None,
             pad_token_id=None)
FAMILIES = {
    "mistral": (transformers.MistralConfig, dict(sliding_window=4)),
    "phi3": (transformers.Phi3Config, dict(
        sliding_window=5, original_max_position_embeddings=32, partial_rotary_factor=0.5,
        rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 1.5],
                      "long_factor": [2.0, 3.0]})),
    "qwen2": (transformers.Qwen2Config, dict(use_sliding_window=True, sliding_window=4,
                                             max_window_layers=1, tie_word_embeddings=True)),
    "qwen3": (transformers.Qwen3Config, dict(head_dim=16, use_sliding_window=True,
                                             sliding_window=5, max_window_layers=1)),
    "gemma": (transformers.GemmaConfig, dict(head_dim=16)),
    "gemma2": (transformers.Gemma2Config, dict(head_dim=16, sliding_window=4,
                                               tie_word_embeddings=False,
                                               attn_logit_softcapping=2.0,
                                               final_logit_softcapping=5.0,
                                               query_pre_attn_scalar=12)),
    "gemma3": (transformers.Gemma3TextConfig, dict(
        head_dim=16, sliding_window=4, layer_types=["sliding_attention", "full_attention"],
        tie_word_embeddings=False,
        query_pre_attn_scalar=12, rope_scaling={"rope_type": "linear", "factor": 2.0},
        final_logit_softcapping=5.0)),
}


def make_hf(path, family, seed=0, dtype=torch.float32, **changes):
    torch.manual_seed(seed)
    config_type, overrides = FAMILIES[family]
    config = config_type(**{**SMALL, **overrides, **changes})
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # away from the initial 1 (Llama) or 0 (Gemma's 1 + w)
                p.uniform_(-0.5, 0.5).add_(0.0 if family.startswith("gemma") else 1.0)
    model.eval().to(dtype).save_pretrained(str(path))
    return model


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_prefill_logits_and_greedy_decode_match_transformers(tmp_path, family):
    hf = make_hf(tmp_path, family)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, max_context=64)
    assert model.config.model_type == hf.config.model_type
    session = CausalLMSession(model, all_logits=True)
    prompt = torch.randint(0, 128, (1, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = hf(prompt).logits.numpy()
    np.testing.assert_allclose(session.step(prompt.numpy()), want, rtol=1e-4, atol=1e-4)
    tokens = list(generate(session, prompt[0].tolist(), 20))
    assert tokens == hf_greedy(hf, prompt[0].tolist(), 20)
    assert len(set(tokens)) > 3  # the test model is not degenerate


@pytest.mark.parametrize("family", ["qwen3", "gemma2", "phi3"])
def test_searched_cpu_program_matches_transformers_step_by_step(tmp_path, family):
    """Decode steps past the window on CpuRuntime after a search: the cached keys that fell
    out of the window are masked in place."""
    from conftest import CpuRuntime

    hf = make_hf(tmp_path, family, seed=3)
    session = CausalLMSession(AutoModelForCausalLM.from_pretrained(tmp_path, max_context=32),
                              CpuRuntime(), search=2)
    ids = [5, 17, 99, 3, 8, 1]
    session.step(np.array([ids]))
    for token in (7, 64, 2, 11):
        ids.append(token)
        logits = session.step(np.array([[token]]))
        with torch.no_grad():
            want = hf(torch.tensor([ids])).logits[:, -1:].numpy()
        np.testing.assert_allclose(logits, want, rtol=1e-4, atol=1e-4)


def test_phi3_longrope_past_the_original_context_matches_transformers_cache_steps(tmp_path):
    """Positions from original_max_position_embeddings on use the long factors; earlier cached
    positions keep the short ones, as transformers' own cache steps do. (transformers' generate
    instead encodes the whole sequence again with the long factors when it crosses.)"""
    hf = make_hf(tmp_path, "phi3", original_max_position_embeddings=12)
    session = CausalLMSession(AutoModelForCausalLM.from_pretrained(tmp_path, max_context=64))
    ids = torch.randint(0, 128, (1, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = hf(ids, use_cache=True)
        np.testing.assert_allclose(session.step(ids.numpy()), out.logits[:, -1:].numpy(),
                                   rtol=1e-4, atol=1e-4)
        for _ in range(8):  # positions 9 .. 16
            token = out.logits[:, -1:].argmax(-1)
            out = hf(token, cache=out.past_key_values, use_cache=True)
            np.testing.assert_allclose(session.step(token.numpy()), out.logits.numpy(),
                                       rtol=1e-4, atol=1e-4)


def test_bf16_gemma_checkpoint_matches_transformers_in_f32(tmp_path):
    """Gemma rounds its embedding scale to the weights' dtype: bf16 weights, f32 compute."""
    make_hf(tmp_path, "gemma", seed=4, dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, max_context=32)
    assert model.model.embed_tokens.weight.dtype == lm.bfloat16
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path),
                                                            dtype=torch.float32).eval()
    ref.model.embed_tokens.embed_scale.fill_(float(torch.tensor(32**0.5).to(torch.bfloat16)))
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    with torch.no_grad():
        want = ref(torch.tensor([prompt])).logits.numpy()
    session = CausalLMSession(model, all_logits=True)
    np.testing.assert_allclose(session.step(np.array([prompt])), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("change,message", [
    ({"model_type": "gpt2"}, "model_type 'gpt2' is not supported"),
    ({"model_type": "gemma2", "hidden_activation": "relu"}, "activation 'relu'"),
    ({"model_type": "mistral", "sliding_window": 0}, "'sliding_window' is 0"),
    ({"model_type": "gemma2", "sliding_window": 4, "layer_types": ["full_attention"]},
     "'layer_types' must list 2"),
    ({"model_type": "gemma2", "sliding_window": 4, "layer_types": "all"},
     "'layer_types' is 'all'"),
    ({"model_type": "gemma2", "attn_logit_softcapping": -1.0},
     "'attn_logit_softcapping' is -1.0"),
    ({"model_type": "phi3", "original_max_position_embeddings": 16, "rope_scaling": {
        "rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0, 2.0]}},
     "'short_factor' is \\[1.0\\], it must be a list of 4 positive numbers"),
    ({"model_type": "phi3", "partial_rotary_factor": 0.375}, "'partial_rotary_factor' 0.375"),
])
def test_bad_family_config_values_name_the_key(tmp_path, change, message):
    config = {k: v for k, v in SMALL.items() if v is not None and k != "initializer_range"}
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(lm.WeightsError, match=message):
        AutoModelForCausalLM.from_pretrained(tmp_path)


def test_cli_runs_a_qwen2_directory(tmp_path, capsys):
    from luminal.cli import main
    from test_llama import _tiny_tokenizer

    hf = make_hf(tmp_path, "qwen2", seed=5)
    tok = _tiny_tokenizer(tmp_path)
    prompt = "the quick brown"
    want = tok.decode(hf_greedy(hf, tok.encode(prompt).ids, 6), skip_special_tokens=True)
    assert main(["run", str(tmp_path), "--prompt", prompt, "--max-new-tokens", "6"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == (prompt + want).strip()
    assert "compiling Qwen2 (2 layers" in err
