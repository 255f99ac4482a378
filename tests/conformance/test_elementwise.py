"""Conformance table: elementwise ops (unary, binary, comparisons, logic)."""

import pytest

import luminal as lm
from harness import VARIANTS, Case, Input, check

CASES = [
    Case("exp", lambda x: x.exp(), [(3, 4)]),
    Case("log", lambda x: x.log(), [Input((3, 4), domain="positive")]),
    Case("sin", lambda x: x.sin(), [(3, 4)]),
    Case("cos", lambda x: x.cos(), [(3, 4)]),
    Case("sqrt", lambda x: x.sqrt(), [Input((3, 4), domain="positive")]),
    Case("reciprocal", lambda x: x.reciprocal(), [Input((3, 4), domain="positive")]),
    Case("neg", lambda x: -x, [(3, 4)]),
    Case("abs", lambda x: x.abs(), [(3, 4)]),
    Case("add", lambda a, b: a + b, [(3, 4), (4,)], label="broadcast"),
    Case("add", lambda a: 2 + a, [(3, 4)], label="scalar"),
    Case("sub", lambda a, b: a - b, [(3, 1), (1, 4)]),
    Case("mul", lambda a, b: a * b, [(3, 4), (3, 4)]),
    Case("div", lambda a, b: a / b, [(3, 4), Input((3, 4), domain="positive")]),
    Case("div", lambda a: 1 / a, [Input((3, 4), domain="positive")], label="rscalar"),
    Case("lt", lambda a, b: a < b, [(3, 4), (3, 4)]),
    Case("gt", lambda a: a > 0.5, [(3, 4)], label="scalar"),
    Case("eq", lambda a, b: a == b, [Input((3, 4), domain="int"), Input((3, 4), domain="int")]),
    Case("ge", lambda a, b: a >= b, [(3, 4), (3, 4)]),
    Case("eq", lambda a: a == 1, [Input((3, 4), lm.int32)], label="int_scalar"),
]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_elementwise(case, variant, runtime):
    check(case, variant, runtime)
