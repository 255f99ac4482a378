"""The scalar semantics table (csrc/ir/scalar_ops.h) on edge values: against numpy and torch,
then against what the runtimes compute from it (the interpreter bit for bit; the C prelude that
CpuRuntime compiles bit for bit where the table is exact, within an ulp or two for log2, exp2
and sin), then constant folding and the lowering's constants. A census fails when an
elementwise op has no row. Random values and views are test_primitives.py's; composed ops on
special values are test_hl_ops_special_values.py's."""

import math

import numpy as np
import pytest
import torch

import luminal as lm
from luminal import _core
from luminal._core import DType, OpCategory, OpKind
import conftest

F32, F16, BF16, INT, BOOL = DType.F32, DType.F16, DType.BF16, DType.Int, DType.Bool
FLOATS = [F32, F16, BF16]
DTYPES = FLOATS + [INT, BOOL]
INF, NAN = math.inf, math.nan
F32_MAX = float(np.finfo(np.float32).max)

# Zeros, infinities, NaN, f32 denormals (2^-149 is the smallest), the f32 normal minimum,
# values that round in f16 (65520 overflows, 2^-25 ties to 0) and bf16, exp2's denormal and
# overflow edges, the i32 range edges (2^31 - 128 is the last f32 below 2^31), and beyond.
FLOAT_EDGES = [0.0, -0.0, INF, -INF, NAN, 2.0 ** -149, -(2.0 ** -149), 1e-40, -1e-40,
               2.0 ** -126, 1e-8, 2.0 ** -25, 2.0 ** -24, 1e-7, 0.1, 1 / 3, 0.5, -0.5, 1.0, -1.0,
               1.5, 2.5, -2.5, 3.0, -7.5, math.pi, 100.0, 2049.0, 65504.0, 65520.0, -65520.0,
               16777217.0, -126.5, -149.0, -150.0, 127.5, 128.0, 2.0 ** 31 - 128,
               -(2.0 ** 31 - 128), 2.0 ** 31, -(2.0 ** 31), 3e9, -3e9, 1e30, -1e30, F32_MAX,
               -F32_MAX]
INT_EDGES = [0, 1, -1, 2, -2, 3, -3, 7, -7, 46341, -46341, 65536, 2 ** 30, 123456789, -123456789,
             2 ** 31 - 1, -(2 ** 31), -(2 ** 31) + 1]

# The mature reference of each elementwise op. Unary: numpy in float64. Binary: numpy on
# float32/float16/int32/bool arrays, torch on bfloat16 tensors.
UNARY_REFERENCE = {
    OpKind.Log2: np.log2,
    OpKind.Exp2: np.exp2,
    OpKind.Sin: np.sin,
    OpKind.Sqrt: np.sqrt,
    OpKind.Recip: np.reciprocal,
}


def fmod(a, b):
    """C's fmod. bf16 goes through f32 (fmod is exact): torch's vectorized fmod gives NaN for
    tiny divisors."""
    if torch.is_tensor(a):
        return np.fmod(a.float().numpy(), b.float().numpy())
    return np.fmod(a, b)


BINARY_REFERENCE = {
    OpKind.Add: lambda a, b: a | b if a.dtype in (np.bool_, torch.bool) else a + b,
    OpKind.Mul: lambda a, b: a & b if a.dtype in (np.bool_, torch.bool) else a * b,
    OpKind.Mod: fmod,
    OpKind.LessThan: lambda a, b: a < b,
}
TRANSCENDENTAL = {OpKind.Log2, OpKind.Exp2, OpKind.Sin}


def ops_of(category):
    return [op for op in OpKind if _core.op_category(op) == category]


def binary_ops(dtype):
    return [op for op in BINARY_REFERENCE if not (op == OpKind.Mod and dtype == BOOL)]


def result_dtype(op, operand):
    return BOOL if op == OpKind.LessThan else operand


# ---- values and their encodings ---------------------------------------------------------------

def reference_round(x, dtype):
    """float64 values rounded to ``dtype`` by numpy and torch (f16 and bf16 through f32, as
    the table specifies), back in float64."""
    x = np.asarray(x, np.float64)
    if dtype == INT:
        finite = np.nan_to_num(x, nan=0.0, posinf=INF, neginf=-INF)
        return np.trunc(np.clip(finite, -(2.0 ** 31), 2.0 ** 31 - 1)) + 0.0  # -0 is 0
    if dtype == BOOL:
        return x.astype(bool).astype(np.float64)
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)
        if dtype == F16:
            return x32.astype(np.float16).astype(np.float64)
    if dtype == BF16:
        return torch.from_numpy(x32).to(torch.bfloat16).double().numpy()
    return x32.astype(np.float64)


