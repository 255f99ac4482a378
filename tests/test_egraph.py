"""The e-graph (csrc/egraph): every rule as "this => that", the shape/dtype guard, the runner's
limits and stop reasons, k-best extraction, program text, and random graphs whose every
extracted program must compute what the graph as written computes (on NativeRuntime)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import luminal as lm
from luminal import _core

ALL_RULES = _core.load_rules()
RULE_NAMES = [r.name for r in ALL_RULES]


def rules_named(*names):
    chosen = [r for r in ALL_RULES if r.name in names]
    assert len(chosen) == len(names), names
    return chosen


def limits(**kw):
    lim = _core.RunnerLimits()
    for k, v in kw.items():
        setattr(lim, k, v)
    return lim


def saturate(cx, rules, **kw):
    g = _core.EGraph()
    roots = g.add_graph(cx._g)
    report = g.run(rules, limits(**kw))
    return g, roots, report


# ---- this => that, one case per rule ---------------------------------------------------------
# Each case builds (this, that) in a fresh graph; running only the named rule must put them in
# one e-class.

def f32(cx, shape=(2, 3), name=None):
    return cx.tensor(shape, name=name)


def case_add_comm(cx):
    a, b = f32(cx), f32(cx)
    return a + b, b + a


def case_mul_comm(cx):
    a, b = f32(cx), f32(cx)
    return a * b, b * a


def i32(cx, shape=(2, 3)):
    return cx.tensor(shape, dtype=lm.int32)


def case_add_assoc(cx):
    a, b, c = i32(cx), i32(cx), i32(cx)
    return (a + b) + c, a + (b + c)


def case_mul_assoc(cx):
    a, b, c = i32(cx), i32(cx), i32(cx)
    return (a * b) * c, a * (b * c)


def case_mul_add_factor(cx):
    a, b, c = i32(cx), i32(cx), i32(cx)
    return a * c + b * c, (a + b) * c


def case_exp2_log2(cx):
    x = f32(cx).exp2()  # provably >= 0
    return x.log2().exp2(), x


def case_recip_recip(cx):
    x = f32(cx)
    return x.reciprocal().reciprocal(), x


def case_mul_one(cx):
    x = f32(cx)
    return x * 1.0, x


def case_add_zero(cx):
    x = f32(cx)
    return x + 0.0, x


def case_mul_zero_int(cx):
    i = cx.tensor((2, 3), dtype=lm.int32)
    return i * 0, cx.constant(0, lm.int32).expand(2, 3).contiguous()


def case_fold_uniform(cx):
    two = cx.constant(2.0)
    return (two + 3.0).sqrt(), cx.constant(5.0 ** 0.5)


def case_cast_same_identity(cx):
    x = f32(cx)
    return x.contiguous(), x


def case_hoist(op):
    def case(cx):
        x = f32(cx, (2, 1)).exp2()  # positive: log2 and sqrt of it are ordinary
        return x.expand(2, 3)._unary(op), x._unary(op).expand(2, 3).contiguous()
    return case


# The ops of each op class a rule may name ("(Unary:f ?x)"): such a rule has a case per op, named
# "rule:Op", so an op added to ops.def is covered without a new case.
UNARY_OPS = [op for op in _core.OpKind.__members__.values()
             if _core.op_category(op) == _core.OpCategory.Unary]


def case_scale_into_matmul(cx):
    a, b = f32(cx, (4, 8)), f32(cx, (8, 5))
    return (a @ b) * 0.25, a @ (b * 0.25)


CASES = {
    "add-comm": case_add_comm, "mul-comm": case_mul_comm, "add-assoc": case_add_assoc,
    "mul-assoc": case_mul_assoc, "mul-add-factor": case_mul_add_factor,
    "exp2-log2": case_exp2_log2, "recip-recip": case_recip_recip, "mul-one": case_mul_one,
    "add-zero": case_add_zero, "mul-zero-int": case_mul_zero_int,
    "fold-uniform": case_fold_uniform, "cast-same-identity": case_cast_same_identity,
    "scale-into-matmul": case_scale_into_matmul,
    **{f"hoist-unary:{op.name}": case_hoist(op) for op in UNARY_OPS},
}


def rule_of(case_name):
    return case_name.split(":")[0]


def test_every_builtin_rule_has_a_case():
    assert sorted({rule_of(c) for c in CASES}) == sorted(RULE_NAMES)
    assert len(UNARY_OPS) == 5


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_this_gives_that(name):
    cx = lm.Graph()
    this, that = CASES[name](cx)
    this.output()
    that.output()
    g, (r_this, r_that), _ = saturate(cx, [])
    assert not g.equivalent(r_this, r_that), "the case must not hold before the rule runs"
    g, (r_this, r_that), report = saturate(cx, rules_named(rule_of(name)))
    assert g.equivalent(r_this, r_that), str(g)
    assert report.rejected_merges == 0


def test_every_rule_fires_somewhere():
    cx = lm.Graph()
    for name in sorted(CASES):
        for t in CASES[name](cx):
            t.output()
    _, _, report = saturate(cx, ALL_RULES)
    applied = {r.name: r.applied for r in report.rules}
    assert all(applied[n] > 0 for n in RULE_NAMES), applied


@pytest.mark.parametrize("rule", ["scale-into-matmul", "float-scale-into-matmul"])
def test_a_scale_is_not_folded_into_a_matmul_read_elsewhere_too(rule):
    """A SiLU of a matmul reads it twice (x, and sigmoid's -x): folding the -1 into the
    matmul's operand would compute it twice, so the fold is offered only where the scale is
    the matmul's one reader."""
    from luminal import _core

    opt_in = dict(_core.opt_in_rule_files())["float_reassoc.rules"]
    rules = [r for r in ALL_RULES + _core.parse_rules(opt_in, "opt_in") if r.name == rule]
    for read_twice in (False, True):
        cx = lm.Graph()
        a, b = f32(cx, (4, 8)), f32(cx, (8, 5))
        y = a @ b
        (y * -1.0).output()
        (a @ (b * -1.0)).output()
        if read_twice:
            y.exp().output()
        g, roots, _ = saturate(cx, rules)
        assert g.equivalent(roots[0], roots[1]) == (not read_twice)


def test_float_reassociation_is_not_a_builtin_rule():
    cx = lm.Graph()
    x = f32(cx)
    ((x + 1.0) + (-1.0)).output()  # log1p's trick: must not become x + 0 => x
    x.output()
    g, (r0, r1), _ = saturate(cx, ALL_RULES)
    assert not g.equivalent(r0, r1)


def test_unsafe_cancellations_do_not_fire():
    cx = lm.Graph()
    x = f32(cx)  # may be negative: exp2(log2 x) is NaN there, not x
    a = x.log2().exp2().output()
    b = (x * 0.0).output()  # NaN * 0 and inf * 0 are NaN: no x*0 => 0 for floats
    zero = cx.constant(0.0).expand(2, 3).contiguous().output()
    x.output()
    g, roots, _ = saturate(cx, ALL_RULES)
    assert not g.equivalent(roots[0], roots[3])
    assert not g.equivalent(roots[1], roots[2])


def test_rules_cannot_merge_different_shapes_or_dtypes():
    bad = _core.parse_rules("(rule drop-sum (SumReduce:a ?x) ?x)\n"
                            "(rule drop-cast (Cast:t ?x) ?x (if (identity ?x)))", "test")
    cx = lm.Graph()
    x = f32(cx)
    s = x.sum(1).output()
    h = x.half().output()
    x.output()
    g, roots, report = saturate(cx, bad)
    assert report.rejected_merges >= 2
    assert len({g.find(r) for r in roots}) == 3


@pytest.mark.parametrize("text, message", [
    ("(rule r (Frob ?x) ?x)", "unknown op"),
    ("(rule r (Add ?x ?y) ?z)", "not bound"),
    ("(rule r (Add ?x) ?x)", "takes 2 operands"),
    ("(rule r (SumReduce ?x) (SumReduce ?x))", "needs a label"),
    ("(rule r (Add ?x ?y) ?x (if (shiny ?x)))", "unknown condition"),
    ("(rule r (Add ?x ?y)", "missing '\\)'"),
    ("(rule a (Add ?x ?y) ?x)\n(rule a (Mul ?x ?y) ?x)", "used twice"),
    ("(rule r (Unary ?x) (Unary ?x))", "needs a label"),
    ("(rule r (Unary:f ?x ?y) ?x)", "takes 1 operands"),
    ("(rule r (Unary:f ?x) (Unary:g ?x))", "not bound"),
    ("(rule r (Unary:f ?x) (Binary:f ?x ?x))", "does not name a left-hand Binary"),
    ("(rule r (Add:f ?x ?y) (Unary:f ?x))", "does not name a left-hand Unary"),
    ("(rule r (Unary:f (Unary:f ?x)) ?x)", None),
])
def test_bad_rule_text_is_refused(text, message):
    if message is None:  # a label bound twice on the left by one class is one op: accepted
        _core.load_rules(text, "test rules")
        return
    with pytest.raises(lm.CompileError, match=message):
        _core.load_rules(text, "test rules")


def test_an_op_class_binds_the_op_it_matched():
    """(Unary:f (Unary:f ?x)) matches exp2(exp2 x) but not exp2(sin x); the right side builds
    the op the left matched, here folding f(f(x)) into f(x) for a test rule."""
    rule = _core.load_rules("(rule twice (Unary:f (Unary:f ?x)) (Unary:f ?x))", "test rules")
    cx = lm.Graph()
    x = f32(cx)
    same, mixed = x.exp2().exp2(), x.sin().exp2()
    for t in (same, mixed, x.exp2(), x.sin().sin(), x.sin()):
        t.output()
    g, roots, report = saturate(cx, rule)
    assert g.equivalent(roots[0], roots[2])      # exp2(exp2 x) == exp2(x) by the rule
    assert not g.equivalent(roots[1], roots[2])  # exp2(sin x): two ops, no match
    assert g.equivalent(roots[3], roots[4])      # sin(sin x) == sin(x)
    assert not g.equivalent(roots[0], roots[4])


def test_rules_are_embedded_with_unique_names():
    files = dict(_core.builtin_rule_files())
    assert {"algebra.rules", "cancel.rules", "fold.rules", "views.rules"} <= set(files)
    assert len(set(RULE_NAMES)) == len(RULE_NAMES)


def test_common_subexpressions_become_one_class():
    cx = lm.Graph()
    a, b = f32(cx), f32(cx)
    u = ((a * b).exp2() + 1.0).output()
    v = ((b * a).exp2() + 1.0).output()  # equal once a*b == b*a: congruence does the rest
    g, (ru, rv), _ = saturate(cx, rules_named("mul-comm"))
    assert g.equivalent(ru, rv)


# ---- the runner's limits -------------------------------------------------------------------

def add_chain(n):
    cx = lm.Graph()
    xs = [i32(cx, (2,)) for _ in range(n)]
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    total.output()
    return cx


def test_small_graph_saturates():
    _, _, report = saturate(add_chain(3), ALL_RULES)
    assert report.stop == _core.StopReason.Saturated


def test_explosion_stops_at_the_node_limit():
    _, _, report = saturate(add_chain(12), rules_named("add-comm", "add-assoc"), nodes=3000,
                            seconds=30, iterations=100, match_limit=10 ** 9)
    assert report.stop == _core.StopReason.NodeLimit
    assert report.nodes < 3000 * 4  # stops during the iteration that crosses the limit


def test_explosion_stops_at_the_time_limit():
    import time
    t0 = time.perf_counter()
    _, _, report = saturate(add_chain(14), rules_named("add-comm", "add-assoc"), nodes=10 ** 9,
                            seconds=0.3, iterations=1000, match_limit=10 ** 9)
    assert report.stop == _core.StopReason.TimeLimit
    assert time.perf_counter() - t0 < 3.0


def test_explosion_stops_at_the_iteration_limit():
    _, _, report = saturate(add_chain(10), rules_named("add-comm", "add-assoc"), iterations=2)
    assert report.stop == _core.StopReason.IterationLimit
    assert report.iterations == 2


def test_backoff_bans_the_explosive_rule_but_not_the_others():
    cx = add_chain(10)
    _, _, report = saturate(cx, rules_named("add-comm", "add-assoc", "mul-one"), match_limit=20,
                            nodes=10 ** 6, seconds=10, iterations=8)
    stats = {r.name: r for r in report.rules}
    assert stats["add-assoc"].bans > 0 or stats["add-comm"].bans > 0
    assert stats["mul-one"].bans == 0


# ---- extraction and program text ------------------------------------------------------------

def test_extraction_prefers_the_cheaper_program_and_handles_cycles():
    cx = lm.Graph()
    x = f32(cx)
    ((x * 1.0).reciprocal().reciprocal() + 0.0).output()
    space = _core.SearchSpace(cx._g, "", limits())
    (best,) = space.extract(1, {})
    ops = [n for n in best.text().splitlines() if n.startswith(" (")]
    assert not any(k in best.text() for k in ("Mul", "Recip", "Add")), best.text()
    assert len(ops) == 2  # the input and the output


FLOAT_REASSOCIATION = """
(rule float-add-assoc (Add (Add ?a ?b) ?c) (Add ?a (Add ?b ?c)) (if (float ?a)))
(rule float-mul-add-factor (Add (Mul ?a ?c) (Mul ?b ?c)) (Mul (Add ?a ?b) ?c) (if (float ?a)))
"""


def test_k_best_programs_are_distinct_and_ordered():
    cx = lm.Graph()
    a, b, c = f32(cx), f32(cx), f32(cx)
    (a * c + b * c + a).output()
    space = _core.SearchSpace(cx._g, FLOAT_REASSOCIATION, limits())
    programs = space.extract(6, {})
    texts = [p.text() for p in programs]
    assert len(programs) > 1
    assert len(set(texts)) == len(texts)
    costs = [p.cost for p in programs]
    assert costs == sorted(costs)


def test_program_text_round_trips_and_is_canonical():
    def build(order, names):
        cx = lm.Graph()
        ins = {k: cx.tensor((2, "s"), name=n) for k, n in zip(order, names)}
        a, b = (ins[k] for k in sorted(ins))
        ((a * b).sum(1) + 1.0).output()
        return cx
    g1 = build(["a", "b"], ["p", "q"])
    g2 = build(["a", "b"], ["first", "second"])
    t1 = _core.identity_program(g1._g).text()
    assert t1 == _core.identity_program(g2._g).text()
    back = _core.parse_program(t1, g1._g)
    assert back.text() == t1


@pytest.mark.parametrize("bad", ["", "(program (Frob 1))", "(program (Input 0 ({3}) f32))",
                                 "(program\n (Input 0 ({2}, {s}) f32))\n", "(program (Add"])
def test_bad_program_text_is_refused(bad):
    cx = lm.Graph()
    f32(cx, (2, "s")).exp2().output()
    with pytest.raises(lm.LuminalError):
        _core.parse_program(bad, cx._g)


@pytest.mark.parametrize("text", ["s*2 + 1", "-s//4", "max(s, 3) - min(t, 2)",
                                  "(s + 1)%3*t", "s < t", "s == 2 and t != 3 or s < 1"])
def test_parse_expr_reads_what_to_string_writes(text):
    e = _core.parse_expr(text)
    assert _core.parse_expr(str(e)) == e
    env = {"s": 7, "t": 5}
    py = eval(text.replace("//", "//"), {"min": min, "max": max}, env)
    assert e.eval(env) == int(py)


# ---- random graphs --------------------------------------------------------------------------

SHAPE = (2, 3)


@st.composite
def random_graph(draw):
    """A small random HLIR graph with the shapes (2, 3) and the ops the rules look for."""
    cx = lm.Graph()
    pool = [cx.tensor(SHAPE), cx.tensor(SHAPE), cx.tensor(SHAPE).exp2()]
    ints = [cx.tensor(SHAPE, dtype=lm.int32)]
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["add", "mul", "const", "unary", "cancel", "int",
                                     "reduce", "copy"]))
        a = draw(st.sampled_from(pool))
        b = draw(st.sampled_from(pool))
        if kind == "add":
            pool.append(a + b)
        elif kind == "mul":
            pool.append(a * b)
        elif kind == "const":
            c = draw(st.sampled_from([0.0, 1.0, 2.0, -0.5]))
            pool.append(a * c if draw(st.booleans()) else a + c)
        elif kind == "unary":
            pool.append(draw(st.sampled_from([a.exp2(), a.sin(), a.reciprocal(), a.abs()])))
        elif kind == "cancel":
            pool.append(draw(st.sampled_from([a.reciprocal().reciprocal(),
                                              a.exp2().log2().exp2(), a.log2().exp2()])))
        elif kind == "int":
            i = draw(st.sampled_from(ints))
            ints.append(draw(st.sampled_from([i * 0, i * 1, i + i, i * i + 0])))
        elif kind == "reduce":
            pool.append(a.sum(1, keepdim=True).expand(*SHAPE).contiguous())
        else:
            pool.append(a.t().contiguous().t().contiguous())
    pool[-1].output()
    (pool[-2] * 1.0 + pool[-1]).output()
    ints[-1].output()
    return cx


def run_program(g, program, feeds):
    rt = _core.NativeRuntime()
    rt.compile(program.graph)
    for node, (dtype, data) in zip(program.inputs, feeds):
        rt.set_data(node, data, dtype)
    rt.execute({})
    return [np.asarray(rt.get(o)).astype(np.float64) for o in program.outputs]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graph(), st.integers(0, 2 ** 16))
def test_every_extracted_program_computes_the_graph(cx, seed):
    from luminal.search.check import random_inputs as _random_inputs

    feeds = _random_inputs(cx._g, {}, seed)
    want = run_program(cx._g, _core.identity_program(cx._g), feeds)
    space = _core.SearchSpace(cx._g, FLOAT_REASSOCIATION, limits(seconds=2.0, nodes=4000))
    assert space.report.rejected_merges == 0
    for program in space.extract(6, {}):
        got = run_program(cx._g, program, feeds)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True,
                                       err_msg=program.text())


def test_graph_work_counts_elements_touched():
    cx = lm.Graph()
    x = f32(cx, (2, "s"))
    x.sum(1).output()  # Input 2s, SumReduce reads 2s, Output 2
    assert _core.graph_work(cx._g, {"s": 5}) == 10 + 10 + 2
