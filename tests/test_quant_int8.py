"""Quantized activations (F.quantize_activations, hl_ops/quant_activations.py) and the CPU's
integer dot products of them with quantized weights (rule cpu-quant-int8,
codegen/c/quant_int8.cc). The hl op against gguf-py's Q8_0 quantize + dequantize (bit for bit)
and a float64 numpy replica of its formula, on the interpreter, CpuRuntime and the CUDA
emulator (NVRTC compiles it); the int8 kernel against gguf-py's round trip times the weight
dequantized, for every block type on odd shapes and every M of a symbolic M, and against the
interpreter; the rule and the search space; a GGUF Llama with q8 activations against the
interpreter (step by step) and transformers f32 (KL)."""

import numpy as np
import pytest

import gguf
import luminal as lm
from luminal import _core, cuda
from luminal.nn.functional import quantize_activations
from luminal.weights.gguf import dequantize

import cuda_emu
from conftest import CpuRuntime
from matmul_cases import scheduled
from test_quant_kernels import random_weight

Q8_0 = gguf.GGMLQuantizationType.Q8_0


def gguf_round_trip(x):
    return gguf.quants.dequantize(gguf.quants.quantize(x, Q8_0), Q8_0).reshape(x.shape)


def replica(x):
    """The hl op's formula in float64, each step rounded to f32 where the graph's is: d is
    amax / 127 correctly rounded (float64 quotient rounded once), id = f32(1 / d)."""
    f32 = np.float32
    xb = x.astype(np.float64).reshape(*x.shape[:-1], -1, 32)
    amax = np.abs(xb).max(-1, keepdims=True)
    d = (amax / 127).astype(f32).astype(np.float64)
    d16 = d.astype(np.float16).astype(np.float64)
    with np.errstate(divide="ignore"):
        inv = np.where(d16 == 0, 0.0, (1 / d).astype(f32).astype(np.float64))
    y = (xb * inv).astype(f32).astype(np.float64)
    q = np.sign(y) * np.floor(np.abs(y) + 0.5)  # exact in float64: halves away from zero
    return (q * d16).astype(f32).reshape(x.shape)


def run_native(shape, x, dims=None):
    cx = lm.Graph()
    t = cx.tensor(shape)
    out = quantize_activations(t).output()
    rt = lm.NativeRuntime()
    rt._load(cx)
    rt.set_data(t, x)
    rt.execute(dims or {})
    return np.asarray(rt.get_f32(out)).reshape(x.shape)


def scaled_rows(rows, k, seed=0):
    """Rows of normal values at scales from 1e-30 to 1e6 (past 127 * 65504 the f16 scale is
    inf), with a zero block, a block of one nonzero value and exact halves of a scale."""
    rng = np.random.default_rng(seed)
    scales = rng.choice([1e-30, 1e-9, 1e-3, 1.0, 37.0, 1e4, 1e6], size=(rows, 1))
    x = (rng.standard_normal((rows, k)) * scales).astype(np.float32)
    x[0, :32] = 0.0
    if k >= 64:
        x[0, 32:64] = 0.0
        x[0, 40] = -3.0
    if k >= 96:  # amax 127, so d = 1 and halves meet the rounding
        x[0, 64:96] = np.concatenate([[127.0, -127.0], np.arange(-14.5, 15.5)])
    return x


@pytest.mark.parametrize("rows,k", [(1, 32), (7, 256), (3, 2048), (13, 96)])
def test_quantize_activations_is_gguf_q8_0_round_trip(rows, k):
    x = scaled_rows(rows, k, seed=rows)
    got = run_native((rows, k), x)
    np.testing.assert_array_equal(got, gguf_round_trip(x))  # bit for bit: no mismatch
    np.testing.assert_array_equal(got, replica(x))


def test_quantize_activations_random_amax_over_binades_matches_gguf():
    # amax = 127 d over every binade a block's scale meets (d from 2^-24 to 2^15), so d's
    # correct rounding is exercised where a plain amax * f32(1/127) is 4.7% wrong.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 1024)).astype(np.float32)
    x *= np.exp2(rng.integers(-20, 20, (64, 32, 1))).repeat(32, -1).reshape(64, 1024)
    got = run_native((64, 1024), x)
    np.testing.assert_array_equal(got, gguf_round_trip(x))


