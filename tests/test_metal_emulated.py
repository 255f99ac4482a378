"""The generated Metal Shading Language runs on the CPU through tests/metal_emu.py and matches
torch: every thread mapping the Metal renderer takes from the CUDA renderer (grid-stride
elementwise, serial and simdgroup reductions with and without 16-byte loads, 32 outputs per
threadgroup splitting a reduction, tiled matmuls, matmuls on simdgroup matrices, the GEMV, row
kernels, attention), at sizes
that leave partial tiles and misaligned rows, and every Metal rule's schedule
(csrc/runtime/rules/metal.rules) on the nodes it applies to. The graphs are test_cuda_emulated's.
Also: the source spells nothing in CUDA or C that MSL lacks, the calling convention, the index
fault, quantized weights, and what the renderer refuses. No Mac needed; needs a C++20 compiler."""

import re
import types

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core

import metal_emu
import test_cuda_emulated as cases
from cuda_emu import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")

CASES = {
    "elementwise": (cases._elementwise, {}),
    "sum_simd_vector_bf16": (lambda: cases._reduce((6, 256), lm.bfloat16, "sum"),
                             {"metal_reduce": 2}),
    "sum_simd_misaligned_f16": (lambda: cases._reduce((5, 203), lm.float16, "sum"),
                                {"metal_reduce": 2}),
    "max_simd_f32": (lambda: cases._reduce((7, 100), lm.float32, "max"), {"metal_reduce": 2}),
    "sum_serial_f32": (lambda: cases._reduce((7, 100), lm.float32, "sum"), {"metal_reduce": 1}),
    "softmax_f32": (lambda: cases._reduce((4, 96), lm.float32, "softmax"), {}),
    "matmul_tiled_f32": (lambda: cases._matmul(70, 50, 90, lm.float32), {"metal_matmul": 2}),
    "matmul_tiled_bf16_bt": (lambda: cases._matmul(33, 40, 65, lm.bfloat16, True),
                             {"metal_matmul": 2}),
    "matmul_tiled_f16_batched": (lambda: cases._matmul(24, 32, 16, lm.float16, batch=2),
                                 {"metal_matmul": 2}),
    "matmul_simdgroup_f32": (lambda: cases._matmul(70, 50, 90, lm.float32), {"metal_matmul": 3}),
    "matmul_simdgroup_bf16_bt": (lambda: cases._matmul(33, 40, 65, lm.bfloat16, True),
                                 {"metal_matmul": 3}),
    "matmul_simdgroup_f16_batched": (lambda: cases._matmul(24, 32, 16, lm.float16, batch=2),
                                     {"metal_matmul": 3}),
    "matmul_simdgroup_widened_bf16": (lambda: cases._widened(70, 45, lm.bfloat16),
                                      {"metal_matmul": 3}),
    "gemv_simd_bf16": (lambda: cases._gemv(512, 48), {"metal_matmul": 1}),
    "gemv_automatic_bf16": (lambda: cases._matmul(1, 512, 48, lm.bfloat16, True), {}),
    "gemv_four_columns_f32": (lambda: cases._matmul(3, 200, 37, lm.float32, True),
                              {"metal_matmul": 4, "metal_gemv_cols": 4}),
    "matmul_tiled_widened_bf16": (lambda: cases._widened(70, 45, lm.bfloat16),
                                  {"metal_matmul": 2}),
    "gemv_widened_bf16": (lambda: cases._widened(200, 30, lm.bfloat16), {}),
    "shared_layer_kernels": (cases._layers, {}),
    "attention_pv_split": (lambda: cases._batched(2, 3, 80, 40), {}),
    "column_sum_split_bf16": (lambda: cases._column_sum((100, 37), lm.bfloat16),
                              {"metal_reduce": 3}),
}

RULES = _core.parse_rules(_core.metal_rewrite_rules(), "metal.rules")


def _schedule(rule):
    """The schedule a rule's right-hand side attaches, read from its text."""
    params = re.findall(r"\((metal_\w+|inline|epilogue|row|attention) (\d+)\)", rule.text)
    return [(n, int(v)) for n, v in params]


def _rule_graphs(rule, s=None):
    """test_cuda_emulated's graphs for the CUDA rule of the same shape, with this rule's
    schedule attached (or `s`)."""
    as_cuda = types.SimpleNamespace(name=rule.name.replace("metal-", "cuda-"),
                                    text=rule.text.replace("metal_", "cuda_"))
    return cases._rule_graphs(as_cuda, _schedule(rule) if s is None else s)


RULE_CASES = {f"{r.name}/{label}": (make, {}) for r in RULES for label, make in _rule_graphs(r)}
ALL_CASES = {**CASES, **RULE_CASES}

