"""ir/ops.def is the only definition of an op: the op table as the core reads it (categories,
signs, the f32 C spelling and the float meaning, checked against torch), and csrc/README.md's
list of the files an op is added in, held true by grepping the tree for an op without special
cases."""

import math
import os
import re

import pytest
import torch

from luminal import _core

ROOT = os.path.join(os.path.dirname(__file__), "..")
UNARY = [op for op in _core.OpKind.__members__.values()
         if _core.op_category(op) == _core.OpCategory.Unary]
TORCH_UNARY = {"Log2": torch.log2, "Exp2": torch.exp2, "Sin": torch.sin, "Sqrt": torch.sqrt,
               "Recip": torch.reciprocal}


def _listed_files():
    """The files csrc/README.md's "Adding an op" names, as paths from the repository root."""
    with open(os.path.join(ROOT, "csrc", "README.md")) as f:
        text = f.read().split("## Adding an op", 1)[1]
    return {p for p in re.findall(r"^\d+\. `([^`]+)`", text, re.M)}


def _sources():
    for top in ("csrc", os.path.join("python", "luminal")):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".h", ".cc", ".def", ".rules", ".py", ".mm")):
                    path = os.path.join(folder, f)
                    yield os.path.relpath(path, ROOT).replace(os.sep, "/"), path


def test_the_unary_ops_are_the_ones_torch_is_checked_against():
    assert sorted(op.name for op in UNARY) == sorted(TORCH_UNARY)


@pytest.mark.parametrize("op", ["Sqrt", "Sin"])
def test_an_op_without_special_cases_is_named_only_where_an_op_is_added(op):
    listed = _listed_files()
    assert "csrc/ir/ops.def" in listed and len(listed) <= 6, listed
    word = re.compile(rf"\b{op}\b")
    named = set()
    for rel, path in _sources():
        with open(path, errors="replace") as f:
            if word.search(f.read()):
                named.add(rel)
    assert named, f"{op} is named nowhere: the grep is broken"
    assert named <= listed, f"{op} is also named in {sorted(named - listed)}: an op list by hand"


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_a_unary_ops_float_meaning_is_torchs(op):
    xs = [0.0, 0.5, 1.0, 2.0, 3.25, 100.0, -1.5, math.inf, -math.inf]
    for x in xs:
        ours = _core.unary_eval(op, x)
        ref = TORCH_UNARY[op.name](torch.tensor(x, dtype=torch.float64)).item()
        if math.isnan(ref):
            assert math.isnan(ours), (op, x, ours)
        else:
            assert ours == pytest.approx(ref, rel=1e-15, abs=0), (op, x, ours, ref)
