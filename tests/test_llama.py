"""Llama against Hugging Face transformers: tiny random LlamaForCausalLM models (GQA or not,
tied or untied embeddings, llama3 rope scaling or none, f32 or bf16 weights) saved with
save_pretrained and loaded by luminal; prefill logits and 20 greedy tokens must match.
Also sampling, streaming stats, and the ``luminal run`` CLI."""

import numpy as np
import pytest

import luminal as lm
from luminal.cuda import gpu_available
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


def test_session_searches_at_a_decode_step_and_serves_the_prefill_too(tmp_path):
    """The search binds s = 1 and p = a typical context (capped by max_context); the program it
    picks on the CPU, timed at that decode shape, still prefills and decodes as transformers."""
    from conftest import CpuRuntime
    from luminal.models.generation import DECODE_CONTEXT

    hf = make_hf_llama(tmp_path, seed=8, **CONFIGS["gqa-tied-llama3"])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32)
    session = CausalLMSession(model, CpuRuntime(), search=3)
    assert session.graph.dyn_map == {"s": 1, "p": 31}
    assert all(c.status == "ok" for c in session.graph.last_search_report.candidates)
    prompt = [4, 40, 44, 4, 0]
    with torch.no_grad():
        want = hf(torch.tensor([prompt])).logits[:, -1:].numpy()
    np.testing.assert_allclose(session.step(np.array([prompt])), want, rtol=1e-4, atol=1e-4)
    assert list(generate(session, prompt, 12)) == hf_greedy(hf, prompt, 12)
    long = LlamaForCausalLM.from_pretrained(tmp_path, max_context=4096)
    assert long.max_context == 128  # the config's max_position_embeddings
    assert CausalLMSession(long).graph.dyn_map == {"s": 1, "p": min(DECODE_CONTEXT, 127)}
    chosen = CausalLMSession(model, search_dims={"s": 9, "p": 3})
    assert chosen.graph.dyn_map == {"s": 9, "p": 3}
    # a bf16 model rounding its activations to bf16 is searched at a prefill (its GEMMs of
    # bf16 dot products are found there), capped by its context; an f32 one at decode
    rounding = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32, dtype="bfloat16",
                                                activations="bf16")
    assert CausalLMSession(rounding).graph.dyn_map == {"s": 32, "p": 0}
    f32 = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32, activations="bf16")
    assert CausalLMSession(f32).graph.dyn_map == {"s": 1, "p": 31}


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


def test_bf16_checkpoint_is_read_in_place_by_the_cpu_runtime(tmp_path):
    """Each weight reaches the runtime as a view of the memory-mapped file, and the runtime's
    own accounting of the inputs it holds is the file's weights in bf16 (borrowed) plus the
    model's small buffers: no copy of any weight, f32 or other."""
    from safetensors import safe_open

    from conftest import CpuRuntime

    make_hf_llama(tmp_path, seed=4, dtype=torch.bfloat16, hidden_size=128,
                  intermediate_size=256, vocab_size=1024, num_attention_heads=4,
                  num_key_value_heads=2, tie_word_embeddings=True)
    path = tmp_path / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    assert all(t.dtype == torch.bfloat16 for t in tensors.values())
    weight_bytes = sum(t.numel() * 2 for t in tensors.values())
    assert weight_bytes > 0.99 * path.stat().st_size  # the file is its weights and a header
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=16)
    runtime = CpuRuntime()
    handed = []  # what load_state_dict hands the runtime for each weight
    set_storage = runtime.set_storage
    runtime.set_storage = lambda t, storage: (handed.append(storage), set_storage(t, storage))
    session = CausalLMSession(model, runtime)
    assert len(handed) == len(tensors)
    for storage in handed:  # each a uint16 view of the file's map, not a copy
        base = storage
        while not isinstance(base, np.memmap) and base.base is not None:
            base = base.base
        assert storage.dtype == np.uint16 and isinstance(base, np.memmap)
        assert base.filename == str(path) and np.shares_memory(storage, base)
    buffer_bytes = sum(np.asarray(b.value).nbytes for _, b in model.named_buffers())
    assert buffer_bytes < 0.05 * weight_bytes
    use = session.runtime.memory()
    assert use["owned_input_bytes"] == 0
    assert use["borrowed_input_bytes"] >= weight_bytes + buffer_bytes
    session.step(np.array([[1, 2, 3]]))  # sets the ids (3 int32) and empty caches
    use = session.runtime.memory()
    assert use["owned_input_bytes"] == 0
    assert use["borrowed_input_bytes"] == weight_bytes + buffer_bytes + 3 * 4
    assert use["arena_bytes"] > 0 and use["output_bytes"] >= 1024 * 4


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
    default = "cuda" if gpu_available() else "cpu"
    assert f"luminal: runtime {default} (the fastest available" in err


def test_cli_refuses_a_prompt_the_tokenizer_gives_no_tokens_for_before_compiling(tmp_path,
                                                                                   capsys):
    from luminal.cli import main

    make_hf_llama(tmp_path, seed=5, **CONFIGS["mha-untied"])
    _tiny_tokenizer(tmp_path)
    assert main(["run", str(tmp_path), "--prompt", "", "--runtime", "native"]) == 1
    err = capsys.readouterr().err
    assert "the tokenizer gives no tokens for the prompt ''" in err.splitlines()[-1]
    assert "compiling" not in err


