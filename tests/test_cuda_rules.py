"""CUDA lowering rules (csrc/runtime/rules/cuda*.rules), read through luminal.cuda with no GPU:
every rule as "this => that", the half-precision condition, the matmul rules by dtype, one
program per schedule, node schedules picking each kernel's mapping, and bad schedules refused."""

import pytest

import luminal as lm
from luminal import _core, cuda

from matmul_cases import scheduled
from test_runtime_rules import matmul, rewrites, saturate, schedule_of


CUDA_RULES = _core.parse_rules(cuda.rewrite_rules("sm_90"), "cuda.rules")
CUDA_RULE_NAMES = [r.name for r in CUDA_RULES]


def cuda_this(cx, rule, dtype=None):
    """The node a CUDA rule rewrites, in a small graph: a sum, a max, an f32 matmul, or the f32
    sum of a half matmul's products (what hl_ops' matmul builds for f16/bf16)."""
    lhs = rule.text.split("(schedule")[0]
    if rule.name == "cuda-widen-cast":  # a bf16 weight read by an f32 matmul
        return cx.tensor((9, 7), dtype or lm.bfloat16).to(lm.float32)
    if rule.name == "cuda-attention":  # softmax weights times values
        return cx.tensor((5, 7)).softmax(-1) @ cx.tensor((7, 9))
    if "Cast" in lhs:
        a = cx.tensor((5, 7), dtype or lm.bfloat16)
        b = cx.tensor((7, 9), dtype or lm.bfloat16)
        return (a.unsqueeze(-1) * b.unsqueeze(-3)).to(lm.float32).sum(-2)
    if "Mul" in lhs:
        return matmul(cx)[2]
    x = cx.tensor((6, 40), dtype or lm.float32)
    return x.amax(-1) if "MaxReduce" in lhs else x.sum(-1)


def test_cuda_offers_reductions_and_matmuls_and_tensor_cores_from_sm_80():
    assert all(schedule_of(r) for r in CUDA_RULES)
    params = {n for r in CUDA_RULES for n, _ in schedule_of(r)}
    assert params == {"cuda_reduce", "cuda_vector", "cuda_matmul", "cuda_gemv_split", "inline",
                      "epilogue", "row", "attention"}
    older = [r.name for r in _core.parse_rules(cuda.rewrite_rules("sm_75"), "cuda.rules")]
    sm80 = [r.name for r in _core.parse_rules(cuda.rewrite_rules("sm_80"), "cuda.rules")]
    assert "cuda-matmul-tensor-cores" in CUDA_RULE_NAMES and "cuda-matmul-tensor-cores" in sm80
    assert set(CUDA_RULE_NAMES) - set(older) == {"cuda-matmul-tensor-cores"}
    with pytest.raises(ValueError, match="sm_XX"):
        cuda.rewrite_rules("gfx90a")


@pytest.mark.parametrize("name", CUDA_RULE_NAMES)
def test_cuda_rule_this_gives_that(name):
    rule = next(r for r in CUDA_RULES if r.name == name)
    assert rewrites([rule], cuda_this(lm.Graph(), rule), schedule_of(rule))


@pytest.mark.parametrize("dtype,fires", [(lm.float32, False), (lm.float16, True),
                                         (lm.bfloat16, True)], ids=str)
def test_half_condition_this_gives_that(dtype, fires):
    """(half ?x): f16 and bf16 only. A rule under it, on a max of each dtype."""
    rule = _core.parse_rules("(rule half-only (MaxReduce:r ?x) (schedule ((cuda_block 64))"
                             " (MaxReduce:r ?x)) (if (half ?x)))", "test")
    x = lm.Graph().tensor((4, 8), dtype)
    assert rewrites(rule, x.amax(-1), [("cuda_block", 64)]) == fires


@pytest.mark.parametrize("dtype", [lm.float32, lm.float16, lm.bfloat16], ids=str)
def test_cuda_matmul_rules_by_dtype(dtype):
    """An f32 matmul takes the f32 forms; an f16/bf16 one the half forms and tensor cores."""
    cx = lm.Graph()
    (cx.tensor((5, 7), dtype) @ cx.tensor((7, 9), dtype)).output()
    _, _, report = saturate(cx, CUDA_RULES)
    applied = {r.name for r in report.rules if r.applied > 0}
    half = {"cuda-half-matmul-as-reduction", "cuda-half-matmul-tiled",
            "cuda-matmul-tensor-cores", "cuda-half-matmul-gemv",
            "cuda-half-matmul-gemv-split-k"}
    f32 = {"cuda-matmul-as-reduction", "cuda-matmul-tiled", "cuda-matmul-gemv",
           "cuda-matmul-gemv-split-k"}
    assert applied & (half | f32) == (f32 if dtype == lm.float32 else half)
    assert {"cuda-sum-serial", "cuda-sum-warp", "cuda-sum-split"} <= applied


