"""Graph.search (python/luminal/search/): the winner computes what torch computes, every
candidate is checked against the interpreter (a wrong rule is caught and reported), reports and
progress, symbolic dims, determinism, and the on-disk cache (hits, corrupt entries, two
processes at once)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import luminal as lm
from conftest import assert_close

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_net(cx, names=("x", "w", "b")):
    x = cx.tensor((4, 8), name=names[0])
    w = cx.tensor((8, 5), name=names[1])
    b = cx.tensor((5,), name=names[2])
    y = ((x @ w) * 1.0 + b.unsqueeze(0).expand(4, 5)).exp2().log2().exp2()
    return (x, w, b), y.output()


def feed(rt, tensors, seed=0, dims=None):
    rng = np.random.default_rng(seed)
    shapes = [[d if isinstance(d, int) else d.eval(dims) for d in t.shape] for t in tensors]
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    for t, v in zip(tensors, values):
        rt.set_data(t, v)
    return [torch.from_numpy(v) for v in values]


def torch_small_net(x, w, b):
    return torch.exp2(x @ w + b)


@pytest.mark.parametrize("budget", [1, 6])
def test_search_winner_matches_torch(tmp_path, budget):
    cx = lm.Graph()
    ins, y = small_net(cx)
    cx.build_search_space(lm.NativeRuntime)
    rt = cx.search(lm.NativeRuntime(), budget, cache_dir=str(tmp_path))
    tx, tw, tb = feed(rt, ins)
    rt.execute(cx.dyn_map)
    assert_close(rt.get(y), torch_small_net(tx, tw, tb), rtol=1e-4, atol=1e-5)
    report = cx.last_search_report
    assert 1 <= len(report.candidates) <= budget
    assert report.winner is not None
    assert report.candidates[report.winner].status in ("ok", "untimed")
    assert not report.wrong_rules
    if budget > 1:
        assert all(c.seconds is not None for c in report.candidates if c.status == "ok")
    assert "Output" in report.winner_program


class WrongRuleRuntime(lm.NativeRuntime):
    """A runtime that contributes a wrong rule: exp2(x) => x*x (cheaper by the cost model)."""

    def rewrite_rules(self):
        return "(rule wrong-exp2 (Exp2 ?x) (Mul ?x ?x))"


@pytest.mark.parametrize("budget, reference", [(1, "auto"), (4, "native"), (4, "runtime")])
def test_a_wrong_rule_is_caught_and_reported(tmp_path, budget, reference):
    cx = lm.Graph()
    x = cx.tensor((3, 4), name="x")
    y = (x.exp2() + 1.0).output()
    cx.build_search_space(WrongRuleRuntime)
    rt = cx.search(WrongRuleRuntime(), budget, cache_dir=str(tmp_path), reference=reference)
    (tx,) = feed(rt, [x])
    rt.execute()
    assert_close(rt.get(y), torch.exp2(tx) + 1.0)
    report = cx.last_search_report
    assert any(c.status == "wrong" for c in report.candidates)
    assert report.wrong_rules and "Mul" in report.wrong_rules[0]
    assert "Exp2" in report.winner_program
    assert report.reference == ("native" if reference != "runtime" else
                                "native running the graph as written")


def test_symbolic_dims_bind_to_dyn_map_or_default(tmp_path):
    cx = lm.Graph()
    x = cx.tensor(("s", 3), name="x")
    y = (x * 1.0 + x).sum(1).output()
    rt = cx.search(lm.NativeRuntime(), 3, cache_dir=str(tmp_path))
    for s in (2, 5):
        cx.set_dim("s", s)
        (tx,) = feed(rt, [x], seed=s, dims=cx.dyn_map)
        rt.execute(cx.dyn_map)
        assert_close(rt.get(y), (tx + tx).sum(1))
    from luminal.search import DEFAULT_DIM, representative_dims
    assert representative_dims(cx) == {"s": 5}
    assert representative_dims(lm.Graph()) == {}
    cx2 = lm.Graph()
    cx2.tensor(("n",)).output()
    assert representative_dims(cx2) == {"n": DEFAULT_DIM}


def test_search_is_deterministic_for_a_seed(tmp_path):
    def candidates():
        cx = lm.Graph()
        small_net(cx)
        cx.search(lm.NativeRuntime(), 5, seed=7, cache=False)
        return [(c.rank, c.choice, c.cost, c.status) for c in cx.last_search_report.candidates]
    assert candidates() == candidates()


def test_progress_lines_and_verbose_report(tmp_path, capsys):
    """Into a pipe: nothing unless asked, then a line per candidate (no carriage returns)."""
    cx = lm.Graph()
    small_net(cx)
    cx.search(lm.NativeRuntime(), 3, cache=False, progress=True, verbose=True)
    err = capsys.readouterr().err
    done = len(cx.last_search_report.candidates)
    lines = [line.split(" done")[0] for line in err.splitlines()
             if line.startswith("luminal search:")]
    assert lines == [f"luminal search: {i}/{done}" for i in range(1, done + 1)]
    assert "\r" not in err
    assert "search on native, budget 3" in err
    cx.search(lm.NativeRuntime(), 3, cache=False)  # progress None: nothing into a pipe
    assert capsys.readouterr().err == ""
    cx.search(lm.NativeRuntime(), 3, cache=False, progress=False)
    assert capsys.readouterr().err == ""


def test_progress_on_a_terminal_names_each_step(monkeypatch):
    """On a terminal the line is redrawn in place with the step under way and the candidate;
    while a caller's display claims the line (the CLI's spinner), the search only publishes
    its status there."""
    import io

    from luminal.search.report import StatusLine

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    cx = lm.Graph()
    small_net(cx)
    cx.search(lm.CpuRuntime(), 2, cache=False, progress=True)
    out = term.getvalue()
    frames = out.split("\r")[1:]
    assert frames and all(f.startswith("luminal search: ") for f in frames)
    steps = {f.split(": ", 1)[1].split(",")[0] for f in frames}
    assert {"saturation", "extraction", "compile", "check", "timing"} <= steps, steps
    assert any("candidate 2/2" in f for f in frames), frames
    assert StatusLine.text == ""  # cleared once the search is over
    from luminal.search import report

    seen = []
    step = report._Progress.step
    monkeypatch.setattr(report._Progress, "step",
                        lambda self, name: (step(self, name), seen.append(StatusLine.text)))
    monkeypatch.setattr(StatusLine, "claimed", True)
    term.seek(0)
    term.truncate()
    cx2 = lm.Graph()
    small_net(cx2)
    cx2.search(lm.CpuRuntime(), 2, cache=False, progress=True)
    assert term.getvalue() == ""  # the claimed line is the caller's to draw
    assert any(t.startswith("compile, candidate") for t in seen), seen


def test_search_rejects_bad_arguments():
    cx = lm.Graph()
    cx.tensor(3).output()
    with pytest.raises(ValueError):
        cx.search(lm.NativeRuntime(), 0)
    with pytest.raises(TypeError):
        cx.search(lm.NativeRuntime, 1)
    with pytest.raises(TypeError):
        cx.build_search_space(lm.NativeRuntime())
    with pytest.raises(ValueError, match="reference"):
        cx.search(lm.NativeRuntime(), 1, reference="torch")


# ---- the cache --------------------------------------------------------------------------------

def cached_search(cache_dir, budget=3, names=("x", "w", "b"), monkeypatch=None):
    cx = lm.Graph()
    ins, y = small_net(cx, names)
    cx.build_search_space(lm.NativeRuntime)
    rt = cx.search(lm.NativeRuntime(), budget, cache_dir=str(cache_dir))
    tx, tw, tb = feed(rt, ins)
    rt.execute()
    assert_close(rt.get(y), torch_small_net(tx, tw, tb), rtol=1e-4, atol=1e-5)
    return cx.last_search_report


def no_search(*args, **kwargs):
    raise AssertionError("the e-graph was built on a cache hit")


def test_cache_hit_does_no_search(tmp_path, monkeypatch):
    first = cached_search(tmp_path)
    assert not first.cache_hit and first.cache_path
    from luminal import search
    monkeypatch.setattr(search.SpaceSpec, "build", no_search)
    second = cached_search(tmp_path, names=("a", "b", "c"))  # names are not in the key
    assert second.cache_hit
    assert second.winner_program == first.winner_program
    lower = cached_search(tmp_path, budget=1)  # an entry from a bigger budget serves less
    assert lower.cache_hit


def test_bigger_budget_searches_again(tmp_path):
    assert not cached_search(tmp_path, budget=1).cache_hit
    assert not cached_search(tmp_path, budget=3).cache_hit
    assert cached_search(tmp_path, budget=3).cache_hit


@pytest.mark.parametrize("damage", ["garbage", "truncate", "checksum", "program"])
def test_corrupt_entry_is_rebuilt_not_trusted(tmp_path, damage):
    first = cached_search(tmp_path)
    path = first.cache_path
    text = open(path).read()
    if damage == "garbage":
        text = "\x00not json"
    elif damage == "truncate":
        text = text[: len(text) // 2]
    else:
        entry = json.loads(text)
        if damage == "checksum":
            entry["program"] = entry["program"].replace("Exp2", "Log2")
        else:  # a valid checksum over a program that does not fit the graph
            entry["program"] = "(program (Input 0 ({4} {8}) f32))"
            from luminal.search.cache import _checksum
            entry["checksum"] = _checksum(entry)
        text = json.dumps(entry)
    with open(path, "w") as f:
        f.write(text)
    again = cached_search(tmp_path)
    assert not again.cache_hit
    assert cached_search(tmp_path).cache_hit  # rewritten with a good entry


def test_two_processes_share_the_cache(tmp_path):
    # Self-contained (no torch, no test imports) so the two processes start fast.
    script = textwrap.dedent(f"""
        import luminal as lm
        cx = lm.Graph()
        x = cx.tensor((4, 8), name="x")
        w = cx.tensor((8, 5), name="w")
        ((x @ w) * 1.0).exp2().output()
        cx.search(lm.NativeRuntime(), 4, cache_dir={str(tmp_path)!r})
        print("HIT" if cx.last_search_report.cache_hit else "MISS")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.strip().endswith(("HIT", "MISS"))
    entries = [f for f in os.listdir(tmp_path) if f.endswith(".json")]
    assert len(entries) == 1
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]
    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=300)
    assert again.stdout.strip().endswith("HIT"), again.stderr


