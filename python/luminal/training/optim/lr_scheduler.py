"""Learning-rate schedules as graph expressions of the optimizer's step count (the steps taken
before this one), with torch.optim.lr_scheduler's names and closed forms: pass one as an
optimizer's ``lr``. Not here: the optimizers (sgd.py, adam.py)."""

from __future__ import annotations

import math


class StepLR:
    """lr * gamma ** (step // step_size)."""

    def __init__(self, lr: float, step_size: int, gamma: float = 0.1):
        self.lr, self.step_size, self.gamma = lr, step_size, gamma

    def __call__(self, t):
        epochs = (t - t.fmod(float(self.step_size))) * (1.0 / self.step_size)
        return (epochs * math.log2(self.gamma)).exp2() * self.lr


class CosineAnnealingLR:
    """eta_min + (lr - eta_min) * (1 + cos(pi * step / T_max)) / 2."""

    def __init__(self, lr: float, T_max: int, eta_min: float = 0.0):
        self.lr, self.T_max, self.eta_min = lr, T_max, eta_min

    def __call__(self, t):
        phase = (t * (math.pi / self.T_max)).cos()
        return (phase + 1.0) * ((self.lr - self.eta_min) * 0.5) + self.eta_min


class LinearLR:
    """lr times a factor going linearly from start_factor to end_factor over total_iters."""

    def __init__(self, lr: float, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5):
        self.lr, self.start, self.end, self.total = lr, start_factor, end_factor, total_iters

    def __call__(self, t):
        progress = t.clamp(max=float(self.total)) * (1.0 / self.total)
        return (progress * (self.end - self.start) + self.start) * self.lr
