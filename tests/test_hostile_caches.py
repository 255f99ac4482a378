"""The on-disk caches under hostile conditions (#19): a CPU kernel cache entry (.so or .o)
that is truncated (a full disk, an interrupted sync), emptied, damaged or copied from another
program is rebuilt, never loaded (dlopen of a truncated .so killed the process with SIGBUS):
every entry is sealed with its key, the luminal version and a hash of its bytes
(runtime/disk_cache.h), checked before it is opened. A cache directory that cannot be
written only costs speed. A search-cache entry is bound to its graph the same way. Results are
checked against numpy; runs that could kill the process run in a subprocess."""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import luminal as lm
from conftest import unwritable_dir

PROGRAM = """
import gc, glob, os, shutil, sys, numpy as np, luminal as lm

def run(cache, scale):
    cx = lm.Graph()
    x = cx.tensor((8,))
    y = (x * scale + 1.0).exp2().output()
    rt = lm.CpuRuntime(cache_dir=cache)
    rt._load(cx)
    rt.set_data(x, np.arange(8, dtype=np.float32) / 8)
    rt.execute()
    want = np.exp2(np.arange(8, dtype=np.float32) / 8 * scale + 1.0)
    assert np.allclose(rt.get(y), want, rtol=1e-5), (rt.get(y), want)
    stats = rt._rt.last_compile_stats
    del rt
    gc.collect()  # the program's .so closed before its file is damaged
    return f"compiled:{stats.objects_compiled}" if stats.linked else "cached"

def entries(cache, ext):
    return sorted(glob.glob(os.path.join(cache, "*" + ext)))

def flip(path):
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 3)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))

DAMAGE = {
    "truncated": lambda p: os.truncate(p, os.path.getsize(p) // 2),
    "empty": lambda p: open(p, "wb").close(),
    "flipped": flip,
    "garbage": lambda p: open(p, "wb").write(os.urandom(4096)),
    "unsealed": lambda p: os.remove(p + ".seal"),
}

work = sys.argv[1]
cache, other = os.path.join(work, "cpu"), os.path.join(work, "other")
print("first", run(cache, 2.0))
print("again", run(cache, 2.0))
for ext in (".so", ".o"):
    for name, damage in DAMAGE.items():
        for path in entries(cache, ext):
            damage(path)
        if ext == ".o":  # the program's .so gone, so its objects are needed
            for path in entries(cache, ".so"):
                os.remove(path)
        print(ext, name, run(cache, 2.0), run(cache, 2.0))
run(other, 3.0)
(mine,), (theirs,) = entries(cache, ".so"), entries(other, ".so")
shutil.copy(theirs, mine)
print("foreign", run(cache, 2.0))
shutil.copy(theirs, mine)
shutil.copy(theirs + ".seal", mine + ".seal")
print("foreign sealed", run(cache, 2.0), run(cache, 2.0))
"""


def test_damaged_and_foreign_cache_entries_are_rebuilt(tmp_path):
    """Each damage to the .so and then to the objects: the next run rebuilds what it must
    (links again for a .so, compiles again for an object) and gives the right values, the
    one after it is cached. Another program's .so (with or without its seal) under this
    program's name, a valid shared object with an lm_run, is linked again too."""
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    lines = [line for line in done.stdout.splitlines() if not line.startswith("--")]
    first = lines[lines.index("again cached") - 1].split()[1]
    assert first.startswith("compiled:") and first != "compiled:0"
    for name in ("truncated", "empty", "flipped", "garbage", "unsealed"):
        assert f".so {name} compiled:0 cached" in lines, lines
        assert f".o {name} {first} cached" in lines, lines
    assert "foreign compiled:0" in lines, lines
    assert "foreign sealed compiled:0 cached" in lines, lines


def test_an_unwritable_cpu_cache_only_costs_speed(tmp_path):
    blocked = unwritable_dir(tmp_path)
    cx = lm.Graph()
    x = cx.tensor((4,))
    y = (x * 2.0 + 1.0).output()
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        runtime = lm.CpuRuntime(cache_dir=str(blocked))
    rt = cx.search(runtime, progress=False, cache=False)
    rt.set_data(x, [1.0, 2.0, 3.0, 4.0])
    rt.execute()
    assert rt.get(y).tolist() == [3.0, 5.0, 7.0, 9.0]


def test_a_search_entry_moved_to_another_graphs_key_is_not_trusted(tmp_path):
    """Graph A's entry renamed to graph B's key, its key and checksum rewritten to match (what
    a copy between caches or a key collision would give): B's search does not take it, since
    the entry records the graph it was made for, and B's result is B's. The graphs are above
    the work up to which a cache hit is re-run against the interpreter (EXTRA_SETS_WORK), so
    only that record tells them apart."""
    import json

    from luminal.search import cache as search_cache

    def graph(scale):
        cx = lm.Graph()
        x = cx.tensor((1 << 23,))
        y = (x * scale + 1.0).output()
        return cx, x, y

    cx, x, y = graph(2.0)
    cx.search(lm.NativeRuntime(), 1, cache_dir=str(tmp_path), progress=False)
    (theirs,) = glob.glob(str(tmp_path / "*.json"))
    cx, x, y = graph(3.0)
    cx.search(lm.NativeRuntime(), 1, cache_dir=str(tmp_path), progress=False)
    (mine,) = set(glob.glob(str(tmp_path / "*.json"))) - {theirs}
    key = os.path.basename(mine)[:-len(".json")]
    entry = json.load(open(theirs))
    entry["key"] = key
    entry["checksum"] = search_cache._checksum(entry)
    with open(mine, "w") as f:
        json.dump(entry, f)
    assert search_cache.load(str(tmp_path), key) is not None  # it passes the file's checks
    cx, x, y = graph(3.0)
    rt = cx.search(lm.NativeRuntime(), 1, cache_dir=str(tmp_path), progress=False)
    assert not cx.last_search_report.cache_hit
    data = np.arange(1 << 23, dtype=np.float32) / (1 << 20)
    rt.set_data(x, data)
    rt.execute()
    np.testing.assert_array_equal(rt.get(y), data * np.float32(3.0) + np.float32(1.0))