def test_quantize_activations_symbolic_rows_on_cpu():
    cx = lm.Graph()
    t = cx.tensor(("s", 2, 64))
    out = quantize_activations(t).output()
    rt = CpuRuntime()
    rt._load(cx)
    for s in (1, 5):
        x = scaled_rows(s * 2, 64, seed=s).reshape(s, 2, 64)
        rt.set_data(t, x)
        rt.execute({"s": s})
        got = np.asarray(rt.get_f32(out)).reshape(x.shape)
        np.testing.assert_array_equal(got, gguf_round_trip(x.reshape(-1, 64)).reshape(x.shape))


def test_quantize_activations_refuses_bad_inputs():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match="multiple of 32"):
        quantize_activations(cx.tensor((2, 48)))
    with pytest.raises(lm.DTypeError, match="scheme"):
        quantize_activations(cx.tensor((2, 32)), "q4_0")
    with pytest.raises(lm.DTypeError, match="f32"):
        quantize_activations(cx.tensor((2, 32), lm.float16))


# ---- the int8 kernel (rule cpu-quant-int8: quant_dot 1) ----------------------------------------

KERNEL_TYPES = [lm.dtype.q8_0, lm.dtype.q4_0, lm.dtype.q4_k, lm.dtype.q5_k, lm.dtype.q6_k]


def quant_linear(dtype, k, n, fused=True, batch=None, params=(), silu=False):
    """x (m, k) or (batch, m, k), m symbolic, times W (n, k) in `dtype` read from its blocks,
    through quantize_activations; `fused` schedules the product quant_dot 1, with `params`
    (int8_gemm 1, epilogue 1), and `silu` takes the product's SiLU."""
    cx = lm.Graph()
    x = cx.tensor(("m", k) if batch is None else (batch, "m", k), name="x")
    w = cx.tensor((n, k), dtype, name="w", parameter=True)
    wf = scheduled(w.to(lm.float32), [("inline", 1)])
    y = quantize_activations(x) @ wf.t()
    if fused:
        y = scheduled(y, [("quant_dot", 1), *params])
    return cx, x, w, (lm.nn.functional.silu(y) if silu else y).output()


def check_product(got, x, raw, dtype):
    """got against gguf-py: x's Q8_0 round trip times W dequantized, in float64, within f32
    sums' rounding of the terms' magnitudes."""
    xq = gguf_round_trip(x.reshape(-1, x.shape[-1])).astype(np.float64)
    wd = dequantize(raw, dtype).astype(np.float64)
    want = xq @ wd.T
    bound = 1e-5 * (np.abs(xq) @ np.abs(wd).T) + 1e-30
    got = np.asarray(got, np.float64).reshape(want.shape)
    assert np.all(np.abs(got - want) <= bound), np.abs(got - want).max()


def check_every_m(rt, x, w, y, dtype, k, n, seed, ms):
    """rt's product with a random W (n, k) at each m of `ms` against gguf-py (check_product)."""
    raw = random_weight(dtype, n, k, seed=seed)
    rt.set_storage(w, raw)
    for m in ms:
        xs = scaled_rows(m, k, seed=m)
        rt.set_data(x, xs)
        rt.execute({"m": m})
        check_product(rt.get(y), xs, raw, dtype)


