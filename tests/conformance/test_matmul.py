"""Conformance table: the matmul family (matmul, mm, bmm, dot, outer, einsum, linear)."""

import pytest
import torch
import torch.nn.functional as F

import luminal as lm
from harness import VARIANTS, Case, Input, check, check_grad
from luminal.hl_ops.matmul import linear

# Rows whose leading dim is also a dim of another operand that the symbolic variant leaves
# concrete (a square operand, a vector against a batch): the two stop being provably equal.
NO_SYMBOLIC = ("contig", "noncontig")


def es(equation):
    """One einsum row's luminal and torch callables."""
    return (lambda *xs: lm.einsum(equation, *xs)), (lambda *xs: torch.einsum(equation, *xs))


def einsum_case(equation, shapes, label, **kw):
    fn, ref = es(equation)
    return Case("einsum", fn, shapes, ref, label=label, **kw)


CASES = [
    Case("matmul", lambda a, b: a @ b, [(3, 5), (5, 4)], label="2d"),
    Case("matmul", lambda a, b: a @ b, [(5,), (5, 4)], label="1d_2d"),
    Case("matmul", lambda a, b: a @ b, [(3, 5), (5,)], label="2d_1d"),
    Case("matmul", lambda a, b: a @ b, [(5,), (5,)], label="1d_1d"),
    Case("matmul", lambda a, b: a.matmul(b), [(2, 3, 5), (5, 4)], label="batched"),
    Case("matmul", lambda a, b: a @ b, [(2, 1, 3, 5), (4, 5, 2)], label="broadcast_batch"),
    Case("matmul", lambda a, b: a @ b, [(5,), (2, 5, 3)], label="1d_batched",
         variants=NO_SYMBOLIC),
    Case("matmul", lambda a, b: a @ b, [(3, 1), (1, 4)], label="k1"),
    Case("matmul", lambda a, b: a @ b, [Input((3, 4), lm.float16), Input((4, 2), lm.float16)],
         label="f16", rtol=2e-2, atol=2e-2),
    Case("mm", lambda a, b: a.mm(b), [(3, 5), (5, 4)]),
    Case("mm", lambda a, b: a.mm(b), [(1, 5), (5, 1)], label="size1"),
    Case("bmm", lambda a, b: a.bmm(b), [(2, 3, 5), (2, 5, 4)]),
    Case("bmm", lambda a, b: a.bmm(b), [(1, 1, 3), (1, 3, 2)], label="size1"),
    Case("dot", lambda a, b: a.dot(b), [(6,), (6,)]),
    Case("outer", lambda a, b: a.outer(b), [(3,), (4,)]),
    Case("outer", lambda a, b: a.outer(b), [(1,), (4,)], label="size1"),
    einsum_case("ij,jk->ik", [(3, 5), (5, 4)], "matmul"),
    einsum_case("bij,bjk->bik", [(2, 3, 5), (2, 5, 4)], "bmm"),
    einsum_case("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)], "attention"),
    einsum_case("i,i->", [(6,), (6,)], "dot"),
    einsum_case("ij->ji", [(3, 4)], "transpose"),
    einsum_case("ii->i", [(4, 4)], "diagonal", variants=NO_SYMBOLIC),
    einsum_case("ii", [(4, 4)], "trace", variants=NO_SYMBOLIC),
    einsum_case("ij,jk", [(3, 5), (5, 4)], "implicit"),
    einsum_case("ba,ca", [(3, 5), (4, 5)], "implicit_sorted"),
    einsum_case("...ij,...jk->...ik", [(2, 3, 5), (2, 5, 4)], "ellipsis"),
    einsum_case("...ij,jk", [(2, 1, 3, 5), (5, 4)], "ellipsis_implicit"),
    einsum_case("bi,bj->bij", [(3, 2), (3, 4)], "outer_batched"),
    einsum_case("ij->j", [(3, 4)], "sum"),
    einsum_case("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], "three"),
    einsum_case("i j , j k -> i k", [(3, 5), (5, 4)], "spaces"),
    Case("linear", lambda x, w, b: linear(x, w, b), [(3, 5), (4, 5), (4,)], F.linear),
    Case("linear", lambda x, w: linear(x, w), [(2, 3, 5), (4, 5)], F.linear, label="no_bias"),
    # 16-bit weights read by an f32 matmul (the CPU widens them in the kernel)
    Case("linear", lambda x, w: linear(x, w), [(3, 20), Input((9, 20), lm.bfloat16)],
         lambda x, w: F.linear(x, w.float()), label="bf16_weight"),
    Case("linear", lambda x, w: linear(x, w), [(1, 19), Input((6, 19), lm.float16)],
         lambda x, w: F.linear(x, w.float()), label="f16_weight_one_row"),
]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_matmul(case, variant, runtime):
    check(case, variant, runtime)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_matmul_grad(case, variant, runtime):
    check_grad(case, variant, runtime)
