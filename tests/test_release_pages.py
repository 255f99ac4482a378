"""A weight the runtime keeps only in a layout of its own (packed panels) gives its file pages
back after load_state_dict (weights/pages.py release_pages): the process's resident file pages
drop and the array still reads the file's bytes afterwards, arrays not from a reader's map
(a caller's own copy-on-write map among them) are left alone, and only such weights are
released; the model's output still matches torch."""

import numpy as np
import pytest
import torch

import luminal as lm
import luminal.nn.module as module
from luminal.nn import Linear, Module
from luminal.weights import load_safetensors
from luminal.weights.pages import map_file, release_pages

from conftest import CpuRuntime
from matmul_cases import scheduled

st_torch = pytest.importorskip("safetensors.torch")


def resident_file_kib():
    """This process's resident pages of mapped files (RssFile), in KiB; None off Linux."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssFile:"))
    except (OSError, StopIteration):
        return None


def test_a_view_of_a_readers_map_gives_its_pages_back_and_still_reads_the_file(tmp_path):
    size = 16 << 20
    data = np.random.default_rng(0).integers(0, 255, size + 123, dtype=np.uint8)
    path = tmp_path / "blob"
    data.tofile(path)
    mapped = map_file(str(path))
    view = np.ndarray((size - 4096 + 7,), np.uint8, buffer=mapped[100:100 + size - 4096 + 7])
    assert view.sum() == data[100:100 + size - 4096 + 7].sum()  # its pages read in
    before = resident_file_kib()
    assert release_pages(view)
    after = resident_file_kib()
    if before is not None:
        assert before - after >= (size >> 10) // 2, (before, after)
    np.testing.assert_array_equal(view, data[100:100 + size - 4096 + 7])
    np.testing.assert_array_equal(np.asarray(mapped), data)


def test_arrays_not_from_a_readers_map_are_left_alone(tmp_path):
    """A plain array, a copy, and a caller's own copy-on-write map with a write in it (dropping
    its pages would undo the write)."""
    a = np.arange(100000, dtype=np.float32)
    assert not release_pages(a)
    assert not release_pages(a[10:].copy())
    np.testing.assert_array_equal(a, np.arange(100000, dtype=np.float32))
    path = tmp_path / "blob"
    np.zeros(3 * 4096, np.uint8).tofile(path)
    own = np.memmap(path, dtype=np.uint8, mode="c")
    own[5000] = 7
    assert not release_pages(own)
    assert own[5000] == 7


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
