"""The nn module tests (tests/test_nn_modules.py: Linear, Embedding, the norms, Conv1d/2d,
BatchNorm2d, MLP and SwiGLU, attention, each against torch.nn) through the Metal renderer: every
test there that builds its module with run_module runs again here, its graph rendered as MSL
and run by the emulator (tests/metal_emu.py) in place of the interpreter."""

import inspect
import itertools

import pytest

import luminal as lm

import metal_emu
import test_nn_modules as nn_tests
from cuda_emu import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")


def _cases():
    """(id, test function, its keyword arguments) of every test that calls run_module, one
    per combination of its parametrize marks."""
    out = []
    for name, fn in vars(nn_tests).items():
        if not name.startswith("test_") or "run_module(" not in inspect.getsource(fn):
            continue
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        grids = []
        for m in marks:
            names = [n.strip() for n in m.args[0].split(",")]
            grids.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in m.args[1]])
        for i, combo in enumerate(itertools.product(*grids)):
            kwargs = {k: v for part in combo for k, v in part.items()}
            out.append((f"{name}[{i}]" if grids else name, fn, kwargs))
    return out


CASES = _cases()


def run_module_through_msl(workdir, calls):
    def run(module, state_dict, inputs, dims=None):
        calls.append(type(module).__name__)
        cx = lm.Graph()
        tensors = {name: cx.tensor(shape, dtype, name)
                   for name, (array, shape, dtype) in inputs.items()}
        y = module(*tensors.values()).output()
        for name, value in (dims or {}).items():
            cx.set_dim(name, value)
        rt = metal_emu.EmulatedRuntime(cx, [y], workdir)
        module.load_state_dict(rt, state_dict)
        for name, (array, _, _) in inputs.items():
            rt.set_data(tensors[name], array)
        rt.execute(dims or {})
        return rt.get(y)
    return run


@pytest.mark.parametrize("name,fn,kwargs", CASES, ids=[c[0] for c in CASES])
def test_nn_module_through_msl(name, fn, kwargs, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(nn_tests, "run_module", run_module_through_msl(tmp_path, calls))
    fn(**kwargs)
    assert calls, f"{name} ran no module through the emulator"


def test_the_module_tests_are_found():
    assert len(CASES) >= 8, [c[0] for c in CASES]
