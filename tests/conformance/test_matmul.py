"""Conformance table: the matmul family."""

import pytest

from harness import VARIANTS, Case, check

CASES = [
    Case("matmul", lambda a, b: a @ b, [(3, 5), (5, 4)], label="2d"),
    Case("matmul", lambda a, b: a @ b, [(5,), (5, 4)], label="1d_2d"),
    Case("matmul", lambda a, b: a @ b, [(3, 5), (5,)], label="2d_1d"),
    Case("matmul", lambda a, b: a @ b, [(5,), (5,)], label="1d_1d"),
    Case("matmul", lambda a, b: a.matmul(b), [(2, 3, 5), (5, 4)], label="batched"),
    Case("matmul", lambda a, b: a @ b, [(2, 1, 3, 5), (4, 5, 2)], label="broadcast_batch"),
]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_matmul(case, variant, runtime):
    check(case, variant, runtime)
