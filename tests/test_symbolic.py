"""Tests of luminal.Expr: canonical simplification, substitution, evaluation, text and C output.

The reference is plain Python integer arithmetic, whose // and % are the floor semantics Expr
promises; C output is checked by compiling it with the system C compiler.
"""

import os
import random
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import luminal
from luminal import Expr

s = Expr("s")
t = Expr("t")
u = Expr("u")


# ---------------------------------------------------------------- simplification


def test_constants_fold_with_floor_semantics():
    assert Expr(3) * 4 + 2 == 14
    assert Expr(7) // 2 == 3
    assert Expr(-7) // 2 == -4
    assert Expr(-7) % 3 == 2
    assert Expr(7) % -3 == -2
    assert Expr(3).min(5) == 3
    assert Expr(3).max(5) == 5
    assert Expr(3).lt(5) == 1
    assert Expr(3).ge(5) == 0
    assert Expr(3).logical_and(0) == 0


def test_identities():
    assert s * 1 == s
    assert s + 0 == s
    assert s * 0 == 0
    assert s // 1 == s
    assert s % 1 == 0
    assert s - s == 0
    assert -s * -1 == s


def test_equal_shapes_compare_equal():
    assert s * 2 // 2 == s
    assert (s + 1) - 1 == s
    assert (s * 4 + 2) // 2 == s * 2 + 1
    assert (s * 4 + 3) % 4 == 3
    assert s * t == t * s
    assert (s + t) * 2 == s * 2 + t * 2
    assert (s + t) * (s - t) == s * s - t * t
    assert (s + 5) // 4 == (s + 1) // 4 + 1


