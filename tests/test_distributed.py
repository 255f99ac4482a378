"""Past one device over torch.distributed (Gloo), two processes started by torchrun: a tiny
Llama's layers split over them (pipeline parallelism, models/pipeline.py), or each layer's
heads and features (tensor parallelism, models/tensor_parallel.py), decodes the greedy tokens
transformers does, each rank holding about half the weights; the CLI's --pp and --tp; and the
errors: ranks that disagree, more stages than layers, splits that do not divide, a
communicator outside torchrun."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import luminal as lm
from luminal import distributed
from luminal.models import LlamaForCausalLM, CausalLMSession
from luminal.models.pipeline import stage_layers

from conftest import CpuRuntime
from test_llama import CONFIGS, _tiny_tokenizer, hf_greedy, make_hf_llama

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))


def torchrun(*args, nproc=2):
    """Runs ``args`` under torchrun (a free port on this host), its output returned."""
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={nproc}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def results(prefix, n=2):
    out = []
    for rank in range(n):
        with open(f"{prefix}.{rank}.json") as f:
            out.append(json.load(f))
    return out


def test_pp2_decodes_transformers_greedy_tokens_with_half_the_weights_each(tmp_path):
    """The 5-token prompt in micro-batches of 2, 2 and 1 positions, then decode steps."""
    hf = make_hf_llama(tmp_path / "model", seed=2, **CONFIGS["mha-untied"])
    torchrun(os.path.join(HERE, "distributed_worker.py"), "generate", str(tmp_path / "model"),
             str(tmp_path / "out"), "2")
    ranks = results(tmp_path / "out")
    want = hf_greedy(hf, [9, 8, 7, 6, 5], 12)
    assert [r["tokens"] for r in ranks] == [want, want]
    assert [r["layers"] for r in ranks] == [[0, 1], [1, 2]]
    # One process holding the whole model, for the per-rank share.
    model = LlamaForCausalLM.from_pretrained(tmp_path / "model", max_context=32)
    whole = CausalLMSession(model, CpuRuntime(threads=1)).runtime.memory()
    total = whole["borrowed_input_bytes"] + whole["owned_input_bytes"]
    for r in ranks:
        assert 0.35 * total < r["weights"] < 0.65 * total, (r["weights"], total)
    # Each parameter on one rank; the buffers (the rotary tables) on every rank.
    replicated = sum(b.value.nbytes for _, b in model.named_buffers())
    assert sum(r["weights"] for r in ranks) == total + replicated


def test_tp2_decodes_transformers_greedy_tokens_with_each_layer_split(tmp_path):
    """Heads, KV caches and MLP features split over two ranks (all-reduces between the
    half-layers, the head's logits all-gathered): transformers' greedy tokens, and each rank
    holding half of every layer (the embedding table whole on both)."""
    hf = make_hf_llama(tmp_path / "model", seed=2, **CONFIGS["mha-untied"])
    torchrun(os.path.join(HERE, "distributed_worker.py"), "tp", str(tmp_path / "model"),
             str(tmp_path / "out"))
    ranks = results(tmp_path / "out")
    want = hf_greedy(hf, [9, 8, 7, 6, 5], 12)
    assert [r["tokens"] for r in ranks] == [want, want]
    model = LlamaForCausalLM.from_pretrained(tmp_path / "model", max_context=32)
    params = {n: p for n, p in model.named_parameters()}
    nbytes = lambda names: sum(int(np.prod(params[n].shape)) * 4 for n in names)
    embed = nbytes(["model.embed_tokens.weight"])
    split = nbytes([n for n in params if n != "model.embed_tokens.weight" and "norm" not in n])
    norms = nbytes([n for n in params if "norm" in n])
    replicated = sum(b.value.nbytes for _, b in model.named_buffers())  # rotary tables
    for r in ranks:  # each half-layer's program holds its own rotary table
        assert embed + split // 2 + norms <= r["weights"] <= \
            embed + split // 2 + norms + 2 * model.config.num_hidden_layers * replicated


def test_tp_refuses_what_does_not_divide():
    from luminal.models.tensor_parallel import shard_config

    from luminal.models.decoder_config import DecoderConfig

    config = DecoderConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=8)
    assert shard_config(config, 2).num_key_value_heads == 1
    with pytest.raises(lm.ShapeError, match="tp=4 does not divide the model's 2 key/value"):
        shard_config(config, 4)


def test_cli_run_pp2_and_tp2_print_what_transformers_generates(tmp_path):
    hf = make_hf_llama(tmp_path, seed=5, **CONFIGS["gqa-tied-llama3"])
    tok = _tiny_tokenizer(tmp_path)
    prompt = "the quick brown"
    want = tok.decode(hf_greedy(hf, tok.encode(prompt).ids, 6), skip_special_tokens=True)
    done = torchrun("-m", "luminal.cli", "run", str(tmp_path), "--prompt", prompt,
                    "--max-new-tokens", "6", "--pp", "2", "--runtime", "cpu")
    # printed once, by rank 0 (an editable build's rebuild notes come before it)
    assert done.stdout.strip().splitlines()[-1] == (prompt + want).strip()
    assert done.stdout.count(prompt) == 1
    assert "[rank 0 of 2: layers 0-0" in done.stderr and "[rank 1 of 2: layers 1-1" in done.stderr
    done = torchrun("-m", "luminal.cli", "run", str(tmp_path), "--prompt", prompt,
                    "--max-new-tokens", "6", "--tp", "2", "--runtime", "cpu")
    assert done.stdout.strip().splitlines()[-1] == (prompt + want).strip()
    assert "[rank 1 of 2: 1/2 of every layer" in done.stderr


def test_ranks_that_disagree_all_get_a_shape_error(tmp_path):
    torchrun(os.path.join(HERE, "distributed_worker.py"), "disagree", str(tmp_path / "out"))
    for r in results(tmp_path / "out"):
        assert r["error"] and "the ranks disagree on the batch: rank 0: " in r["error"]


def test_the_stages_split_the_layers_evenly_and_refuse_more_stages_than_layers():
    assert [stage_layers(16, r, 3) for r in range(3)] == [range(6), range(6, 11),
                                                          range(11, 16)]
    assert [len(stage_layers(2, r, 2)) for r in range(2)] == [1, 1]
    with pytest.raises(lm.ShapeError, match="3 stages exceed the model's 2 layers"):
        stage_layers(2, 0, 3)


def test_a_communicator_outside_torchrun_is_a_clear_error(monkeypatch):
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(lm.DeviceError, match="run under torchrun"):
        distributed.init()
    with pytest.raises(lm.DeviceError, match="not initialized"):
        distributed.Communicator()
