"""luminal.optim against torch.optim: the same model, data and hyperparameters, 10 steps of
one compiled train step (forward, loss, backward, update), parameters and state carried in
the runtime; parameters match to 1e-5. Schedules against torch.optim.lr_scheduler."""

import numpy as np
import pytest

import luminal as lm
import luminal.nn.functional as LF
from luminal import optim
from luminal.nn import Linear, Module

from conftest import CpuRuntime

torch = pytest.importorskip("torch")

RUNTIMES = {"native": lm.NativeRuntime, "cpu": CpuRuntime}


class TwoLayer(Module):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear(5, 4)
        self.fc2 = Linear(4, 3)

    def forward(self, x):
        return self.fc2(self.fc1(x).tanh())


def _torch_model(params):
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    names = {"fc1.weight": "0.weight", "fc1.bias": "0.bias", "fc2.weight": "2.weight",
             "fc2.bias": "2.bias"}
    model.load_state_dict({names[n]: torch.tensor(a) for n, a in params.items()})
    return model, names


OPTIMIZERS = {
    "sgd": (lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd_momentum": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1,
                                         weight_decay=0.01),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1,
                                               weight_decay=0.01)),
    "sgd_nesterov": (lambda p: optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True)),
    "adam": (lambda p: optim.Adam(p, lr=0.01, weight_decay=0.01),
             lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.01)),
    "adamw": (lambda p: optim.AdamW(p, lr=0.01, betas=(0.8, 0.99)),
              lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99))),
    "adam_steplr": (lambda p: optim.Adam(p, lr=optim.lr_scheduler.StepLR(0.02, 3, 0.5)),
                    lambda p: torch.optim.Adam(p, lr=0.02)),
    "sgd_cosine": (lambda p: optim.SGD(p, lr=optim.lr_scheduler.CosineAnnealingLR(0.1, 6)),
                   lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd_linear": (lambda p: optim.SGD(p, lr=optim.lr_scheduler.LinearLR(0.1, 0.25, 1.0, 4)),
                   lambda p: torch.optim.SGD(p, lr=0.1)),
}
TORCH_SCHEDULES = {
    "adam_steplr": lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5),
    "sgd_cosine": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 6),
    "sgd_linear": lambda o: torch.optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 4),
}


def _run_batch(rng, rt, x, y, reference, batch: int):
    """Runs one luminal step on a random batch; returns torch's loss on it (not backwarded)."""
    xv = rng.standard_normal((batch, 5)).astype(np.float32)
    yv = rng.standard_normal((batch, 3)).astype(np.float32)
    rt.set_data(x, xv)
    rt.set_data(y, yv)
    rt.execute()
    return torch.nn.functional.mse_loss(reference(torch.tensor(xv)), torch.tensor(yv))


def _assert_parameters_match(model, cx, rt, reference, names):
    torch_params = dict(reference.named_parameters())
    for n, p in model.named_parameters():
        np.testing.assert_allclose(rt.value(p.bound_in(cx)),
                                   torch_params[names[n]].detach().numpy(), rtol=1e-5,
                                   atol=1e-5, err_msg=n)


def build_train_step(make_optimizer, batch: int = 6, accumulate: int = 1):
    model = TwoLayer()
    cx = lm.Graph()
    x = cx.tensor((batch, 5), name="x")
    y = cx.tensor((batch, 3), name="y")
    loss = LF.mse_loss(model(x), y).output()
    loss.backward()
    opt = make_optimizer(model.parameters())
    opt.step(accumulate=accumulate)
    return model, cx, x, y, loss, opt


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_ten_steps_match_torch_optim(name, runtime):
    make, make_torch = OPTIMIZERS[name]
    rng = np.random.default_rng(0)
    model, cx, x, y, loss, opt = build_train_step(make)
    params = {n: rng.standard_normal(p.shape).astype(np.float32) * 0.5
              for n, p in model.named_parameters()}
    rt = cx.search(RUNTIMES[runtime](), 1)
    model.load_state_dict(rt, params)
    opt.attach(rt)
    reference, names = _torch_model(params)
    torch_opt = make_torch(reference.parameters())
    schedule = TORCH_SCHEDULES.get(name, lambda o: None)(torch_opt)
    for _ in range(10):
        torch_opt.zero_grad()
        want = _run_batch(rng, rt, x, y, reference, 6)
        want.backward()
        torch_opt.step()
        if schedule is not None:
            schedule.step()
        np.testing.assert_allclose(rt.get(loss), want.item(), rtol=1e-5, atol=1e-6)
    _assert_parameters_match(model, cx, rt, reference, names)


def test_state_dict_holds_the_moments():
    model, cx, x, y, loss, opt = build_train_step(lambda p: optim.Adam(p, lr=0.01))
    rng = np.random.default_rng(1)
    rt = cx.search(lm.NativeRuntime(), 1)
    model.load_state_dict(rt, {n: rng.standard_normal(p.shape).astype(np.float32)
                               for n, p in model.named_parameters()})
    opt.attach(rt)
    rt.set_data(x, rng.standard_normal((6, 5)).astype(np.float32))
    rt.set_data(y, rng.standard_normal((6, 3)).astype(np.float32))
    for _ in range(2):
        rt.execute()
    state = opt.state_dict(rt)
    assert state["optim.step"] == 2.0
    assert set(state) == {"optim.step"} | {f"optim.{n}.{b}" for n, _ in model.named_parameters()
                                           for b in ("exp_avg", "exp_avg_sq")}
    assert np.abs(state["optim.fc1.weight.exp_avg"]).sum() > 0


def test_carry_checks_shapes():
    cx = lm.Graph()
    w = cx.tensor((3,), parameter=True)
    bad = w.sum().output()
    rt = cx.search(lm.NativeRuntime(), 1)
    with pytest.raises(lm.ShapeError, match="cannot become"):
        rt.carry(bad, w)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_gradient_accumulation_matches_torch(runtime):
    """accumulate=3: the mean gradient of three micro-batches, one update every third run."""
    rng = np.random.default_rng(2)
    model, cx, x, y, loss, opt = build_train_step(lambda p: optim.Adam(p, lr=0.02), 4, 3)
    params = {n: rng.standard_normal(p.shape).astype(np.float32) * 0.5
              for n, p in model.named_parameters()}
    rt = cx.search(RUNTIMES[runtime](), 1)
    opt.attach(rt)
    model.load_state_dict(rt, params)
    reference, names = _torch_model(params)
    torch_opt = torch.optim.Adam(reference.parameters(), lr=0.02)
    for update in range(2):
        torch_opt.zero_grad()
        for _ in range(3):
            (_run_batch(rng, rt, x, y, reference, 4) / 3).backward()
        torch_opt.step()
    _assert_parameters_match(model, cx, rt, reference, names)
    assert opt.state_dict(rt)["optim.step"] == 2.0
