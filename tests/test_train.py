"""luminal.training.train: one compiled train step of the nn modules against torch's parameters after
3 steps, checkpoints that resume to identical parameters, and dropout's train()/eval()
switch with its random state carried across executes."""

import numpy as np
import pytest

import luminal as lm
import luminal.nn.functional as LF
from luminal import optim
from luminal.nn import Dropout, Embedding, Linear, Module
from luminal.cuda import gpu_available
from luminal.training.train import TrainStep, default_init

from conftest import CpuRuntime
from test_autograd import MODULES

torch = pytest.importorskip("torch")
F = torch.nn.functional

RUNTIMES = {"native": lm.NativeRuntime, "cpu": CpuRuntime}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("name", sorted(MODULES) + ["embedding"])
def test_train_step_matches_torch_after_three_steps(name, runtime):
    """mse(module(x), target) minimized by Adam: parameters after 3 steps as torch's."""
    if name == "embedding":
        make, shape = (lambda: Embedding(9, 4)), (2, 5)
        reference = lambda x, p: F.embedding(x, p["weight"])  # noqa: E731
    else:
        make, shape, reference = MODULES[name]
    module = make()
    rng = np.random.default_rng(0)
    weights = {n: rng.standard_normal(p.shape).astype(np.float32) * 0.5
               for n, p in module.named_parameters()}
    cx = lm.Graph()
    ids = name == "embedding"
    x = cx.tensor(shape, lm.int32 if ids else lm.float32)
    out = module(x, causal=True) if name == "attention" else module(x)
    target = cx.tensor(tuple(out.shape))
    loss = LF.mse_loss(out, target)
    step = TrainStep(module, loss, optim.Adam(module.parameters(), lr=0.05),
                     RUNTIMES[runtime](), weights)
    leaves = {n: torch.tensor(a, requires_grad=True) for n, a in weights.items()}
    torch_opt = torch.optim.Adam(list(leaves.values()), lr=0.05)
    for _ in range(3):
        xv = rng.integers(0, 9, shape).astype(np.int32) if ids else \
            rng.standard_normal(shape).astype(np.float32)
        tv = rng.standard_normal(tuple(out.shape)).astype(np.float32)
        got = step.run({x: xv, target: tv})
        xt = torch.tensor(xv, dtype=torch.long) if ids else torch.tensor(xv)
        _torch_step_matches(torch_opt, F.mse_loss(reference(xt, leaves), torch.tensor(tv)), got)
    _assert_parameters_match(step, leaves)


def _torch_step_matches(opt, loss, got):
    """One torch step on ``loss``, whose value our step's loss ``got`` must be."""
    opt.zero_grad()
    loss.backward()
    opt.step()
    np.testing.assert_allclose(got, loss.item(), rtol=1e-4, atol=1e-5)


def _assert_parameters_match(step, leaves):
    for n, value in step.state_dict().items():
        np.testing.assert_allclose(value, leaves[n].detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=n)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_a_search_between_steps_keeps_the_trained_state(runtime):
    """Two Adam steps, the graph searched again on the same runtime, a third step: parameters
    and moments go on from the trained values (as torch's after 3 steps), not from the initial
    weights the search would set again, nor its random check data."""
    module = Linear(4, 3)
    rng = np.random.default_rng(3)
    weights = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in
               module.named_parameters()}
    cx = lm.Graph()
    x, target = cx.tensor((5, 4)), cx.tensor((5, 3))
    step = TrainStep(module, LF.mse_loss(module(x), target),
                     optim.Adam(module.parameters(), lr=0.05), RUNTIMES[runtime](), weights)
    leaves = {n: torch.tensor(a, requires_grad=True) for n, a in weights.items()}
    torch_opt = torch.optim.Adam(list(leaves.values()), lr=0.05)
    for i in range(3):
        if i == 2:
            cx.search(step.runtime, 2, cache=False)
        xv, tv = (rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (5, 3)))
        got = step.run({x: xv, target: tv})
        _torch_step_matches(torch_opt, F.mse_loss(
            F.linear(torch.tensor(xv), leaves["weight"], leaves["bias"]), torch.tensor(tv)), got)
    _assert_parameters_match(step, leaves)


