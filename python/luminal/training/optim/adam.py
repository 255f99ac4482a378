"""Adam and AdamW as torch.optim computes them (bias-corrected moments; AdamW's decoupled
weight decay). amsgrad is not built."""

from __future__ import annotations

import math

from .optimizer import Optimizer


class Adam(Optimizer):
    decoupled = False  # AdamW: weight decay scales the parameter, not the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr)
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay

    def _update(self, p, g, lr, t, name: str):
        beta1, beta2 = self.betas
        if self.weight_decay and self.decoupled:
            p = p * (1.0 - lr * self.weight_decay)
        elif self.weight_decay:
            g = g + p * self.weight_decay
        m = self._state(p.graph, p.shape, f"{name}.exp_avg")
        v = self._state(p.graph, p.shape, f"{name}.exp_avg_sq")
        m_next = m * beta1 + g * (1.0 - beta1)
        v_next = v * beta2 + g * g * (1.0 - beta2)
        self._set_next(f"{name}.exp_avg", m_next)
        self._set_next(f"{name}.exp_avg_sq", v_next)
        step = t + 1.0
        correction1 = 1.0 - (step * math.log2(beta1)).exp2()
        correction2 = 1.0 - (step * math.log2(beta2)).exp2()
        denom = v_next.sqrt() * correction2.sqrt().reciprocal() + self.eps
        return p - m_next * denom.reciprocal() * (correction1.reciprocal() * lr)


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
