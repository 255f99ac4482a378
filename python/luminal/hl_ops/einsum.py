"""torch.einsum from broadcast Mul and sum: operands are aligned on a common label order,
multiplied left to right, and each label is summed as soon as no later operand or the output
needs it. Handles implicit output, '...' and repeated labels (diagonals)."""

from __future__ import annotations

from .._core import Expr
from .. import dtype as dt
from ..errors import ShapeError


def _parse_term(term: str, equation: str) -> list:
    """Labels of one subscript, '...' as the single token '.'."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise ShapeError(f"einsum: bad ellipsis in {term!r} of {equation!r}")
    labels = []
    for ch in term.replace("...", "."):
        if ch != "." and not ch.isalpha():
            raise ShapeError(f"einsum: invalid subscript {ch!r} in {equation!r}; use letters "
                             f"and '...'")
        labels.append(ch)
    return labels


def _expand_ellipsis(labels: list, t, ell: int, equation: str) -> list:
    """Labels with '.' replaced by the last dims of an ``ell``-dim ellipsis ('0', '1', ...)."""
    letters = len(labels) - labels.count(".")
    if "." not in labels:
        if letters != t.ndim:
            raise ShapeError(f"einsum: subscript {''.join(labels)!r} has {letters} labels but "
                             f"the operand has shape {t.shape} ({equation!r})")
        return labels
    covered = t.ndim - letters
    if covered < 0:
        raise ShapeError(f"einsum: subscript {''.join(labels)!r} has more labels than the "
                         f"operand's shape {t.shape} ({equation!r})")
    at = labels.index(".")
    return labels[:at] + [str(k) for k in range(ell - covered, ell)] + labels[at + 1:]


def _take_diagonals(t, labels: list):
    """A repeated label within one operand reads its diagonal (moved to the end)."""
    while len(set(labels)) != len(labels):
        label = next(x for x in labels if labels.count(x) > 1)
        i = labels.index(label)
        j = labels.index(label, i + 1)
        if t.st.dims[i] != t.st.dims[j]:
            raise ShapeError(f"einsum: label {label!r} repeats with sizes {t.shape[i]} and "
                             f"{t.shape[j]}")
        t = t.diagonal(0, i, j)
        labels = [x for k, x in enumerate(labels) if k not in (i, j)] + [label]
    return t, labels


def _align(t, labels: list, order: list):
    """``t`` permuted to follow ``order``, with size-1 axes for labels it lacks."""
    t = t.permute([labels.index(x) for x in order if x in labels])
    for k, x in enumerate(order):
        if x not in labels:
            t = t.unsqueeze(k)
    return t


def einsum(equation: str, *operands):
    """torch.einsum(equation, *operands) (operands may also come as one list)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise ShapeError(f"einsum: equation must be a str, got {equation!r}")
    if not operands or not all(hasattr(t, "graph") for t in operands):
        raise ShapeError(f"einsum: {equation!r} needs GraphTensor operands")
    for t in operands[1:]:
        operands[0].graph._check_owns(t)
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ShapeError(f"einsum: more than one '->' in {equation!r}")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        shapes = ", ".join(str(t.shape) for t in operands)
        raise ShapeError(f"einsum: {equation!r} names {len(terms)} operands but got "
                         f"{len(operands)} (shapes {shapes})")
    parsed = [_parse_term(term, equation) for term in terms]
    ell = max([t.ndim - (len(p) - p.count(".")) for p, t in zip(parsed, operands)
               if "." in p] or [0])
    ops, labelled, counts = [], [], {}
    for p, t in zip(parsed, operands):
        labels = _expand_ellipsis(p, t, ell, equation)
        for x in labels:
            counts[x] = counts.get(x, 0) + 1
        t, labels = _take_diagonals(t, labels)
        ops.append(t)
        labelled.append(labels)
    ell_labels = [str(k) for k in range(ell)]
    if arrow:
        out = _parse_term(rhs, equation)
        if "." in out:
            at = out.index(".")
            out = out[:at] + ell_labels + out[at + 1:]
        elif any("." in p for p in parsed) and ell:
            raise ShapeError(f"einsum: output of {equation!r} must contain '...' since an "
                             f"input does")
        for x in out:
            if out.count(x) > 1:
                raise ShapeError(f"einsum: output label {x!r} repeats in {equation!r}")
            if not any(x in labels for labels in labelled):
                raise ShapeError(f"einsum: output label {x!r} of {equation!r} is in no input")
    else:
        out = [x for x in ell_labels if x in counts]
        out += sorted(x for x, c in counts.items() if c == 1 and x.isalpha())
    sizes = {}
    for t, labels in zip(ops, labelled):
        for x, d in zip(labels, t.st.dims):
            known = sizes.get(x, Expr(1))
            if d != Expr(1) and known != Expr(1) and d != known:
                shapes = ", ".join(str(o.shape) for o in operands)
                raise ShapeError(f"einsum: label {x!r} has sizes {known} and {d} in "
                                 f"{equation!r} (shapes {shapes})")
            if d != Expr(1):
                sizes[x] = d
    dtype = ops[0].dtype
    for t in ops[1:]:
        dtype = dt.promote(dtype, t.dtype)
    acc, acc_labels = ops[0].to(dtype), labelled[0]
    for k in range(len(ops)):
        if k:
            order = acc_labels + [x for x in labelled[k] if x not in acc_labels]
            acc = _align(acc, acc_labels, order) * _align(ops[k].to(dtype), labelled[k], order)
            acc_labels = order
        later = {x for labels in labelled[k + 1:] for x in labels}
        done = [i for i, x in enumerate(acc_labels) if x not in out and x not in later]
        if done:
            acc = acc.sum(done)
            acc_labels = [x for i, x in enumerate(acc_labels) if i not in done]
    return acc.permute([acc_labels.index(x) for x in out]) if out else acc
