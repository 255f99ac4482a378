"""A weight the runtime keeps only in a layout of its own (packed panels) gives its file pages
back after load_state_dict (weights/pages.py release_pages): the array still reads the file's
bytes afterwards, other arrays are left alone, and only such weights are released; the model's
output still matches torch."""

import numpy as np
import pytest
import torch

import luminal as lm
import luminal.nn.module as module
from luminal.nn import Linear, Module
from luminal.weights import load_safetensors
from luminal.weights.pages import release_pages

from conftest import CpuRuntime
from matmul_cases import scheduled

st_torch = pytest.importorskip("safetensors.torch")


def test_a_view_of_a_mapped_file_reads_the_file_after_its_pages_are_released(tmp_path):
    data = np.random.default_rng(0).integers(0, 255, 5 * 4096 + 123, dtype=np.uint8)
    path = tmp_path / "blob"
    data.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="c")
    view = np.ndarray((3 * 4096 + 7,), np.uint8, buffer=mapped[100:100 + 3 * 4096 + 7])
    assert view.sum() == data[100:100 + 3 * 4096 + 7].sum()  # its pages read in
    assert release_pages(view)
    np.testing.assert_array_equal(view, data[100:100 + 3 * 4096 + 7])
    np.testing.assert_array_equal(np.asarray(mapped), data)


def test_arrays_not_mapped_from_a_file_are_left_alone():
    a = np.arange(100000, dtype=np.float32)
    assert not release_pages(a)
    assert not release_pages(a[10:].copy())
    np.testing.assert_array_equal(a, np.arange(100000, dtype=np.float32))


def test_load_state_dict_releases_only_the_weights_kept_as_panels(tmp_path, monkeypatch):
    """fc's weight is laid out as panels (pack_b 1) and read only so; out's is read in place."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential()
    ref.add_module("fc", torch.nn.Linear(64, 48, bias=False))
    ref.add_module("out", torch.nn.Linear(48, 5, bias=False))
    path = tmp_path / "two.safetensors"
    st_torch.save_file(ref.state_dict(), str(path))
    cx = lm.Graph()
    x = cx.tensor(("m", 64), name="x")
    fc, out = Linear(64, 48, bias=False), Linear(48, 5, bias=False)
    holder = Module()
    holder.fc, holder.out = fc, out
    fc.weight.name, out.weight.name = "fc.weight", "out.weight"
    h = scheduled(x @ fc.weight.tensor(cx).t(), [("pack_b", 1)])
    y = (h @ out.weight.tensor(cx).t()).output()
    rt = CpuRuntime()
    rt._load(cx)
    released = []
    monkeypatch.setattr(module, "release_pages",
                        lambda a: released.append(a.shape) or release_pages(a))
    holder.load_state_dict(rt, load_safetensors(path))
    assert released == [(48, 64)]
    assert rt.memory()["packed_input_bytes"] > 0
    for rows in (1, 3, 20):
        xv = torch.randn(rows, 64)
        rt.set_data(x, xv)
        rt.execute({"m": rows})
        np.testing.assert_allclose(rt.get(y), ref(xv).detach().numpy(), rtol=1e-4, atol=1e-5)
