"""One runtime used from several threads (runtime_threads.py): the raw set_data / execute /
get path gives each thread its own correct result or a clear LuminalError, never another
thread's answer; ``rt.sequence()`` and the torch.compile backend serialise whole sequences so
every result is right; a sequential hand-off between threads keeps working. Results are
checked against numpy and eager torch."""

import threading

import numpy as np
import pytest

import luminal as lm

THREADS, ITERATIONS, N = 4, 100, 32
REFUSED = "being used from two threads at once"


def matmul_runtime(runtime):
    """y = a @ b + a on ``runtime``, and its tensors."""
    cx = lm.Graph()
    a = cx.tensor((N, N), name="a")
    b = cx.tensor((N, N), name="b")
    y = (a.matmul(b) + a).output()
    return cx.search(runtime(), 1), a, b, y


def inputs(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, N)).astype(np.float32)
    w = rng.standard_normal((N, N)).astype(np.float32)
    return x, w, x @ w + x


def run_threads(work) -> list:
    """``work(thread_index)`` in THREADS threads at once; each returns a list of outcomes."""
    outcomes = [None] * THREADS

    def body(t):
        outcomes[t] = work(t)

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [o for per_thread in outcomes for o in per_thread]


def test_raw_calls_from_threads_are_right_or_refused(runtime):
    rt, a, b, y = matmul_runtime(runtime)

    def work(t):
        outcomes = []
        for i in range(ITERATIONS):
            x, w, want = inputs(1000 * t + i)
            try:
                rt.set_data(a, x)
                rt.set_data(b, w)
                rt.execute({})
                got = rt.get(y)
            except lm.LuminalError as e:
                assert REFUSED in str(e) and "rt.sequence()" in str(e), str(e)
                outcomes.append("refused")
                continue
            outcomes.append("right" if np.allclose(got, want, atol=1e-3) else "wrong")
        return outcomes

    outcomes = run_threads(work)
    assert outcomes.count("wrong") == 0
    assert len(outcomes) == THREADS * ITERATIONS


def test_sequence_serialises_threads(runtime):
    rt, a, b, y = matmul_runtime(runtime)

    def work(t):
        outcomes = []
        for i in range(ITERATIONS):
            x, w, want = inputs(1000 * t + i)
            with rt.sequence():
                rt.set_data(a, x)
                rt.set_data(b, w)
                rt.execute({})
                got = rt.get(y)
            outcomes.append(bool(np.allclose(got, want, atol=1e-3)))
        return outcomes

    assert all(run_threads(work))


def test_torch_compiled_callable_from_threads_is_always_right():
    torch = pytest.importorskip("torch")
    import luminal.fx  # noqa: F401  (registers the backend)

    def f(x, w):
        return x @ w + x

    compiled = torch.compile(f, backend="luminal", options={"runtime": "native"})
    x0, w0, _ = inputs(0)
    compiled(torch.from_numpy(x0), torch.from_numpy(w0))  # compiled once, here

    def work(t):
        outcomes = []
        for i in range(ITERATIONS):
            x, w, _ = inputs(1000 * t + i)
            x, w = torch.from_numpy(x), torch.from_numpy(w)
            got = compiled(x, w)
            outcomes.append(bool(torch.allclose(got, f(x, w), atol=1e-3)))
        return outcomes

    assert all(run_threads(work))


def in_thread(fn):
    """Runs ``fn`` in a new thread and waits for it; returns what it returned or raised."""
    result = {}

    def body():
        try:
            result["value"] = fn()
        except Exception as e:  # handed back to the test
            result["error"] = e

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return result


