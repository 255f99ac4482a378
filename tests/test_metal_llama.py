"""A tiny Llama through the Metal renderer, run by the MSL emulator (tests/metal_emu.py):
transformers' random LlamaForCausalLM (GQA, tied embeddings, llama3 rope scaling) loaded by
luminal, its one program (the prefill and every decode step: symbols s and p) lowered as
written and rendered as MSL, its KV cache carried across steps as CausalLMSession carries it;
the prefill's logits and 12 greedy tokens must match transformers'."""

import types

import numpy as np
import pytest

import luminal as lm
from luminal.models import LlamaForCausalLM
from luminal.models.generation import run_cached_step
from luminal.nn.kv_cache import KVCacheBuffers

import metal_emu
from cuda_emu import compiler
from test_llama import CONFIGS, hf_greedy, make_hf_llama

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")


def test_tiny_llama_greedy_decode_matches_transformers_through_msl(tmp_path):
    hf = make_hf_llama(tmp_path, seed=2, **CONFIGS["gqa-tied-llama3"])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32)
    cx = lm.Graph()
    ids = cx.tensor((1, "s"), lm.int32, "input_ids")
    caches = model.make_caches(cx, 1, "p")
    logits = model(ids, caches).output()
    outputs = [logits] + [t for c in caches for t in (c.k_new, c.v_new)]
    assert lm.metal.render(cx).count("\nkernel void ") >= 10  # every layer's kernels in MSL
    cx.set_dim("s", 1)
    cx.set_dim("p", 0)
    rt = metal_emu.EmulatedRuntime(cx, outputs, tmp_path)
    model.load_weights(rt)
    session = types.SimpleNamespace(runtime=rt, ids=ids, logits=logits, batch=1,
                                    cache_buffers=KVCacheBuffers(caches, model.max_context))
    prompt = [9, 8, 7, 6, 5]
    step = lambda chunk: run_cached_step(session, np.array([chunk]), 128, model.max_context)
    got = step(prompt)
    with torch.no_grad():
        want = hf(torch.tensor([prompt])).logits.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    tokens = [int(got[0, -1].argmax())]
    for _ in range(11):  # each decode step reads the cache the steps before wrote
        tokens.append(int(step([tokens[-1]])[0, -1].argmax()))
    assert tokens == hf_greedy(hf, prompt, 12)
    assert len(set(tokens)) > 3  # not degenerate
