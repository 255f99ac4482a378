"""The graph: identical nodes are shared, it prints readably, and the quickstart works."""

import os
import subprocess
import sys

import torch

import luminal as lm
from luminal._core import OpKind

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_identical_nodes_are_shared():
    cx = lm.Graph()
    a, b = cx.tensor(3), cx.tensor(3)
    n = len(cx)
    s1 = a._binary(OpKind.Add, b)
    s2 = a._binary(OpKind.Add, b)
    assert s1.id == s2.id
    assert len(cx) == n + 1
    assert a.id != b.id  # inputs are never merged


def test_graph_prints_ops_and_views():
    cx = lm.Graph()
    a = cx.tensor((2, "s"), name="x")
    a.permute(1, 0).sum(0).output()
    text = str(cx)
    assert '(Input "x" (2, s)' in text
    assert "(SumReduce 0 %0 (view (s, 2) strides=(1, s))" in text
    assert "(Output" in text


def test_shapes_are_python_ints_or_exprs():
    cx = lm.Graph()
    a = cx.tensor(("s", 4))
    assert a.shape == (lm.Expr("s"), 4)
    assert a.reshape(-1).shape == (lm.Expr("s") * 4,)
    assert a[1:].shape[0].eval({"s": 5}) == 4
    assert a[1:].shape[0].eval({"s": 0}) == 0


def test_quickstart_prints_torch_result():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py")],
                         capture_output=True, text=True, check=True).stdout
    last = out.strip().splitlines()[-1]  # an editable install may print rebuild lines first
    got = [float(v) for v in last.strip("[]").split(",")]
    a = torch.tensor([1.0, 2.0, 3.0]).reshape(3, 1)
    b = torch.tensor([1.0, 2.0, 3.0, 3.0]).reshape(1, 4)
    assert got == (a @ b).reshape(-1).tolist()


def test_data_sources_list_numpy_torch():
    import numpy as np

    cx = lm.Graph()
    a = cx.tensor((2, 2))
    h = cx.tensor((2, 2), lm.bfloat16)
    y = (a * 2).output()
    z = (h * 2).output()
    rt = cx.search(lm.NativeRuntime())
    hd = torch.randn(2, 2).bfloat16()
    rt.set_data(h, hd)
    for data in ([1.0, 2.0, 3.0, 4.0], np.arange(4.0).reshape(2, 2),
                 torch.arange(4.0).reshape(2, 2).T):
        rt.set_data(a, data)
        rt.execute()
        expected = torch.as_tensor(np.asarray(data, dtype=np.float32)).reshape(2, 2) * 2
        assert rt.get(y).tolist() == expected.tolist()
        assert rt.get(z).tolist() == (hd * 2).float().tolist()
    assert rt.get(y).dtype == np.float32
    assert rt.get(z).shape == (2, 2)