def edges(dtype):
    """The edge values that ``dtype`` holds, as float64."""
    if dtype == INT:
        return np.array(INT_EDGES, np.float64)
    if dtype == BOOL:
        return np.array([0.0, 1.0])
    return reference_round(FLOAT_EDGES, dtype)


def pairs(dtype):
    """Every (a, b) of edges(dtype), as two flat arrays."""
    a, b = np.meshgrid(edges(dtype), edges(dtype), indexing="ij")
    return a.ravel(), b.ravel()


def framework_array(x, dtype):
    """float64 values of ``dtype`` as the array the references compute on."""
    if dtype == BF16:
        return torch.from_numpy(np.asarray(x, np.float64)).to(torch.bfloat16)
    numpy_type = {F32: np.float32, F16: np.float16, INT: np.int32, BOOL: np.bool_}[dtype]
    return np.asarray(x).astype(numpy_type)


def to_float64(array):
    if torch.is_tensor(array):
        return array.double().numpy()
    return np.asarray(array).astype(np.float64)


def storage(x, dtype):
    """float64 values of ``dtype`` in its storage encoding, for Runtime.set_storage."""
    if dtype == BF16:
        bits = np.asarray(x, np.float64).astype(np.float32).view(np.uint32)
        return (bits >> 16).astype(np.uint16)
    return np.asarray(x).astype(lm.dtype.storage(dtype))


def ordinal(x, dtype):
    """Each float's place among ``dtype``'s encodings: neighbours differ by 1, -0 is +0."""
    if dtype == F16:
        bits = np.asarray(x).astype(np.float16).view(np.int16).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFF), bits)
    bits = np.asarray(x).astype(np.float32).view(np.int32).astype(np.int64)
    if dtype == BF16:
        bits = bits >> 16
        return np.where(bits < 0, -(bits & 0x7FFF), bits)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def assert_matches(got, want, dtype, inputs, what, ulps=0):
    """got == want element by element: the same bits (NaN matching any NaN), or, with ``ulps``,
    at most that many encodings of ``dtype`` apart (infinities and NaN still exact)."""
    got = np.asarray(got, np.float64).ravel()
    want = np.asarray(want, np.float64).ravel()
    both_nan = np.isnan(got) & np.isnan(want)
    same = got == want
    if dtype in FLOATS:
        same &= np.signbit(got) == np.signbit(want)
    if ulps and dtype in FLOATS:
        finite = np.isfinite(got) & np.isfinite(want)
        with np.errstate(invalid="ignore"):
            near = finite & (np.abs(ordinal(got, dtype) - ordinal(want, dtype)) <= ulps)
        same |= near
    bad = np.flatnonzero(~(same | both_nan))
    shown = [(tuple(float(i[k]) for i in inputs), float(got[k]), float(want[k])) for k in bad[:5]]
    assert bad.size == 0, f"{what}: {bad.size} of {got.size} differ; (inputs, got, want): {shown}"


# ---- the table, element by element -------------------------------------------------------------

def table_unary(op, dtype, x):
    return [_core.round_to_dtype(_core.unary_eval(op, v), dtype) for v in x]


def table_binary(op, dtype, a, b):
    out = result_dtype(op, dtype)
    return [_core.round_to_dtype(_core.binary_eval(op, dtype, x, y), out) for x, y in zip(a, b)]


def table_cast(dst, x):
    return [_core.round_to_dtype(v, dst) for v in x]


# ---- census ------------------------------------------------------------------------------------

def test_every_elementwise_op_has_a_row():
    """A new unary or binary op in ops.def needs a reference here and a row in the table."""
    assert set(ops_of(OpCategory.Unary)) == set(UNARY_REFERENCE)
    assert set(ops_of(OpCategory.Binary)) == set(BINARY_REFERENCE)
    for op in UNARY_REFERENCE:
        _core.unary_eval(op, 1.0)
    for dtype in DTYPES:
        for op in binary_ops(dtype):
            _core.binary_eval(op, dtype, 1.0, 1.0)


@pytest.mark.parametrize("op", [op for op in OpKind if _core.op_category(op) != OpCategory.Unary],
                         ids=lambda o: o.name)
def test_ops_without_a_unary_row_are_refused(op):
    with pytest.raises(lm.InternalError, match="not a unary op"):
        _core.unary_eval(op, 1.0)


@pytest.mark.parametrize("op", [op for op in OpKind
                                if _core.op_category(op) != OpCategory.Binary],
                         ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [F32, INT], ids=lambda d: d.name)
def test_ops_without_a_binary_row_are_refused(op, dtype):
    with pytest.raises(lm.InternalError, match="not a binary op"):
        _core.binary_eval(op, dtype, 1.0, 1.0)


