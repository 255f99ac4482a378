"""SGD as torch.optim.SGD computes it: weight decay, momentum with dampening, Nesterov."""

from __future__ import annotations

from ...errors import ShapeError
from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ShapeError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, lr)
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov

    def _update(self, p, g, lr, t, name: str):
        if self.weight_decay:
            g = g + p * self.weight_decay
        if self.momentum:
            buf = self._state(p.graph, p.shape, f"{name}.momentum_buffer")
            # torch starts the buffer at the first gradient, undamped: t == 0 weighs g fully
            first = (t < 0.5).to(g.dtype)
            weight = first * self.dampening + (1.0 - self.dampening)
            buf_next = buf * self.momentum + g * weight
            self._set_next(f"{name}.momentum_buffer", buf_next)
            g = g + buf_next * self.momentum if self.nesterov else buf_next
        return p - g * lr