def test_search_leaves_no_check_inputs_behind():
    """The search runs candidates on random inputs; the runtime it hands back holds none of
    them, so an execute before set_data raises instead of computing on random data."""
    cx = lm.Graph()
    a = cx.tensor((4, 8), name="a")
    b = cx.tensor((8, 3), name="b")
    (a @ b).relu().output()
    for budget in (1, 3):
        rt = cx.search(lm.CpuRuntime(), budget, cache=False)
        with pytest.raises(lm.ShapeError, match="no data set for input 'a'"):
            rt.execute(cx.dyn_map)


def test_a_cache_hit_reproduces_the_searched_program(tmp_path):
    """The cached entry rebuilds the winner node for node: a Llama's session built a second
    time compiles the same C and, after the same step, holds the same arena (the search's
    checks leave no larger one behind) and the same logits, which match transformers'."""
    transformers = pytest.importorskip("transformers")
    from luminal.models import CausalLMSession, LlamaForCausalLM

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        initializer_range=0.3, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    hf = transformers.LlamaForCausalLM(config).eval()
    hf.to(torch.bfloat16).save_pretrained(str(tmp_path / "model"))
    prompt = [3, 17, 50, 4]
    with torch.no_grad():
        want = hf.float()(torch.tensor([prompt])).logits[:, -1:].numpy()
    runs = []
    for _ in range(2):
        model = LlamaForCausalLM.from_pretrained(tmp_path / "model", max_context=16)
        rt = lm.CpuRuntime(cache_dir=str(tmp_path / "cpu"))
        session = CausalLMSession(model, rt, search=3)
        logits = session.step(np.array([prompt]))
        np.testing.assert_allclose(logits, want, rtol=2e-3, atol=2e-3)
        runs.append((session.graph.last_search_report, rt.source,
                     rt.memory()["arena_bytes"], logits))
    (cold, cold_source, cold_arena, cold_logits), (cached, source, arena, logits) = runs
    assert not cold.cache_hit and cached.cache_hit
    steps = ("saturation", "extraction", "reference", "compile", "check", "timing", "load")
    # A hit loads the program and re-verifies it on the ordinary set (a small graph).
    assert set(steps) <= set(cold.phases) and list(cached.phases) == ["load", "recheck"]
    assert source == cold_source
    assert arena == cold_arena
    np.testing.assert_array_equal(logits, cold_logits)