def test_categories_agree_with_arity():
    arity = {OpCategory.Source: 0, OpCategory.Unary: 1, OpCategory.Binary: 2,
             OpCategory.Reduce: 1, OpCategory.Sink: 1}
    for op in OpKind:
        category = _core.op_category(op)
        if category in arity:
            assert _core.op_arity(op) == arity[category], op


# ---- the table against numpy and torch ---------------------------------------------------------

def test_float_to_int_truncates_saturates_and_maps_nan_to_zero():
    values = FLOAT_EDGES + [2147483647.5, 2147483646.9, -2147483648.9, -2147483647.5, 1e300,
                            -1e300, 0.9999, -0.9999, 2.0 ** 53]
    got = [_core.float_to_int(v) for v in values]
    want = reference_round(values, INT)
    assert_matches(got, want, INT, [np.array(values)], "float_to_int")


def test_wrap_to_i32_is_twos_complement():
    values = [0, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32 + 5, -(2 ** 32) - 1, (2 ** 31 - 1) ** 2,
              (2 ** 31) ** 2, -(2 ** 62)]
    want = np.array(values, np.int64).astype(np.int32)
    assert [_core.wrap_to_i32(v) for v in values] == want.tolist()


# Doubles between encodings: ties to even (1 + 2^-24 -> 1, 1 + 3 * 2^-24 -> up), f32 overflow
# and underflow, f16 ties (2049 -> 2048, 2051 -> 2052, 3 * 2^-26 -> 2^-24), bf16 ties.
ROUNDING = FLOAT_EDGES + [1 + 2.0 ** -24, 1 + 3 * 2.0 ** -24, 1e39, -1e39, 1e-46, 2.0 ** -150,
                          3 * 2.0 ** -150, 2051.0, 3 * 2.0 ** -26, 65519.0, 1 + 2.0 ** -8,
                          1 + 3 * 2.0 ** -8, 0.2, -0.7, 1e-300]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_round_to_dtype(dtype):
    values = ROUNDING if dtype != INT else ROUNDING + [float(v) for v in INT_EDGES]
    got = [_core.round_to_dtype(v, dtype) for v in values]
    assert_matches(got, reference_round(values, dtype), dtype, [np.array(values)],
                   f"round_to_dtype {dtype.name}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(UNARY_REFERENCE), ids=lambda o: o.name)
def test_unary(op, dtype):
    x = edges(dtype)
    with np.errstate(all="ignore"):
        want = reference_round(UNARY_REFERENCE[op](x), dtype)
    ulps = 1 if op in TRANSCENDENTAL else 0  # numpy's libm against the core's, both in double
    assert_matches(table_unary(op, dtype, x), want, dtype, [x], f"{op.name} {dtype.name}", ulps)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_binary(dtype):
    a, b = pairs(dtype)
    for op in binary_ops(dtype):
        with np.errstate(all="ignore"):
            want = BINARY_REFERENCE[op](framework_array(a, dtype), framework_array(b, dtype))
        out = result_dtype(op, dtype)
        assert_matches(table_binary(op, dtype, a, b), to_float64(want), out, [a, b],
                       f"{op.name} {dtype.name}")


@pytest.mark.parametrize("src", DTYPES, ids=lambda d: d.name)
def test_cast(src):
    x = edges(src)
    for dst in DTYPES:
        assert_matches(table_cast(dst, x), reference_round(x, dst), dst, [x],
                       f"Cast {src.name} -> {dst.name}")


# ---- the runtimes against the table ------------------------------------------------------------
# The interpreter calls the table, so it must agree bit for bit; the C prelude is a separate
# implementation in f32 (exact for + * fmod < sqrt 1/x and every conversion).

RUNTIMES = {"native": lm.NativeRuntime, "cpu": conftest.CpuRuntime}
# Allowed distance from the table's double result for log2, exp2 and sin (glibc's log2f and
# sinf, the C renderer's polynomial exp2; 1 f32 ulp measured on x86-64, 2 leaves room for FMA
# contraction elsewhere), in encodings of the result dtype.
CPU_ULPS = {F32: 2, F16: 1, BF16: 1}


def run_on(runtime, feeds, build):
    """Runs build(*inputs) on ``runtime``; ``feeds`` is [(float64 values, dtype)] per input.
    Returns each output as float64."""
    cx = lm.Graph()
    inputs = [cx.tensor(len(values), dtype) for values, dtype in feeds]
    outputs = build(*inputs)
    for t in outputs:
        t.output()
    rt = cx.search(RUNTIMES[runtime](), 1)
    for t, (values, dtype) in zip(inputs, feeds):
        rt.set_storage(t, storage(values, dtype))
    rt.execute(cx.dyn_map)
    return [np.asarray(rt.get(t)).astype(np.float64) for t in outputs]


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_unary_on_runtime(runtime, dtype):
    x = edges(dtype)
    ops = list(UNARY_REFERENCE)
    got = run_on(runtime, [(x, dtype)], lambda t: [t._unary(op) for op in ops])
    for op, out in zip(ops, got):
        ulps = CPU_ULPS[dtype] if runtime == "cpu" and op in TRANSCENDENTAL else 0
        assert_matches(out, table_unary(op, dtype, x), dtype, [x],
                       f"{op.name} {dtype.name} on {runtime}", ulps)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_binary_on_runtime(runtime, dtype):
    a, b = pairs(dtype)
    ops = binary_ops(dtype)
    got = run_on(runtime, [(a, dtype), (b, dtype)], lambda s, t: [s._binary(op, t) for op in ops])
    for op, out in zip(ops, got):
        assert_matches(out, table_binary(op, dtype, a, b), result_dtype(op, dtype), [a, b],
                       f"{op.name} {dtype.name} on {runtime}")


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("src", DTYPES, ids=lambda d: d.name)
def test_cast_on_runtime(runtime, src):
    x = edges(src)
    targets = [dst for dst in DTYPES if dst != src]
    got = run_on(runtime, [(x, src)], lambda t: [t._cast(dst) for dst in targets])
    for dst, out in zip(targets, got):
        assert_matches(out, table_cast(dst, x), dst, [x], f"Cast {src.name} -> {dst.name} on "
                       f"{runtime}")


# ---- constant folding and the lowering's constants ---------------------------------------------

# A few values per dtype, each one that rounds or saturates when stored (a Bool constant of 0.5
# or NaN is true, as the interpreter stores it).
CONSTANTS = {
    F32: [NAN, -INF, -0.0, 2.0 ** -149, 0.1, 1e39, 2.5, 3e9],
    F16: [NAN, -0.0, 65520.0, 1e-8, 6e-8, 0.1, -2.5],
    BF16: [NAN, -0.0, 1e-40, 0.1, F32_MAX, -2.5],
    INT: [3e9, -3e9, 2.7, -2.7, NAN, 7.0, -(2.0 ** 31)],
    BOOL: [0.0, 0.5, NAN, 1.0],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_folding_agrees_with_the_table(dtype):
    """Every unary, binary and Cast of constants folds (the graph is only constants) to what
    the table gives for the constants' stored values."""
    values = CONSTANTS[dtype]
    stored = table_cast(dtype, values)
    cases = []  # (want, build)
    for op in UNARY_REFERENCE if dtype in FLOATS else []:
        for v, s in zip(values, stored):
            cases.append((_core.round_to_dtype(_core.unary_eval(op, s), dtype),
                          lambda cx, op=op, v=v: cx.constant(v, dtype)._unary(op)))
    for op in binary_ops(dtype):
        for v, s in zip(values, stored):
            for w, t in zip(values, stored):
                want = table_binary(op, dtype, [s], [t])[0]
                cases.append((want, lambda cx, op=op, v=v, w=w:
                              cx.constant(v, dtype)._binary(op, cx.constant(w, dtype))))
    for dst in [d for d in DTYPES if d != dtype]:
        for v, s in zip(values, stored):
            cases.append((_core.round_to_dtype(s, dst),
                          lambda cx, v=v, dst=dst: cx.constant(v, dtype)._cast(dst)))
    cx = lm.Graph()
    outputs = [build(cx).output() for _, build in cases]
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.execute(cx.dyn_map)
    for (want, _), t in zip(cases, outputs):
        got = np.asarray(rt.get(t)).astype(np.float64)
        assert_matches(got, [want], t.dtype, [np.array([0.0])], f"folded {t!r}")
    folded = _core.EGraph()
    roots = folded.add_graph(cx._g)
    rule = [r for r in _core.load_rules() if r.name == "fold-uniform"]
    folded.run(rule, _core.RunnerLimits())
    unfolded = [r for r in roots if not any("Constant" in n for n in folded.class_nodes(r))]
    assert not unfolded, "some results did not fold to a constant"


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_constants_as_lowered(runtime, dtype):
    """x * c for each constant c: the lowering writes c as the value the interpreter stores."""
    x = {BOOL: np.array([1.0, 0.0]), INT: np.array([1.0, -1.0, 3.0])}.get(
        dtype, reference_round([1.0, -1.0, 0.5], dtype))
    values = CONSTANTS[dtype]
    got = run_on(runtime, [(x, dtype)],
                 lambda t: [t._binary(OpKind.Mul, t.graph.constant(v, dtype).expand(len(x)))
                            for v in values])
    for v, out in zip(values, got):
        c = np.full(len(x), _core.round_to_dtype(v, dtype))
        assert_matches(out, table_binary(OpKind.Mul, dtype, x, c), dtype, [x, c],
                       f"x * constant {v} {dtype.name} on {runtime}")