def test_div_mod_rules():
    assert (s * 4) % 4 == 0
    assert (s % 4) % 4 == s % 4
    assert (s % 8) % 4 == s % 4
    assert (s * 5) % 4 == s % 4
    assert (s // 2) // 3 == s // 6
    assert (s // 4) * 4 + s % 4 == s
    assert (s * 6 + 4) // 4 == (s * 3 + 2) // 2
    assert (s * 5) // 4 == s + s // 4
    assert (s - t) // 2 == (s + t) // 2 - t
    assert ((s * 5) // 4) * 4 + (s * 5) % 4 == s * 5


def test_bounds_decide_atoms():
    assert (s % 4) // 4 == 0
    assert (s % 4) % 8 == s % 4
    assert (s % 4).min(7) == s % 4
    assert (s % 4).lt(4) == 1
    assert s.ge(0) == 1
    assert s.lt(s + 1) == 1
    assert (s + 1).max(s) == s + 1
    assert (s * 2).eq(3) == 0
    assert (s % 2).ne(0) == s % 2
    assert (s % 3).ne(0).eval({"s": 2}) == 1
    assert ((s % 4) % t.max(1)).lt(4) == 1
    assert ((s % 4) // t.max(1)).lt(4) == 1
    # A divisor without an upper bound can bring any non-negative quotient down to 0.
    assert ((s + 4) // t.max(1)).lt(1).eval({"s": 0, "t": 9}) == 1


def test_symbolic_divisor_needs_a_nonzero_bound():
    d = t.max(1)  # provably >= 1
    assert (s * d) // d == s
    assert (s * d + 3) % d == 3 % d
    assert (s * t) // t != s  # t may be 0: the division must keep its error


def test_comparisons_share_one_form():
    assert s.le(t) == s.lt(t + 1)
    assert s.gt(t) == t.lt(s)
    assert s.ge(t) == t.le(s)
    assert s.eq(t) == t.eq(s)
    assert (s * 2).lt(7) == s.lt(4)
    assert s.lt(t).logical_and(1) == s.lt(t)
    assert s.lt(t).logical_or(1) == 1


def test_equality_and_hash():
    assert s == Expr("s")
    assert s != t
    assert Expr(5) == 5
    assert hash(Expr(5)) == hash(5)
    assert hash(s * 2 // 2) == hash(s)
    assert {s + 1: "x"}[1 + s] == "x"
    assert (s == "s") is False  # no str conversion in ==
    assert (s == None) is False


def test_python_ints_convert_on_either_side():
    assert 1 + s == s + 1
    assert 10 - s == -s + 10
    assert 2 * s == s * 2
    assert 7 // (s + 1) == Expr(7) // (s + 1)
    assert 7 % (s + 1) == Expr(7) % (s + 1)
    assert s.min(3) == Expr(3).min(s)
    assert s + "t" == s + t  # str names a symbol wherever an Expr is taken


# ---------------------------------------------------------------- substitution and evaluation


def test_substitute():
    assert (s * 2 + t).substitute({"s": 3}) == t + 6
    assert (s * 2 + t).substitute({"s": t + 1, "t": 4}) == t * 2 + 6
    assert ((s + 3) // 2).substitute("s", 5) == 4
    assert (s % t).substitute({"t": 4}) == s % 4


def test_eval():
    assert ((s * 2 + t) // 3).eval({"s": 4, "t": 1}) == 3
    assert (s - t * 3).eval({"s": 1, "t": 2}) == -5
    assert ((s - 7) % 4).eval({"s": 1}) == 2
    assert Expr(9).eval() == 9


def test_symbols_and_constants():
    assert (s * u + t // 2).symbols() == ["s", "t", "u"]
    assert Expr(3).symbols() == []
    assert Expr(3).is_const()
    assert not s.is_const()
    assert (s - s + 4).as_const() == 4
    assert int(Expr(12) // 5) == 2


def test_unbound_symbol_is_a_shape_error():
    with pytest.raises(luminal.ShapeError, match="unbound symbol 't'"):
        (s + t).eval({"s": 1})


def test_non_constant_is_a_shape_error():
    with pytest.raises(luminal.ShapeError, match="free symbols: s"):
        int(s * 2 + 1)
    with pytest.raises(luminal.ShapeError):
        (s + t).as_const()


def test_division_by_zero_is_a_shape_error():
    with pytest.raises(luminal.ShapeError):
        s // 0
    with pytest.raises(luminal.ShapeError):
        s % 0
    with pytest.raises(luminal.ShapeError):
        (s // t).eval({"s": 1, "t": 0})
    with pytest.raises(luminal.ShapeError):
        (s // t).substitute({"t": 0})


# ---------------------------------------------------------------- printing


def test_text_is_readable_and_stable():
    assert str(s * 2 + 1) == "s*2 + 1"
    assert str((s + 1) // 2) == "(s + 1)//2"
    assert str(s.min(t)) == "min(s, t)"
    assert str(s - t * 3 - 7) == "s - t*3 - 7"
    assert str(-(s // 4)) == "-(s//4)"
    assert str(s.le(t)) == "s < t + 1"
    assert str(s.lt(t).logical_and(u.ne(3))) == "s < t and u != 3"
    assert repr(s + 1) == "Expr(s + 1)"


def test_c_text():
    assert (s * 2 + 1).to_c() == "(s * 2 + 1)"
    assert (s // 2).to_c() == "(s / 2)"
    assert (s % t).to_c() == "lm_floormod(s, t)"  # t may be 0: the helper gives 0, no SIGFPE
    assert (s % t.max(1)).to_c() == "(s % (t > 1 ? t : 1))"
    assert ((s - t) // 2).to_c() == "(-t + ((s + t) / 2))"
    assert ((s - t).min(3) // 2).to_c() == "lm_floordiv(((s - t) < 3 ? (s - t) : 3), 2)"
    assert (s - t).max(1).to_c() == "((s - t) > 1 ? (s - t) : 1)"


C_PRELUDE = """
#include <stdio.h>
static long long lm_floordiv(long long a, long long b) {
  if (b == 0) return 0;
  long long q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
static long long lm_floormod(long long a, long long b) {
  if (b == 0) return 0;
  long long r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
"""


def compile_and_run_c(exprs, envs, tmp_path):
    """Renders each expr as a C function of (s, t, u), runs them on every env, returns the
    values in env-major order."""
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    lines = [C_PRELUDE]
    for i, e in enumerate(exprs):
        lines.append(f"static long long f{i}(long long s, long long t, long long u) {{")
        lines.append(f"  (void)s; (void)t; (void)u; return {e.to_c()};\n}}")
    lines.append("int main(void) {")
    for env in envs:
        for i in range(len(exprs)):
            lines.append(f'  printf("%lld\\n", f{i}({env["s"]}, {env["t"]}, {env["u"]}));')
    lines.append("  return 0;\n}")
    source = tmp_path / "exprs.c"
    source.write_text("\n".join(lines))
    binary = tmp_path / "exprs"
    subprocess.run([compiler, "-O1", "-w", str(source), "-o", str(binary)], check=True)
    out = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    return [int(v) for v in out.split()]


def test_c_text_compiles_and_agrees(tmp_path):
    exprs = [
        s * 2 + 1,
        (s - t * 3) // 4,
        (s - t) % 5,
        (s + 3) % (t.max(1)),
        (s // 4) * t - u % 3,
        s.min(t - 2) * u.max(3),
        s.lt(t).logical_or(u.eq(2)) + s.ne(t),
        -s * 7 - 9223372036854775807 + s * 7,
    ]
    points = [(0, 0, 0), (5, 2, 7), (13, 40, 2), (1, 9, 3)]
    values = [{"s": a, "t": b, "u": c} for a, b, c in points]
    expected = [e.eval(env) for env in values for e in exprs]
    assert compile_and_run_c(exprs, values, tmp_path) == expected


# ---------------------------------------------------------------- randomised equivalence

SYMBOLS = ("s", "t", "u")
ARITHMETIC = ("add", "sub", "mul", "div", "mod", "neg", "min", "max")
LOGIC = ("lt", "le", "gt", "ge", "eq", "ne", "and", "or")  # 0/1 results, so drawn less often
DIVISORS = (1, 2, 3, 4, 6, 8, -1, -2, -3)


def random_tree(rng, depth, bounded=0.15):
    """A random expression as nested tuples over SYMBOLS and small ints, e.g.
    ("add", "s", ("mod", "t", 4)). A leaf is a bounded atom like t % 4 with probability
    `bounded`. Every divisor is non-zero: see random_divisor."""
    if depth == 0 or rng.random() < 0.2:
        leaf = rng.random()
        if leaf < bounded:  # for the rules that reason with bounds
            return ("mod", rng.choice(SYMBOLS), rng.randint(2, 4))
        return rng.choice(SYMBOLS) if leaf < bounded + 0.45 else rng.randint(-5, 5)
    op = rng.choice(ARITHMETIC * 3 + LOGIC)
    if op == "neg":
        return (op, random_tree(rng, depth - 1, bounded))
    if op in ("div", "mod"):
        return (op, random_tree(rng, depth - 1, bounded), random_divisor(rng, depth - 1))
    return (op, random_tree(rng, depth - 1, bounded), random_tree(rng, depth - 1, bounded))


def random_guard(rng, depth):
    """max(b, 1) or -max(b, 1) for a random tree b: provably non-zero. (Not min(b, -1): that
    is -1 whenever b >= -1, as Expr knows.)"""
    positive = ("max", random_tree(rng, depth), 1)
    return positive if rng.random() < 0.6 else ("neg", positive)


def random_divisor(rng, depth):
    """A non-zero constant, m * a guard, or the symbol u, which envs() keeps >= 1 but which
    Expr only knows to be >= 0."""
    if depth == 0 or rng.random() < 0.4:
        return rng.choice(DIVISORS)
    if rng.random() < 0.2:
        return "u"
    return ("mul", random_guard(rng, depth - 1), rng.choice((1, 1, 2, 3)))


def structured_tree(rng):
    """The shapes the rewrites look for: (q*g*j + r) // (g*m) and % (g*m) for a guard g,
    nested // and %, (x*j) % k, and c1*(x//k) + c*(x%k), with coefficients that match and
    coefficients that don't."""
    x = random_tree(rng, 2, bounded=0.4)
    q = random_tree(rng, 2)
    g = random_guard(rng, 1)
    m = rng.choice((1, 2, 3))
    k = rng.choice((2, 3, 4, 8))
    c = rng.randint(-3, 3)
    shape = rng.randrange(5)
    if shape < 2:
        numerator = ("add", ("mul", q, ("mul", g, rng.choice((1, m)))), x)
        return (("div", "mod")[shape], numerator, ("mul", g, m))
    if shape == 2:
        return (rng.choice(("div", "mod")), (rng.choice(("div", "mod")), x, k * 2), k)
    if shape == 3:
        return ("mod", ("mul", x, rng.choice((2, 4, 6))), k)
    c1 = rng.choice((c * k, c * k + 1, rng.randint(-9, 9)))
    return ("add", ("mul", ("div", x, k), c1), ("mul", ("mod", x, k), c))


PY_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "min": min,
    "max": max,
    "lt": lambda a, b: int(a < b),
    "le": lambda a, b: int(a <= b),
    "gt": lambda a, b: int(a > b),
    "ge": lambda a, b: int(a >= b),
    "eq": lambda a, b: int(a == b),
    "ne": lambda a, b: int(a != b),
    "and": lambda a, b: int(bool(a) and bool(b)),
    "or": lambda a, b: int(bool(a) or bool(b)),
}

# Operands may be Python ints on either side, to exercise __radd__ and friends.
EXPR_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "min": lambda a, b: Expr(a).min(b),
    "max": lambda a, b: Expr(a).max(b),
    "lt": lambda a, b: Expr(a).lt(b),
    "le": lambda a, b: Expr(a).le(b),
    "gt": lambda a, b: Expr(a).gt(b),
    "ge": lambda a, b: Expr(a).ge(b),
    "eq": lambda a, b: Expr(a).eq(b),
    "ne": lambda a, b: Expr(a).ne(b),
    "and": lambda a, b: Expr(a).logical_and(b),
    "or": lambda a, b: Expr(a).logical_or(b),
}


def py_eval(tree, env):
    if isinstance(tree, int):
        return tree
    if isinstance(tree, str):
        return env[tree]
    if tree[0] == "neg":
        return -py_eval(tree[1], env)
    return PY_OPS[tree[0]](py_eval(tree[1], env), py_eval(tree[2], env))


def to_expr(tree):
    """The tree built with Expr operators; leaves stay Python ints where they can."""
    if isinstance(tree, int):
        return tree
    if isinstance(tree, str):
        return Expr(tree)
    if tree[0] == "neg":
        return -Expr(to_expr(tree[1]))
    a = to_expr(tree[1])
    b = to_expr(tree[2])
    if isinstance(a, int) and isinstance(b, int):
        a = Expr(a)
    return EXPR_OPS[tree[0]](a, b)


def check_tree(tree, env):
    expected = py_eval(tree, env)
    e = Expr(to_expr(tree))
    assert e.eval(env) == expected, f"{tree} simplified to {e}"
    # The text is valid Python with the same value.
    assert eval(str(e), {"min": min, "max": max}, dict(env)) == expected, str(e)
    # Substituting every symbol folds to the same constant.
    assert e.substitute(env) == expected, f"{tree} simplified to {e}"
    # Canonical form: arithmetic that cancels gives back the same expression.
    assert (e + s) - s == e
    assert e - e == 0
    return e, expected


def envs(max_value):
    """Symbol values up to max_value; u, a divisor in random trees, is at least 1."""
    value = st.integers(0, max_value)
    return st.fixed_dictionaries({"s": value, "t": value, "u": st.integers(1, max_value)})


# Symbol values and tree depth are kept small enough that no intermediate exceeds int64.
@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False), envs(8))
def test_random_trees_match_python(rng, env):
    check_tree(random_tree(rng, 4), env)


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False), envs(100))
def test_random_shallow_trees_match_python_on_larger_values(rng, env):
    check_tree(random_tree(rng, 3), env)


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False), envs(30))
def test_rewrite_shaped_trees_match_python(rng, env):
    check_tree(structured_tree(rng), env)


@settings(max_examples=500, deadline=None)
@given(st.randoms(use_true_random=False), envs(12))
def test_bounds_are_sound(rng, env):
    """Comparisons with constants are decided from bounds whenever they can be, so probing
    every constant around the value checks the bounds on both sides."""
    tree = random_tree(rng, 3, bounded=0.5) if rng.random() < 0.5 else structured_tree(rng)
    e, value = check_tree(tree, env)
    for c in range(value - 3, value + 4):
        assert e.lt(c).eval(env) == int(value < c), f"{e} < {c}"
        assert e.ge(c).eval(env) == int(value >= c), f"{e} >= {c}"
        assert e.eq(c).eval(env) == int(value == c), f"{e} == {c}"
        assert (e % 4 - c).max(0).eval(env) == max(value % 4 - c, 0), f"{e} % 4 - {c}"


def test_random_trees_in_c_match_python(tmp_path):
    rng = random.Random(1234)
    trees = [random_tree(rng, 4) for _ in range(300)]
    trees += [structured_tree(rng) for _ in range(100)]
    values = [
        {"s": rng.randint(0, 8), "t": rng.randint(0, 8), "u": rng.randint(1, 8)} for _ in range(4)
    ]
    values.append({"s": 0, "t": 0, "u": 1})
    exprs = [Expr(to_expr(tree)) for tree in trees]
    expected = [py_eval(tree, env) for env in values for tree in trees]
    assert compile_and_run_c(exprs, values, tmp_path) == expected


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400), st.integers(0, 40), st.sampled_from([2, 4, 8, 64]),
       st.sampled_from([2, 3, 4, 6]), st.integers(-2, 2))
def test_a_block_index_and_a_position_in_the_block_divide_as_integers(a, b, c, h, m, k):
    """(h*s + t % h) // (h*m) simplifies to s // m, and % to h * (s % m) + t % h (the position
    inside a block of h is below h); checked against Python's floor division and modulo, with
    a further term of u moving in steps of h*k."""
    e = s * h + t % h + u * (h * k)
    env = {"s": a, "t": b, "u": c}
    value = a * h + b % h + c * h * k
    assert (e // (h * m)).eval(env) == value // (h * m)
    assert (e % (h * m)).eval(env) == value % (h * m)
    assert (s * h + t % h) // (h * m) == s // m
    assert (s * h + t % h) % (h * m) == (s % m) * h + t % h