@pytest.mark.parametrize("build", [
    lambda cx, x: (x * x).sum(-1),
    lambda cx, x: (x * cx.tensor((6, 1)).expand(6, 8)).sum(-1),
    lambda cx, x: x.amax(-1),
], ids=["sum-of-squares", "broadcast-one-side", "max"])
def test_cuda_matmul_rules_skip_reductions_that_are_not_matmuls(build):
    cx = lm.Graph()
    build(cx, cx.tensor((6, 8))).output()
    _, _, report = saturate(cx, CUDA_RULES)
    applied = {r.name for r in report.rules if r.applied > 0}
    assert applied and not any("matmul" in n for n in applied), applied


def test_cuda_search_space_has_one_program_per_schedule():
    """The cost model's pick first (no schedule but the reductions' row fusion: the renderer's
    automatic choice), then a program per schedule the rules attached, each using it wherever
    it applies."""
    cx = lm.Graph()
    x = cx.tensor((4, 64), lm.bfloat16)
    a, b = cx.tensor((32, 16), lm.bfloat16), cx.tensor((16, 24), lm.bfloat16)
    e = (x - x.amax(-1, keepdim=True)).exp()
    (e / e.sum(-1, keepdim=True)).output()
    (a @ b).output()
    (cx.tensor((4, 8)).softmax(-1) @ cx.tensor((8, 5))).output()  # attention's weights @ v
    space = _core.SearchSpace(cx._g, cuda.rewrite_rules("sm_90"), _core.RunnerLimits())
    schedules = {"(schedule " + " ".join(f"({n} {v})" for n, v in schedule_of(r)) + ")"
                 for r in CUDA_RULES}
    programs = space.extract(len(schedules) + 4, {})
    assert "(schedule" not in programs[0].text().replace("(schedule (row 1))", "")
    for s in schedules:
        assert any(s in p.text() for p in programs[1:len(schedules) + 1]), s


def test_node_schedules_pick_each_kernels_mapping():
    """Two reductions of one program with their own schedules render their own mappings; a
    program-wide choice yields to a node's schedule, fixed params override both."""
    cx = lm.Graph()
    x = cx.tensor((8, 256))
    m = scheduled(x.amax(-1, keepdim=True), [("cuda_reduce", 1)])
    e = (x - m).exp()
    s = scheduled(e.sum(-1, keepdim=True), [("cuda_reduce", 3)])
    (e / s).output()
    src = cuda.render(cx, "sm_90", {"cuda_reduce": 2})
    # k0 max, then the sum (with the exp recomputed in it, a cheap node), then the divide
    kernels = src.split("\n/* k")[1:]
    k_max, k_sum = kernels[0], kernels[-2]
    assert "lm_fmax_nan" in k_max and "exp2f" in k_sum and "lm_part" in k_sum
    assert "lm_warp" not in k_max and "8 warps split the reduction" in k_sum
    src = cuda.render(cx, "sm_90", fixed={"cuda_reduce": 2})
    assert src.count("a warp per output, shuffle reduction") == 2


@pytest.mark.parametrize("schedule,message", [
    ([("cuda_tile", 4)], "unknown schedule parameter 'cuda_tile' in node %"),
    ([("tile_m", 4)], "unknown schedule parameter 'tile_m'"),
    ([("cuda_reduce", 4)], "cuda_reduce = 4 in node %.* out of range"),
    ([("cuda_matmul", -1)], "cuda_matmul = -1"),
    ([("cuda_block", 48)], "multiple of 32"),
])
def test_cuda_refuses_bad_node_schedules(schedule, message):
    cx = lm.Graph()
    _, _, y = matmul(cx)
    scheduled(y, schedule).output()
    with pytest.raises(lm.CompileError, match=message):
        cuda.render(cx, "sm_90")


def test_cuda_refuses_bad_fixed_params():
    cx = lm.Graph()
    matmul(cx)[2].output()
    with pytest.raises(lm.CompileError, match="cuda_vector = 3 in tuning choice"):
        cuda.render(cx, "sm_90", fixed={"cuda_vector": 3})
    with pytest.raises(lm.CompileError, match="unknown schedule parameter 'cuda_x'"):
        cuda.render(cx, "sm_90", {"cuda_x": 1})
