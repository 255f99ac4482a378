"""Quantized weights in the generated CUDA: the CUDA renderer declines its matmul kernels for
a quantized B and runs the generic loop nest, whose loads call the element readers
(codegen/c/quant.h) as __device__ functions. Each graph's CUDA is NVRTC-compiled (skipped
without the nvidia-cuda-nvrtc wheel) and run in the CPU emulator (tests/cuda_emu.py) against
the interpreter's dequantization, with the Cast stored (the default) and widened in the
matmul and in an embedding Gather (inline 1). A GPU run is for benchmarks/gpu.py."""

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core, cuda
from luminal.weights.gguf import dequantize

import cuda_emu
from matmul_cases import scheduled
from test_quant_kernels import QTYPES, random_weight

pytestmark = pytest.mark.skipif(cuda_emu.compiler() is None, reason="no C++ compiler")


def linear(dtype, inline, n=7, m=3):
    k = lm._core.block_values(dtype)
    cx = lm.Graph()
    x = cx.tensor((m, k))
    w = cx.tensor((n, k), dtype, name="w", parameter=True)
    wf = w.to(lm.float32)
    if inline:
        wf = scheduled(wf, [("inline", 1)])
    y = (x @ wf.t()).output()
    raw = random_weight(dtype, n, k, seed=7)
    xt = torch.randn(m, k, generator=torch.Generator().manual_seed(1))
    want = xt.double() @ torch.from_numpy(dequantize(raw, dtype)).double().T
    return cx, {x: xt.numpy(), w: raw}, [y], [want.numpy()]


def embedding(dtype):
    k = lm._core.block_values(dtype)
    cx = lm.Graph()
    ids = cx.tensor((4,), lm.int32)
    table = cx.tensor((9, k), dtype, name="table", parameter=True)
    rows = scheduled(table.to(lm.float32), [("inline", 1)]).index_select_tensor(0, ids)
    raw = random_weight(dtype, 9, k, seed=8)
    idx = np.array([2, 8, 0, 2], np.int32)
    return cx, {ids: idx, table: raw}, [rows.output()], [dequantize(raw, dtype)[idx]]


CASES = {f"{lm.dtype.name(d)}-{kind}": (d, kind) for d in QTYPES
         for kind in ("stored", "widened", "gather")}


def build(name):
    dtype, kind = CASES[name]
    return embedding(dtype) if kind == "gather" else linear(dtype, kind == "widened")


@pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")
@pytest.mark.parametrize("name", list(CASES))
def test_nvrtc_compiles_the_quantized_kernels(name):
    cx = build(name)[0]
    source = _core.cuda_render(cx._g, "sm_90", _core.TuningChoice())
    dtype = CASES[name][0]
    assert f"lm_{lm.dtype.name(dtype)}_at(" in source
    assert _core.cuda_nvrtc_compile(source, "sm_90", cuda.find_nvrtc()) > 0


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    built = {name: build(name) for name in CASES}
    items = [(built[n][0], {}, {}) for n in CASES]
    return cuda_emu.Emulated(items, str(tmp_path_factory.mktemp("emu"))), built


@pytest.mark.parametrize("name", list(CASES))
def test_emulated_quantized_kernels_match_the_interpreter(name, emulated):
    emu, built = emulated
    _, feeds, outputs, wants = built[name]
    got = emu.run(list(CASES).index(name), feeds, outputs)
    for g, want in zip(got, wants):
        np.testing.assert_allclose(g.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.gpu_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", list(CASES))
def test_quantized_kernels_on_the_gpu(name):
    """The same graphs on CudaRuntime (a later session with a GPU runs these)."""
    cx, feeds, outputs, wants = build(name)
    rt = cx.search(lm.CudaRuntime(), 2, cache=False, progress=False)
    for t, data in feeds.items():
        if lm.dtype.is_quantized(t.dtype):
            rt.set_storage(t, data)
        else:
            rt.set_data(t, data)
    rt.execute()
    for t, want in zip(outputs, wants):
        np.testing.assert_allclose(rt.get(t).reshape(want.shape), want, rtol=1e-5, atol=1e-5)