def test_a_sequential_hand_off_between_threads_works():
    rt, a, b, y = matmul_runtime(lm.NativeRuntime)

    def sequence(seed):
        x, w, want = inputs(seed)
        rt.set_data(a, x)
        rt.set_data(b, w)
        rt.execute({})
        return np.allclose(rt.get(y), want, atol=1e-3)

    assert in_thread(lambda: sequence(1)) == {"value": True}
    assert in_thread(lambda: sequence(2)) == {"value": True}
    assert sequence(3)
    # a thread that has ended owns nothing: its inputs and its outputs pass to the next
    x, w, want = inputs(4)
    in_thread(lambda: (rt.set_data(a, x), rt.set_data(b, w)))
    rt.execute({})
    np.testing.assert_allclose(rt.get(y), want, atol=1e-3)
    in_thread(lambda: rt.execute({}))
    np.testing.assert_allclose(rt.get(y), want, atol=1e-3)


def test_parameters_set_by_one_thread_serve_the_others():
    cx = lm.Graph()
    x = cx.tensor((4,), name="x")
    w = cx.tensor((4,), name="w", parameter=True)
    y = (x * w).output()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(w, [1.0, 2.0, 3.0, 4.0])  # this thread stays alive and never executes

    def sequence():
        rt.set_data(x, [1.0, 1.0, 1.0, 1.0])
        rt.execute({})
        return rt.get(y).tolist()

    assert in_thread(sequence) == {"value": [1.0, 2.0, 3.0, 4.0]}


class _Paused:
    """Two threads in lockstep: ``a`` does part of a sequence and waits; ``b`` calls in."""

    def __init__(self, first, then):
        self.ready, self.done = threading.Event(), threading.Event()
        self.result = {}

        def body():
            first()
            self.ready.set()
            self.done.wait(30)
            self.result["value"] = then()

        self.thread = threading.Thread(target=body)
        self.thread.start()
        self.ready.wait(30)

    def finish(self):
        self.done.set()
        self.thread.join()
        return self.result["value"]


def test_an_execute_after_another_threads_set_data_is_refused():
    rt, a, b, y = matmul_runtime(lm.NativeRuntime)
    x, w, want = inputs(5)
    paused = _Paused(lambda: (rt.set_data(a, x), rt.set_data(b, w)),
                     lambda: (rt.execute({}), rt.get(y))[1])
    with pytest.raises(lm.LuminalError, match=f"{REFUSED}: inputs were set and not executed"):
        rt.execute({})
    with pytest.raises(lm.LuminalError, match=REFUSED):
        rt.set_data(a, x)
    with pytest.raises(lm.LuminalError, match=REFUSED):
        with rt.sequence():
            pass
    np.testing.assert_allclose(paused.finish(), want, atol=1e-3)


def test_a_get_of_another_threads_outputs_is_refused():
    rt, a, b, y = matmul_runtime(lm.NativeRuntime)
    x, w, want = inputs(6)
    paused = _Paused(lambda: (rt.set_data(a, x), rt.set_data(b, w), rt.execute({})),
                     lambda: rt.get(y))
    with pytest.raises(lm.LuminalError, match=f"{REFUSED}: the outputs held now were produced"):
        rt.get(y)
    np.testing.assert_allclose(paused.finish(), want, atol=1e-3)


class _SlowCore:
    """A core runtime whose execute waits for ``release`` once it has begun."""

    def __init__(self, core):
        self._core = core
        self.entered, self.release = threading.Event(), threading.Event()

    def execute(self, dyn_map):
        self.entered.set()
        self.release.wait(30)
        return self._core.execute(dyn_map)

    def __getattr__(self, name):
        return getattr(self._core, name)


def test_a_set_data_while_another_thread_executes_is_refused():
    rt, a, b, y = matmul_runtime(lm.NativeRuntime)
    x, w, want = inputs(7)
    rt._rt = slow = _SlowCore(rt._rt)
    result = {}

    def sequence():
        rt.set_data(a, x)
        rt.set_data(b, w)
        rt.execute({})
        result["y"] = rt.get(y)

    thread = threading.Thread(target=sequence)
    thread.start()
    slow.entered.wait(30)
    with pytest.raises(lm.LuminalError, match=f"{REFUSED}: an execute is running in"):
        rt.set_data(a, inputs(8)[0])
    slow.release.set()
    thread.join()
    np.testing.assert_allclose(result["y"], want, atol=1e-3)