@pytest.mark.parametrize("dtype", KERNEL_TYPES, ids=str)
@pytest.mark.parametrize("blocks,n", [(1, 1), (2, 7), (3, 13)])
def test_int8_kernel_matches_gguf_for_every_m(dtype, blocks, n):
    k = blocks * max(lm._core.block_values(dtype), 64)  # 64, 128, 192; 256, 512, 768
    cx, x, w, y = quant_linear(dtype, k, n)
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qdot4_{lm.dtype.name(dtype)}(K, " in rt.source
    # past 8 rows: the round trip in the f32 GEMM
    check_every_m(rt, x, w, y, dtype, k, n, blocks, (1, 2, 3, 7, 9, 20))


@pytest.mark.parametrize("dtype", [lm.dtype.q8_0, lm.dtype.q4_k], ids=str)
def test_a_batch_of_one_prefills_through_the_gemm(dtype):
    """A model's (1, s, k) input: its batch loop of one folds into the rows, so past 8 rows
    (a prompt) the round trip goes through the f32 GEMM, as without a batch dim; it used to
    take the int8 path for every row, widening each weight block once per row of x."""
    k, n = 256, 13
    cx, x, w, y = quant_linear(dtype, k, n, batch=1)
    rt = CpuRuntime()
    rt._load(cx)
    assert "const int lm_wide = M > 8;" in rt.source
    raw = random_weight(dtype, n, k, seed=5)
    rt.set_storage(w, raw)
    for m in (3, 20):
        xs = scaled_rows(m, k, seed=m).reshape(1, m, k)
        rt.set_data(x, xs)
        rt.execute({"m": m})
        check_product(rt.get(y), xs, raw, dtype)


@pytest.mark.parametrize("dtype", [lm.dtype.q4_0, lm.dtype.q6_k], ids=str)
def test_int8_kernel_agrees_with_the_interpreter_batched(dtype):
    k = 256
    cx, x, w, y = quant_linear(dtype, k, 5, batch=2)
    raw = random_weight(dtype, 5, k, seed=3)
    xs = scaled_rows(6, k, seed=4).reshape(2, 3, k)
    got = []
    for rt in (CpuRuntime(), lm.NativeRuntime()):
        rt._load(cx)
        rt.set_storage(w, raw)
        rt.set_data(x, xs)
        rt.execute({"m": 3})
        got.append(np.asarray(rt.get(y)))
    check_product(got[0], xs, raw, dtype)
    check_product(got[1], xs, raw, dtype)


@pytest.mark.parametrize("dtype", [lm.dtype.q4_0, lm.dtype.q8_0], ids=str)
def test_the_last_row_of_a_slice_takes_the_int8_kernel(dtype):
    """A model's head reads its last position only (h[:, -1:], a view at offset (s - 1) * k):
    the round trip of that slice is recognised and multiplied in int8 (it used to be computed
    by its own kernels and the product widened to f32: a tied 1B head at a third of the
    bandwidth)."""
    k, n = 128, 45
    cx = lm.Graph()
    x = cx.tensor((1, "m", k), name="x")
    w = cx.tensor((n, k), dtype, name="w", parameter=True)
    wf = scheduled(w.to(lm.float32), [("inline", 1)])
    y = scheduled(quantize_activations(x[:, -1:]) @ wf.t(), [("quant_dot", 1)]).output()
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qdot4_{lm.dtype.name(dtype)}(K, " in rt.source
    raw = random_weight(dtype, n, k, seed=9)
    rt.set_storage(w, raw)
    for m in (1, 4, 11):
        xs = scaled_rows(m, k, seed=m).reshape(1, m, k)
        rt.set_data(x, xs)
        rt.execute({"m": m})
        check_product(rt.get(y), xs[:, -1:], raw, dtype)


def test_unfused_program_quantizes_in_its_own_kernels():
    cx, x, w, y = quant_linear(lm.dtype.q8_0, 64, 5, fused=False)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qdot4" not in rt.source and "lm_qgemv_" in rt.source
    raw = random_weight(lm.dtype.q8_0, 5, 64)
    rt.set_storage(w, raw)
    xs = scaled_rows(3, 64)
    rt.set_data(x, xs)
    rt.execute({"m": 3})
    check_product(rt.get(y), xs, raw, lm.dtype.q8_0)


def test_quant_dot_on_a_plain_matmul_lowers_as_by_default():
    """quant_dot on a matmul whose a is not quantized activations changes nothing."""
    cx = lm.Graph()
    x = cx.tensor((3, 64))
    w = cx.tensor((5, 64), lm.dtype.q4_0, parameter=True)
    y = scheduled(x @ scheduled(w.to(lm.float32), [("inline", 1)]).t(), [("quant_dot", 1)])
    y = y.output()
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qdot4" not in rt.source and "a=q8_0" not in rt._rt.program_text()


# ---- the rule and the search -------------------------------------------------------------------

CPU_RULES = _core.parse_rules(CpuRuntime().rewrite_rules(), "cpu.rules")


def test_the_rule_needs_quantized_activations_and_a_quantized_weight():
    cx = lm.Graph()
    w = cx.tensor((9, 256), lm.dtype.q4_k, parameter=True).to(lm.float32)
    x = cx.tensor((5, 256))
    (quantize_activations(x) @ w.t()).output()  # fires
    (x @ w.t()).output()  # f32 activations
    (quantize_activations(x) @ cx.tensor((9, 256)).t()).output()  # f32 weight
    (quantize_activations(x).abs() @ w.t()).output()  # not the round trip itself
    g = _core.EGraph()
    g.add_graph(cx._g)
    rule = next(r for r in CPU_RULES if r.name == "cpu-quant-int8")
    report = g.run([rule], _core.RunnerLimits())
    assert report.rules[0].applied == 1


def test_the_search_space_holds_the_int8_and_the_unfused_program():
    cx, _, _, _ = quant_linear(lm.dtype.q4_0, 128, 9, fused=False)
    cx.set_dim("m", 1)
    rt = CpuRuntime()
    space = _core.SearchSpace(cx._g, rt.rewrite_rules(), _core.RunnerLimits(), rt._rt)
    assert [("quant_dot", 1)] in space.schedules()
    texts = [p.text() for p in space.extract(64, {"m": 1})]
    assert any("(quant_dot 1)" in t for t in texts)
    assert any("(quant_dot 1)" not in t for t in texts)
    assert "(quant_dot 1)" in space.extract(1, {"m": 1})[0].text()  # the cost model's pick


def test_the_search_picks_a_correct_program():
    cx, x, w, y = quant_linear(lm.dtype.q8_0, 256, 33, fused=False)
    cx.set_dim("m", 1)
    raw = random_weight(lm.dtype.q8_0, 33, 256)
    cx.build_search_space(CpuRuntime)
    rt = cx.search(CpuRuntime(), 3, cache=False, progress=False)
    rt.set_storage(w, raw)
    xs = scaled_rows(1, 256)
    rt.set_data(x, xs)
    rt.execute(cx.dyn_map)
    check_product(rt.get(y), xs, raw, lm.dtype.q8_0)
    assert any("quant_dot" in str(c.choice) or "quant_dot" in str(c)
               for c in cx.last_search_report.candidates)


# ---- a GGUF Llama with quantized activations ---------------------------------------------------

@pytest.fixture(scope="module")
def llama_gguf(tmp_path_factory):
    """A tiny Llama (rows of 256, so every type keeps its blocks) written to GGUF in q8_0 and
    q4_k (Q4_K_M: Q4_K with Q6_K), and transformers' f32 model it was written from."""
    from luminal.models.llama_to_gguf import write_llama_gguf
    from test_quantize_cli import TINY
    from test_llama import make_hf_llama

    path = tmp_path_factory.mktemp("hf")
    hf = make_hf_llama(path, seed=16, **TINY)
    files = {}
    for kind in ("q8_0", "q4_k"):
        files[kind] = str(path / f"m.{kind}.gguf")
        write_llama_gguf(str(path), files[kind], kind)
    return hf, files


def stepped_logits(model, runtime, ids, greedy=0):
    """Next-token logits after each of ``ids``, fed one token a step (the decode program),
    then after each of ``greedy`` tokens of its own argmax (appended to ``ids``)."""
    from luminal.models.generation import CausalLMSession

    session = CausalLMSession(model, runtime)
    rows = [session.step(np.array([[t]], np.int32))[0, -1] for t in ids]
    for _ in range(greedy):
        ids.append(int(rows[-1].argmax()))
        rows.append(session.step(np.array([[ids[-1]]], np.int32))[0, -1])
    return np.stack(rows), session


@pytest.mark.parametrize("kind", ["q8_0", "q4_k"])
def test_gguf_llama_with_q8_activations_runs_the_int8_kernels(llama_gguf, kind):
    """The CPU's pick (the cost model's) multiplies integers and gives the interpreter's
    logits on the same graph, step by step on the interpreter's greedy tokens: the argmax
    wherever the interpreter's top two are apart, and every logit within the rounding of
    a sum (a value of x at a rounding boundary of its block may round the other way after a
    different summation order upstream: one step of that block's scale)."""
    from luminal.models.llama import LlamaForCausalLM

    _, files = llama_gguf
    ids = [3, 17, 99, 4, 60]
    native = LlamaForCausalLM.from_gguf(files[kind], max_context=32, activations="q8_0")
    assert native.activations == "q8_0"
    want, _ = stepped_logits(native, lm.NativeRuntime(), ids, greedy=8)
    model = LlamaForCausalLM.from_gguf(files[kind], max_context=32, activations="q8_0")
    got, session = stepped_logits(model, CpuRuntime(), ids)
    assert "lm_qdot4_" in session.runtime.source
    top2 = np.sort(want, -1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-2
    assert clear.sum() >= len(ids) // 2
    np.testing.assert_array_equal(got[clear].argmax(-1), want[clear].argmax(-1))
    np.testing.assert_allclose(got, want, atol=2e-2 * np.abs(want).max())


@pytest.mark.parametrize("kind,most_kl", [("q8_0", 2e-3), ("q4_k", 5e-2)])
def test_gguf_llama_with_q8_activations_stays_close_to_transformers(llama_gguf, kind, most_kl):
    """Mean KL(transformers f32 || luminal) of next-token distributions over 24 positions, q8
    activations on the CPU, beside f32 activations (the weights' own error): Q8_0 activations
    add little (the bounds are test_quantize_cli's, with q8_0's doubled)."""
    from test_quantize_cli import kl_and_top1

    hf, files = llama_gguf
    kl_q8, _ = kl_and_top1(hf, files[kind], 24, CpuRuntime())
    assert kl_q8 < most_kl, kl_q8


# ---- CUDA: the primitives' rendering (no int8 rule there) ---------------------------------------

def cuda_case(k=96, rows=5):
    cx = lm.Graph()
    x = cx.tensor((rows, k))
    y = quantize_activations(x).output()
    return cx, x, y, scaled_rows(rows, k, seed=11)


@pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_quantize_activations_compiles_with_nvrtc(arch):
    cx = cuda_case()[0]
    source = _core.cuda_render(cx._g, arch, _core.TuningChoice())
    assert _core.cuda_nvrtc_compile(source, arch, cuda.find_nvrtc()) > 0


@pytest.mark.skipif(cuda_emu.compiler() is None, reason="no C++ compiler")
def test_quantize_activations_in_the_cuda_emulator_is_gguf_round_trip(tmp_path):
    cx, x, y, xs = cuda_case()
    emu = cuda_emu.Emulated([(cx, {}, {})], str(tmp_path))
    (got,) = emu.run(0, {x: xs}, [y])
    np.testing.assert_array_equal(np.asarray(got).reshape(xs.shape), gguf_round_trip(xs))


# ---- the int8 dot products on every instruction set the C guards ---------------------------------

DOT_CHECK = r"""
#include <stdio.h>
#include <stdlib.h>
%s
int main(void) {
  srand(1);
  for (int t = 0; t < 20000; t++) {
    lm_vu32 u; lm_vs32 s, a;
    int most = t %% 3 == 0 ? 15 : (t %% 3 == 1 ? 63 : 127);  /* nibbles, Q6_K, the sign trick */
    for (int i = 0; i < 32; i++) {
      u[i] = rand() %% (most + 1);
      s[i] = (signed char)(rand() %% 255 - 127);  /* x: [-127, 127] */
      a[i] = (signed char)(rand() %% 256 - 128);  /* a Q8_0 weight: [-128, 127] */
    }
    lm_vq8 us = lm_dot_us(u, s), ss = lm_dot_ss(a, s);
    for (int i = 0; i < 8; i++) {
      int want_us = 0, want_ss = 0;
      for (int j = 4 * i; j < 4 * i + 4; j++) {
        want_us += (int)u[j] * (int)s[j];
        want_ss += (int)a[j] * (int)s[j];
      }
      if (us[i] != want_us || ss[i] != want_ss) return 1;
    }
  }
  puts("ok");
  return 0;
}
"""


@pytest.mark.parametrize("march", ["native", "x86-64-v3", "x86-64"])
def test_int8_dot_products_on_vnni_avx2_and_plain_c(march, tmp_path):
    """lm_dot_us and lm_dot_ss as the kernel's source has them, built for AVX-512 VNNI (this
    machine, where it has it), AVX2 (pmaddubsw + pmaddwd) and plain C, against int sums."""
    import platform
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("needs an x86-64 C compiler")
    cx, _, _, _ = quant_linear(lm.dtype.q8_0, 64, 3)
    rt = CpuRuntime()
    rt._load(cx)
    source = rt.source
    helpers = source[source.index("typedef unsigned char lm_vu32 "):
                     source.index("static void lm_q8_0_quantize_row")]
    (tmp_path / "dot.c").write_text(DOT_CHECK % helpers)
    exe = tmp_path / "dot"
    subprocess.run([cc, "-O2", f"-march={march}", "-Wno-psabi", str(tmp_path / "dot.c"), "-o",
                    str(exe)], check=True)
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout.strip() == "ok"


# ---- the int8 GEMM (rule cpu-quant-int8-gemm: quant_dot 1 with int8_gemm 1) --------------------

int8_gemm = pytest.mark.skipif(not (_core.cpu_has_int8_dot() and CpuRuntime().vector_width == 16
                                    and CpuRuntime().dot_products),
                               reason="needs AVX512-VNNI and 16-wide vectors")


INT8_GEMM = (("int8_gemm", 1),)

# int8_gemm 2: the same GEMM on AMX tiles (tdpbusd, codegen/c/quant_int8_amx.cc)
amx_int8 = pytest.mark.skipif(not (_core.cpu_has_amx_int8() and CpuRuntime().vector_width == 16
                                   and CpuRuntime().dot_products),
                              reason="needs AMX-INT8 and 16-wide vectors")
AMX_INT8 = (("int8_gemm", 2),)


@pytest.mark.parametrize("params,kernel", [
    pytest.param(INT8_GEMM, "lm_qmm_{}_", marks=int8_gemm, id="vnni"),
    pytest.param(AMX_INT8, "lm_qmm_amx_{}(", marks=amx_int8, id="amx")])
@pytest.mark.parametrize("dtype", KERNEL_TYPES, ids=str)
@pytest.mark.parametrize("blocks,n", [(1, 7), (3, 45), (5, 33)])
def test_int8_gemm_matches_gguf_for_every_m(params, kernel, dtype, blocks, n):
    """Odd N (not a multiple of the 32-column panel), K of 1, 3 and 5 blocks (past one k block
    of 256 for the 32-value types), M of one row, the GEMV's last, and past it: 9, a partial
    block of 4 rows (13), 128 and 513; for AMX's blocks of 16 and 32 rows also 16, 17 (the
    bottom tiles staged) and 32."""
    k = blocks * max(lm._core.block_values(dtype), 128)
    cx, x, w, y = quant_linear(dtype, k, n, params=params)
    rt = CpuRuntime()
    rt._load(cx)
    assert kernel.format(lm.dtype.name(dtype)) in rt.source
    check_every_m(rt, x, w, y, dtype, k, n, blocks, (1, 7, 8, 9, 13, 16, 17, 32, 128, 513))


def check_silu_product(rt, x, w, y, dtype, k, n, ms):
    """rt's SiLU of the product at each m of `ms` against torch on gguf-py's round trip and
    dequantized weight, within check_product's bound times SiLU's steepest slope (1.1)."""
    torch = pytest.importorskip("torch")
    raw = random_weight(dtype, n, k, seed=9)
    rt.set_storage(w, raw)
    wd = torch.from_numpy(dequantize(raw, dtype)).double()
    for m in ms:
        xs = scaled_rows(m, k, seed=m).reshape(1, m, k)
        rt.set_data(x, xs)
        rt.execute({"m": m})
        xq = torch.from_numpy(gguf_round_trip(xs.reshape(m, k))).double()
        want = torch.nn.functional.silu(xq @ wd.T)
        got = torch.from_numpy(np.asarray(rt.get(y), np.float64).reshape(m, n))
        bound = 1.1e-5 * (xq.abs() @ wd.abs().T) + 1e-30
        assert torch.all((got - want).abs() <= bound), (got - want).abs().max()


@int8_gemm
@pytest.mark.parametrize("epilogue", [False, True], ids=["own-kernel", "epilogue"])
@pytest.mark.parametrize("dtype", [lm.dtype.q4_0, lm.dtype.q4_k], ids=str)
def test_int8_gemm_of_a_batch_of_one_matches_torch(dtype, epilogue):
    """A model's (1, s, k) input (its batch loop folds into the rows) and the SiLU of the
    product, in a kernel of its own or in the int8 GEMM's store (epilogue 1)."""
    k, n = 512, 70
    params = INT8_GEMM + ((("epilogue", 1),) if epilogue else ())
    cx, x, w, y = quant_linear(dtype, k, n, batch=1, params=params, silu=True)
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qmm_{lm.dtype.name(dtype)}_" in rt.source
    check_silu_product(rt, x, w, y, dtype, k, n, (3, 37))


def test_int8_kernel_with_an_epilogue_matches_torch():
    """quant_dot 1 with epilogue 1: the SiLU in the int8 kernel's store. Its lowering used to
    inline x's round trip into the sum, once per path through the formula (it never ended)."""
    k, n = 256, 9
    cx, x, w, y = quant_linear(lm.dtype.q8_0, k, n, batch=1, params=(("epilogue", 1),), silu=True)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qdot4_q8_0(K, " in rt.source
    check_silu_product(rt, x, w, y, lm.dtype.q8_0, k, n, (2, 20))


ROW_GROUPS = INT8_GEMM + (("quant_rows", 4),)


# Block values of the types with row groups, and K in blocks: part of a chunk (8 blocks; Q4_K's
# 4), a chunk and one, two chunks.
GROUP_TYPES = {lm.dtype.q4_0: (32, (1, 3, 9, 16)), lm.dtype.q8_0: (32, (1, 3, 9, 16)),
               lm.dtype.q4_k: (256, (1, 3, 5, 8))}


@amx_int8
@pytest.mark.parametrize("dtype", list(GROUP_TYPES), ids=str)
def test_amx_int8_gemm_on_row_groups_with_silu_matches_torch(dtype):
    k, n = 512, 70
    params = AMX_INT8 + (("quant_rows", 4), ("epilogue", 1))
    cx, x, w, y = quant_linear(dtype, k, n, batch=1, params=params, silu=True)
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qmm_amx_{lm.dtype.name(dtype)}(" in rt.source
    check_silu_product(rt, x, w, y, dtype, k, n, (1, 3, 37, 64))


def test_amx_int8_gemm_is_refused_where_it_cannot_run():
    cx, *_ = quant_linear(lm.dtype.q8_0, 64, 9, params=AMX_INT8)
    with pytest.raises(lm.CompileError, match="int8_gemm 2 needs 16-wide vectors"):
        CpuRuntime(vector_width=8)._load(cx)
    cx, *_ = quant_linear(lm.dtype.q8_0, 64, 9, params=(("int8_gemm", 3),))
    with pytest.raises(lm.CompileError, match="int8_gemm must be 0, 1 or 2"):
        CpuRuntime()._load(cx)


@int8_gemm
@pytest.mark.parametrize("dtype", list(GROUP_TYPES), ids=str)
@pytest.mark.parametrize("case,n", [(0, 7), (1, 45), (2, 33), (3, 64)])
def test_row_groups_match_gguf_for_every_m(dtype, case, n):
    """W laid out in groups of 4 rows when its data is set (quant_rows 4): N of a partial last
    group (7, 45, 33), K of part of a chunk, a chunk and one block, and two chunks; M of the
    group GEMV (1 to 64: passes of four, two and one rows of x) and of the GEMM that packs from
    the groups (65 on)."""
    values, cases = GROUP_TYPES[dtype]
    blocks = cases[case]
    k = blocks * values
    cx, x, w, y = quant_linear(dtype, k, n, params=ROW_GROUPS)
    rt = CpuRuntime()
    rt._load(cx)
    name = lm.dtype.name(dtype)
    assert f"lm_qdotg_{name}(K, " in rt.source and f"lm_qpackg_{name}(" in rt.source
    check_every_m(rt, x, w, y, dtype, k, n, blocks, (1, 7, 8, 9, 13, 64, 65, 128, 513))
    assert rt._rt.memory().packed_input_bytes > 0


@int8_gemm
@pytest.mark.parametrize("dtype", [lm.dtype.q4_0, lm.dtype.q4_k], ids=str)
def test_row_groups_of_a_batch_of_one_with_silu_match_torch(dtype):
    k, n = 512, 70
    cx, x, w, y = quant_linear(dtype, k, n, batch=1, params=ROW_GROUPS, silu=True)
    rt = CpuRuntime()
    rt._load(cx)
    assert f"lm_qdotg_{lm.dtype.name(dtype)}(K, " in rt.source
    check_silu_product(rt, x, w, y, dtype, k, n, (1, 3, 37))


@int8_gemm
def test_a_type_without_row_groups_reads_its_blocks():
    """Q6_K has no row-group layout: quant_rows 4 leaves its weight as stored."""
    cx, x, w, y = quant_linear(lm.dtype.q6_k, 256, 9, params=ROW_GROUPS)
    rt = CpuRuntime()
    rt._load(cx)
    assert "lm_qdotg_" not in rt.source and "lm_qdot4_q6_k(K, " in rt.source
    check_every_m(rt, x, w, y, lm.dtype.q6_k, 256, 9, 1, (1, 9))


@int8_gemm
@pytest.mark.parametrize("rows", [0, 4], ids=["blocks", "row_groups"])
def test_a_tied_weight_is_gathered_as_stored_and_multiplied_in_its_layout(rows):
    """A tied embedding: the head's weight is gathered too. With quant_rows 4 the GEMV reads its
    row groups, laid out beside GGUF's blocks, which the gather reads; with 0 both read the
    blocks."""
    k, n = 128, 45
    cx = lm.Graph()
    x = cx.tensor(("m", k), name="x")
    ids = cx.tensor(("m",), lm.int32, name="ids")
    w = cx.tensor((n, k), lm.dtype.q4_0, name="w", parameter=True)
    wf = scheduled(w.to(lm.float32), [("inline", 1)])
    h = x + w.to(lm.float32)[ids]
    params = [("quant_dot", 1), ("int8_gemm", 1), ("quant_rows", rows)]
    y = scheduled(quantize_activations(h) @ wf.t(), params).output()
    rt = CpuRuntime()
    rt._load(cx)
    if rows:
        assert "lm_qdotg_q4_0(K, " in rt.source
    else:
        assert "lm_qdotg_" not in rt.source and "lm_qdot4_q4_0(K, " in rt.source
    raw = random_weight(lm.dtype.q4_0, n, k, seed=2)
    rt.set_storage(w, raw)
    use = rt._rt.memory()
    assert use.owned_input_bytes + use.borrowed_input_bytes == raw.nbytes
    assert (use.packed_input_bytes > 0) == bool(rows)
    for m in (1, 3):
        xs = scaled_rows(m, k, seed=3)
        index = np.array([0, 44, 7][:m], np.int32)
        rt.set_data(x, xs)
        rt.set_data(ids, index)
        rt.execute({"m": m})
        check_product(rt.get(y), xs + dequantize(raw, lm.dtype.q4_0)[index], raw, lm.dtype.q4_0)


def test_row_groups_need_the_int8_gemm():
    cx, x, w, y = quant_linear(lm.dtype.q4_0, 64, 5, params=(("quant_rows", 4),))
    with pytest.raises(lm.CompileError, match="quant_rows must be 0, or 4 with int8_gemm 1"):
        CpuRuntime()._load(cx)


def test_int8_gemm_is_refused_without_vnni_or_dot_products():
    cx, x, w, y = quant_linear(lm.dtype.q8_0, 64, 5, params=INT8_GEMM)
    with pytest.raises(lm.CompileError, match="int8_gemm 1 needs"):
        CpuRuntime(dot_products=False)._load(cx)


@int8_gemm
def test_a_q4_k_m_model_multiplies_its_q4_k_weights_in_int8(tmp_path):
    """A Q4_K_M file (Q6_K for the tied head and some attn_v/ffn_down) searched at a decode
    step: every Q4_K matmul reads its blocks in its own kernel, none widened to f32 first.
    (A pricing change once made the 1B shape's search widen them all; at this size it does
    not, so this checks the program, not that change.)"""
    from test_llama import make_hf_llama

    from luminal.models import CausalLMSession
    from luminal.models.llama import LlamaForCausalLM
    from luminal.models.llama_to_gguf import write_llama_gguf

    make_hf_llama(tmp_path / "hf", hidden_size=256, intermediate_size=512, num_hidden_layers=8,
                  num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                  vocab_size=512)
    write_llama_gguf(str(tmp_path / "hf"), str(tmp_path / "m.gguf"), "q4_k")
    model = LlamaForCausalLM.from_gguf(str(tmp_path / "m.gguf"), max_context=32)
    session = CausalLMSession(model, CpuRuntime(threads=2), search=1)
    kernels = session.runtime._rt.program_text().split("(kernel ")[1:]
    widened = [k for k in kernels if "(cast f32 from q4_k" in k and "(matmul" not in k]
    # 56 matrices, 8 of them Q6_K (attn_v and ffn_down of layers 0, 3, 6 and 7)
    assert not widened and sum("(load q4_k" in k for k in kernels) == 48