@pytest.mark.parametrize("dtype", [lm.float32, lm.float16, lm.bfloat16])
def test_check_inputs_are_random_floats_of_moderate_size(dtype):
    from luminal.runtime import _from_storage
    from luminal.search.check import random_floats as _random_floats

    words = _random_floats(np.random.default_rng(3), 10001, dtype)
    again = _random_floats(np.random.default_rng(3), 10001, dtype)
    assert words.size == 10001 and np.array_equal(words, again)
    values = _from_storage(words, dtype).astype(np.float64)
    assert np.all((np.abs(values) >= 0.5) & (np.abs(values) < 2.0))
    assert 0.4 < np.mean(values < 0) < 0.6
    assert len(np.unique(values)) > 500


def test_check_inputs_past_the_pool_repeat_it(monkeypatch):
    """A model's weights draw RANDOM_POOL_BYTES of values and repeat them (where the pool is
    not whole pages, copied)."""
    from luminal.search import check as search_check

    monkeypatch.setattr(search_check, "RANDOM_POOL_BYTES", 202)
    words = search_check.random_floats(np.random.default_rng(3), 1000, lm.bfloat16)
    assert words.size == 1000 and len(np.unique(words[:101])) > 80
    np.testing.assert_array_equal(words[101:202], words[:101])
    np.testing.assert_array_equal(words[909:], words[:91])