def test_cli_runtime_override(tmp_path, capsys):
    from luminal.cli import main

    hf = make_hf_llama(tmp_path, seed=5, **CONFIGS["mha-untied"])
    tok = _tiny_tokenizer(tmp_path)
    prompt = "the lazy dog"
    want = tok.decode(hf_greedy(hf, tok.encode(prompt).ids, 4), skip_special_tokens=True)
    argv = ["run", str(tmp_path), "--prompt", prompt, "--max-new-tokens", "4"]
    assert main(argv + ["--runtime", "native"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == (prompt + want).strip()
    assert "luminal: runtime native (--runtime)" in err and "on NativeRuntime" in err


def test_cli_default_runtime_is_cuda_with_a_gpu_else_cpu(monkeypatch):
    from luminal import cli, cuda

    monkeypatch.setattr(cuda, "gpu_available", lambda: True)
    assert cli.fastest_runtime() == "cuda"
    monkeypatch.setattr(cuda, "gpu_available", lambda: False)
    assert cli.fastest_runtime() == "cpu"


def test_cli_runs_a_gguf_file(tmp_path, capsys):
    from luminal.cli import main

    hf = make_hf_llama(tmp_path, seed=9, **CONFIGS["mha-untied"])
    write_llama_gguf(hf, tmp_path / "m.gguf")
    tok = _tiny_tokenizer(tmp_path)
    prompt = "the lazy dog"
    want = tok.decode(hf_greedy(hf, tok.encode(prompt).ids, 5), skip_special_tokens=True)
    assert main(["run", str(tmp_path / "m.gguf"), "--prompt", prompt, "--max-new-tokens", "5",
                 "--search", "1"]) == 0
    assert capsys.readouterr().out.strip() == (prompt + want).strip()


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


# ---- GGUF (llama.cpp layout) ------------------------------------------------------------
def _llama_cpp_permute(w, heads):
    """llama.cpp convert_hf_to_gguf's q/k row order: per head, halves interleaved."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2)
            .reshape(w.shape))


_GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
               "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
               "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


def write_llama_gguf(hf, path, quantize=False):
    gguf = pytest.importorskip("gguf")
    c = hf.config
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(c.num_hidden_layers)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_context_length(c.max_position_embeddings)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(c.vocab_size)
    q8 = gguf.GGMLQuantizationType.Q8_0
    for name, t in hf.state_dict().items():
        a = t.float().numpy()
        if name == "lm_head.weight" and c.tie_word_embeddings:
            continue
        if name.startswith("model.layers."):
            _, _, i, rest = name.split(".", 3)
            module, kind = rest.rsplit(".", 1)
            gname = f"blk.{i}.{_GGUF_NAMES[module]}.{kind}"
            if module == "self_attn.q_proj":
                a = _llama_cpp_permute(a, c.num_attention_heads)
            if module == "self_attn.k_proj":
                a = _llama_cpp_permute(a, c.num_key_value_heads)
        else:
            gname = {"model.embed_tokens.weight": "token_embd.weight",
                     "model.norm.weight": "output_norm.weight",
                     "lm_head.weight": "output.weight"}[name]
        if quantize and a.ndim == 2:
            w.add_tensor(gname, gguf.quants.quantize(a, q8), raw_dtype=q8)
        else:
            w.add_tensor(gname, a)
    rope = getattr(c, "rope_parameters", None) or getattr(c, "rope_scaling", None) or {}
    if rope.get("rope_type") == "llama3":  # llama.cpp stores llama3 scaling as divisors
        from luminal.nn.rotary import default_inv_freq

        base = default_inv_freq(c.head_dim, 10000.0)
        with torch.no_grad():
            scaled = hf.model.rotary_emb.inv_freq.float().numpy()
        w.add_tensor("rope_freqs.weight", (base / scaled).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_llama_with_llama3_rope_matches_transformers(tmp_path):
    hf = make_hf_llama(tmp_path, seed=7, **CONFIGS["gqa-tied-llama3"])
    write_llama_gguf(hf, tmp_path / "tiny.gguf")
    model = LlamaForCausalLM.from_gguf(tmp_path / "tiny.gguf", max_context=64)
    assert model.config.tie_word_embeddings and model.config.num_key_value_heads == 2
    session = CausalLMSession(model, all_logits=True)
    prompt = [4, 8, 15, 16, 23, 42]
    with torch.no_grad():
        want = hf(torch.tensor([prompt])).logits.numpy()
    np.testing.assert_allclose(session.step(np.array([prompt])), want, rtol=1e-4, atol=1e-4)
    assert list(generate(session, prompt, 20)) == hf_greedy(hf, prompt, 20)


def test_gguf_q8_0_llama_matches_transformers_on_the_dequantized_weights(tmp_path):
    gguf = pytest.importorskip("gguf")
    hf = make_hf_llama(tmp_path, seed=8, **CONFIGS["mqa-untied-llama3-vocab256"])
    # the same GGUF without rope_freqs: plain rope, in luminal and in the reference
    hf.config.rope_parameters = {"rope_type": "default", "rope_theta": 10000.0}
    hf = transformers.LlamaForCausalLM(hf.config).eval()
    torch.manual_seed(8)
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0, 0.3)
    write_llama_gguf(hf, tmp_path / "q8.gguf", quantize=True)
    q8 = gguf.GGMLQuantizationType.Q8_0
    with torch.no_grad():
        for p in hf.parameters():
            if p.ndim == 2:
                a = p.numpy()
                p.copy_(torch.from_numpy(gguf.quants.dequantize(gguf.quants.quantize(a, q8), q8)))
    # f32 activations: the weights alone against the reference (q8_0 activations, from_gguf's
    # default, are tests/test_quant_int8.py's)
    model = LlamaForCausalLM.from_gguf(tmp_path / "q8.gguf", max_context=64, activations="f32")
    session = CausalLMSession(model, all_logits=True)
    prompt = [1, 200, 3, 77, 5]
    with torch.no_grad():
        want = hf(torch.tensor([prompt])).logits.numpy()
    np.testing.assert_allclose(session.step(np.array([prompt])), want, rtol=1e-4, atol=1e-4)