# What each schedule renders (in the kernels, not the prelude's helpers).
MARKS = {
    (("metal_reduce", 1),): lambda k: "lm_lane" not in k,
    (("metal_reduce", 2),): lambda k: "a warp per output, shuffle reduction" in k,
    (("metal_reduce", 2), ("metal_vector", 1)): lambda k: "shuffle reduction" in k
    and "lm_raw" not in k,
    (("metal_reduce", 3),): lambda k: "8 warps split the reduction" in k,
    (("metal_matmul", 1),): lambda k: "lm_as" not in k and "lm_acc" not in k,
    (("metal_matmul", 2),): lambda k: "threadgroup float lm_as" in k,
    (("metal_matmul", 3),): lambda k: "simdgroup_multiply_accumulate(lm_acc" in k,
    (("metal_matmul", 4),): lambda k: "GEMV: a warp per" in k,
    (("row", 1),): lambda k: k.count("writes b") == 1 and "a warp per row" in k,
    (("row", 2),): lambda k: "in one loop (online)" in k,
    (("inline", 1),): lambda k: k.count("writes b") == 1 and "const device uint16_t*" in k,
    (("epilogue", 1),): lambda k: k.count("writes b") == 1,
    (("attention", 1),): lambda k: "attention, a warp per query row" in k,
}


def _kernels(source):
    return "".join(source.split("\n/* k")[1:])


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    return cases.emulate_cases(metal_emu.Emulated, ALL_CASES,
                               tmp_path_factory.mktemp("metal_emu"))


@pytest.mark.parametrize("name", list(ALL_CASES))
def test_emulated_msl_matches_torch(name, emulated):
    cases.check_emulated_case(emulated, ALL_CASES, name)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_rule_schedule_renders_its_mapping(rule):
    """The rule cases run the mapping their schedule names (so they cannot pass vacuously),
    and differently from the automatic choice on at least one graph."""
    mark = MARKS[tuple(_schedule(rule))]
    changed = False
    for (label, make), (_, plain) in zip(_rule_graphs(rule), _rule_graphs(rule, [])):
        src = _kernels(metal_emu.render(make()[0]))
        assert mark(src), f"{rule.name}/{label}:\n{src}"
        changed = changed or src != _kernels(metal_emu.render(plain()[0]))
    assert changed, f"{rule.name} renders every graph as the automatic choice does"


def test_mapping_chosen_as_asked():
    """The cases run the mappings they name."""
    src = {n: metal_emu.render(make()[0], choice) for n, (make, choice) in CASES.items()}
    assert "threadgroup float lm_as" in src["matmul_tiled_f32"]
    for name in ("matmul_simdgroup_f32", "matmul_simdgroup_bf16_bt",
                 "matmul_simdgroup_widened_bf16"):
        assert "simdgroup_multiply_accumulate(lm_acc[i][j]" in src[name], name
    assert "threadgroup_barrier(mem_flags::mem_threadgroup);" in src["matmul_tiled_f32"]
    assert "*(const device uint4*)" in src["sum_simd_vector_bf16"]
    assert "lm_warp_max(" in src["max_simd_f32"]
    assert "GEMV: a warp per 2 columns" in src["gemv_automatic_bf16"]
    assert "GEMV: a warp per 4 columns" in src["gemv_four_columns_f32"]
    assert "lm_warp" not in src["sum_serial_f32"].split("/* k0")[1]
    assert "8 warps split the reduction" in src["column_sum_split_bf16"]


# What MSL has no spelling for: CUDA's qualifiers and intrinsics, C's float functions (MSL's
# are overloaded: exp2, not exp2f), doubles, unions, pointers without an address space.
CUDA_OR_C = re.compile(r"__syncthreads|__shared__|__global__|__device__|__shfl|__restrict|"
                       r"extern \"C\"|\b(exp2f|log2f|sinf|sqrtf|fmodf|fmaf|double|union|"
                       r"restrict)\b")
BARE_POINTER_CAST = re.compile(r"\(const (float|uint16_t|uint4|uint2|int32_t|uint8_t)\*\)")


@pytest.mark.parametrize("name", list(CASES))
def test_the_source_is_msl(name):
    """Every kernel in MSL's spelling: `kernel void` with the calling convention of
    codegen/metal/renderer.h, pointer casts with address spaces, nothing CUDA or C."""
    make, choice = CASES[name]
    cx = make()[0]
    src = metal_emu.render(cx, choice)
    assert src.startswith("/* Generated by luminal for Metal.")
    assert "#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\n" \
        "using namespace metal;" in src
    assert not CUDA_OR_C.search(src), CUDA_OR_C.search(src).group(0)
    assert not BARE_POINTER_CAST.search(src), BARE_POINTER_CAST.search(src).group(0)
    for sig in re.findall(r"^kernel void \w+\((.*)\) \{$", src, re.M):
        params = sig.split(", ")
        slots = [int(m) for p in params for m in re.findall(r"\[\[buffer\((\d+)\)\]\]", p)]
        assert slots == list(range(len(slots))), sig  # buffers, dims, then the fault flag
        assert params[len(slots) - 2].startswith("constant int64_t* lm_dims"), sig
        assert params[len(slots) - 1].startswith("device atomic_int* lm_index_fault"), sig
        assert params[0].startswith("device ") and not params[0].startswith("device const")
        assert all(p.startswith("const device ") for p in params[1:len(slots) - 2]
                   if "*" in p), sig
        assert params[len(slots):] == [
            "uint3 threadIdx [[thread_position_in_threadgroup]]",
            "uint3 blockIdx [[threadgroup_position_in_grid]]",
            "uint3 blockDim [[threads_per_threadgroup]]",
            "uint3 gridDim [[threadgroups_per_grid]]"], sig


