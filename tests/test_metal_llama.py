"""A tiny Llama through the Metal renderer, run by the MSL emulator (tests/metal_emu.py):
transformers' random LlamaForCausalLM (GQA, tied embeddings, llama3 rope scaling) loaded by
luminal, its one program (the prefill and every decode step: symbols s and p) lowered as
written and rendered as MSL, its KV cache carried across steps as CausalLMSession carries it;
the prefill's logits and 12 greedy tokens must match transformers'."""

import contextlib
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


class EmulatedMetal:
    """What a session's steps ask of a runtime (set_data, set_storage, execute, get), over one
    emulated MSL program of graph ``cx`` whose outputs are ``outputs``."""

    def __init__(self, cx, outputs, workdir):
        self._graph = cx
        self.outputs = outputs
        self.emu = metal_emu.Emulated([(cx, None, {"s": 1, "p": 0})], str(workdir))
        self.feeds, self.values = {}, {}

    def sequence(self):
        return contextlib.nullcontext()

    def _keeps_only_its_layout(self, tensor) -> bool:
        return False

    def set_data(self, tensor, data) -> None:
        self.feeds[tensor] = np.asarray(data)

    set_storage = set_data  # f32 weights: their storage is their values

    def execute(self, dims: dict) -> None:
        self.emu.replan(0, dims)
        got = self.emu.run(0, self.feeds, self.outputs)
        for t, value in zip(self.outputs, got):
            shape = tuple(d if isinstance(d, int) else -1 for d in t.shape)
            self.values[t.id] = value.astype(np.float32).reshape(shape)

    def get(self, tensor) -> np.ndarray:
        return self.values[tensor.id]


def test_tiny_llama_greedy_decode_matches_transformers_through_msl(tmp_path):
    hf = make_hf_llama(tmp_path, seed=2, **CONFIGS["gqa-tied-llama3"])
    model = LlamaForCausalLM.from_pretrained(tmp_path, max_context=32)
    cx = lm.Graph()
    ids = cx.tensor((1, "s"), lm.int32, "input_ids")
    caches = model.make_caches(cx, 1, "p")
    logits = model(ids, caches).output()
    outputs = [logits] + [t for c in caches for t in (c.k_new, c.v_new)]
    assert lm.metal.render(cx).count("\nkernel void ") >= 10  # every layer's kernels in MSL
    rt = EmulatedMetal(cx, outputs, tmp_path)
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