class Classifier(Module):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear(6, 8)
        self.drop = Dropout(0.25)
        self.fc2 = Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x).relu()))


def _classifier_step(runtime, seed=0):
    model = Classifier()
    cx = lm.Graph()
    x = cx.tensor((5, 6))
    y = cx.tensor((5,), lm.int32)
    loss = LF.cross_entropy(model(x), y)
    step = TrainStep(model, loss, optim.AdamW(model.parameters(), lr=0.01), runtime(),
                     seed=seed)
    return step, x, y


def _batches(n):
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((5, 6)).astype(np.float32),
             rng.integers(0, 3, 5).astype(np.int32)) for _ in range(n)]


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_checkpoint_round_trip_resumes_to_identical_parameters(runtime, tmp_path):
    batches = _batches(5)
    step, x, y = _classifier_step(RUNTIMES[runtime])
    for xv, yv in batches[:3]:
        step.run({x: xv, y: yv})
    step.save(tmp_path / "ckpt.safetensors")
    for xv, yv in batches[3:]:
        step.run({x: xv, y: yv})
    straight = step.state_dict()
    resumed, x2, y2 = _classifier_step(RUNTIMES[runtime], seed=123)
    resumed.load(tmp_path / "ckpt.safetensors")
    for xv, yv in batches[3:]:
        resumed.run({x2: xv, y2: yv})
    for name, value in resumed.state_dict().items():
        np.testing.assert_array_equal(value, straight[name], err_msg=name)
    assert resumed.checkpoint()["optim.step"] == 5.0


def test_dropout_masks_change_per_step_and_eval_is_identity():
    cx = lm.Graph()
    x = cx.tensor((64, 32))
    drop = Dropout(0.25)
    y = drop(x).output()
    state = cx.random_state()
    state.next_value()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.carry(state.next_value(), state.input)
    rt.set_data(state.input, np.array(0, np.int32))
    rt.set_data(x, np.ones((64, 32), np.float32))
    rt.execute()
    first = rt.get(y).copy()
    rt.execute()
    second = rt.get(y)
    assert set(np.unique(first)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.2 < (first == 0).mean() < 0.3
    assert (first != second).any()
    cx2 = lm.Graph()
    x2 = cx2.tensor((4, 4))
    drop.eval()
    assert drop(x2) is x2


def test_dropout_gradient_is_the_mask():
    cx = lm.Graph()
    x = cx.tensor((8, 8), parameter=True)
    y = LF.dropout(x, 0.5, training=True)
    (g,) = lm.grad(y.sum(), [x])
    y.output()
    g.output()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(cx.random_state().input, np.array(3, np.int32))
    rt.set_data(x, np.ones((8, 8), np.float32))
    rt.execute()
    np.testing.assert_array_equal(rt.get(g), rt.get(y))


def test_default_init_is_torch_like():
    w = default_init(Classifier(), seed=1)
    assert set(w) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert np.abs(w["fc1.weight"]).max() <= 1 / np.sqrt(6)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU")
def test_train_step_on_cuda_matches_native():
    """The classifier's train step (dropout, AdamW, carries) on CudaRuntime, as on the
    interpreter after 4 steps."""
    batches = _batches(4)
    results = []
    for runtime in (lm.NativeRuntime, lm.CudaRuntime):
        step, x, y = _classifier_step(runtime)
        for xv, yv in batches:
            step.run({x: xv, y: yv})
        results.append(step.state_dict())
    for name, value in results[0].items():
        np.testing.assert_allclose(results[1][name], value, rtol=1e-4, atol=1e-5, err_msg=name)