def test_symbolic_dims_are_bound_as_constants(tmp_path):
    """A graph over a symbolic dim: the dims' values in the `lm_dims` buffer, read into d0
    first (the emulator binds it as MetalRuntime does), at two values."""
    cx = lm.Graph()
    x = cx.tensor(("s", 24))
    w = cx.tensor((24, 10))
    y = ((x @ w).exp() * 0.5).sum(-1).output()
    src = metal_emu.render(cx)
    assert "constant int64_t* lm_dims [[buffer(" in src
    assert "const int64_t d0 = lm_dims[0];" in src
    for s in (1, 7):
        emu = metal_emu.Emulated([(cx, None, {"s": s})], str(tmp_path))
        dx, dw = torch.randn(s, 24), torch.randn(24, 10) * 0.2
        (got,) = emu.run(0, {x: dx, w: dw}, [y])
        np.testing.assert_allclose(got.reshape(-1), ((dx @ dw).exp() * 0.5).sum(-1).numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_an_index_out_of_range_sets_the_fault_buffer(tmp_path):
    """A Gather past its table reads 0 and sets lm_index_fault (the calling convention's last
    buffer), which becomes the runtime's ShapeError; in range, it is left clear."""
    cx = lm.Graph()
    table = cx.tensor((5, 3))
    ids = cx.tensor((4,), lm.int32)
    y = (table.index_select(0, ids) * 2.0).output()
    assert "atomic_store_explicit(lm_index_fault, 1, memory_order_relaxed)" in \
        metal_emu.render(cx)
    emu = metal_emu.Emulated([(cx, None, {})], str(tmp_path))
    data = torch.arange(15, dtype=torch.float32).reshape(5, 3)
    (got,) = emu.run(0, {table: data, ids: torch.tensor([4, 0, 2, 1])}, [y])
    np.testing.assert_array_equal(got.reshape(4, 3), (data[[4, 0, 2, 1]] * 2).numpy())
    with pytest.raises(lm.ShapeError, match="out of range"):
        emu.run(0, {table: data, ids: torch.tensor([1, 5, 0, 0])}, [y])


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    import test_cuda_quant as q

    built = {name: q.build(name) for name in q.CASES}
    items = [(built[n][0], {}, {}) for n in q.CASES]
    return metal_emu.Emulated(items, str(tmp_path_factory.mktemp("metal_quant"))), built


def test_quantized_weights_match_the_dequantization(quantized):
    """GGUF blocks (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) stored, widened in a matmul and gathered by an
    embedding: the element readers through device pointers (test_cuda_quant's graphs) match
    gguf-py's dequantization."""
    emu, built = quantized
    for i, (name, (cx, feeds, outputs, wants)) in enumerate(built.items()):
        src = metal_emu.render(cx)
        assert "(const device uint8_t* p, int64_t i)" in src, name
        for g, want in zip(emu.run(i, feeds, outputs), wants):
            np.testing.assert_allclose(g.reshape(want.shape), want, rtol=1e-5, atol=1e-5,
                                       err_msg=name)


def test_unknown_or_out_of_range_metal_params_are_refused():
    cx = lm.Graph()
    x = cx.tensor((4, 8))
    x.sum(-1).output()
    with pytest.raises(lm.CompileError, match="Metal: unknown schedule parameter 'cuda_reduce'"):
        metal_emu.render(cx, {"cuda_reduce": 2})
    with pytest.raises(lm.CompileError, match="metal_threads = 48 .* out of range"):
        metal_emu.render(cx, {"metal_threads": 48})


@pytest.mark.skipif(lm.metal.available(), reason="a Mac with an Apple GPU")
def test_the_metal_runtime_off_apple_raises_a_clear_device_error():
    """Elsewhere than macOS the runtime is absent from the build: constructing it says so (and
    what still works), as a DeviceError, never an AttributeError or a crash."""
    with pytest.raises(lm.DeviceError, match="runs only on macOS with Apple GPUs"):
        lm.MetalRuntime()