def test_check_inputs_past_a_pool_of_pages_repeat_it():
    """Past a pool of whole pages the repeats are the pool's pages mapped again: the same
    values as a copy, and a write changes only the element written."""
    from luminal.search.check import RANDOM_POOL_BYTES, random_floats

    pool = RANDOM_POOL_BYTES // 4
    words = random_floats(np.random.default_rng(3), 3 * pool + 17, lm.float32)
    assert words.size == 3 * pool + 17
    again = random_floats(np.random.default_rng(3), pool, lm.float32)
    for start in (0, pool, 2 * pool):
        np.testing.assert_array_equal(words[start:start + pool][:words.size - start],
                                      again[:words.size - start])
    words[pool + 5] = 0
    assert words[5] == again[5] != 0 and words[2 * pool + 5] == again[5]


@pytest.mark.skipif(sys.platform != "linux", reason="memfd mappings are Linux's")
def test_repeated_pages_only_for_whole_pages():
    from luminal import _core

    page = np.arange(4096, dtype=np.uint8)
    mapped = _core.repeated_pages(page, 3 * 4096 + 10)
    assert mapped.dtype == np.uint8 and mapped.size == 3 * 4096 + 10
    np.testing.assert_array_equal(mapped[4096:8192], page)
    np.testing.assert_array_equal(mapped[-10:], page[:10])
    assert _core.repeated_pages(page[:100], 1000) is None


def test_a_compile_starts_a_fresh_arena(tmp_path):
    """A search runs the reference and every candidate on one runtime; the program it keeps
    must not hold the arena an earlier, bigger one needed."""
    def graph(rows):
        cx = lm.Graph()
        x = cx.tensor((rows, 64), name="x")
        x.sum(1).exp2().sum(0).output()  # the row sums are a temporary of `rows` floats
        return cx, x

    sizes = []
    for order in ((4096, 8), (8,)):
        rt = lm.CpuRuntime(cache_dir=str(tmp_path))
        for rows in order:
            cx, x = graph(rows)
            rt._load(cx)
            rt.set_data(x, np.ones((rows, 64), np.float32))
            rt.execute(cx.dyn_map)
        sizes.append(rt.memory()["arena_bytes"])
    assert sizes[0] == sizes[1]
