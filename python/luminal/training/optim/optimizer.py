"""Optimizer: the base of luminal.optim. An optimizer's step is more graph: from each
parameter and its gradient it builds the parameter's next value and its state's (moments, a
step count), as outputs the runtime carries back into their inputs after every execute
(``Runtime.carry``), so parameters and state live in the runtime and are updated there.
Not here: the update rules (sgd.py, adam.py) and learning-rate schedules (lr_scheduler.py).
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ...hl_ops.tensor_utils import where


def _parameter_tensor(p, graph=None):
    """The graph tensor of ``p``: a GraphTensor, or an nn.Parameter a forward pass used."""
    if hasattr(p, "graph") and hasattr(p, "st"):
        return p
    tensor = getattr(p, "_tensor", None)
    if tensor is None:
        raise ShapeError(f"optimizer: parameter {p!r} is in no graph yet; run the forward pass "
                         f"before step()")
    return tensor


class Optimizer:
    """Holds the parameters (GraphTensors, or nn.Parameters bound by a forward pass) and the
    state inputs a step() made. Subclasses implement ``_update(p, g, lr, t, name)``, which
    returns the parameter's next value and makes its state with ``_state``."""

    def __init__(self, params, lr):
        self._param_specs = list(params)
        if not self._param_specs:
            raise ShapeError(f"{type(self).__name__}: got an empty parameter list")
        self.lr = lr  # a float, or a schedule: step count tensor -> learning-rate tensor
        self.params = []  # the parameter tensors, once step() ran
        self.updates = {}  # parameter tensor id -> its next value (an output)
        self.states = {}  # checkpoint name -> (state input, its next value, initial value)
        self.step_count = None  # a scalar input: the steps taken so far
        self._gate = None  # accumulating: the bool scalar "this execute updates"

    # ---- building the step ----------------------------------------------------------------
    def step(self, grads=None, accumulate: int = 1):
        """Adds one update of every parameter to the graph, from ``grads`` (a list, one per
        parameter) or each parameter's ``.grad`` (set by ``loss.backward()``). Returns the
        parameters' next values, marked as outputs. ``accumulate`` > 1: gradients of that many
        executes (micro-batches) are summed in the runtime and their mean applied on the last
        one; parameters and state stay as they are on the others."""
        if self.params:
            raise ShapeError(f"{type(self).__name__}: step() already built this graph's update")
        self.params = [_parameter_tensor(p) for p in self._param_specs]
        graph = self.params[0].graph
        if grads is None:
            grads = [p.grad for p in self.params]
        for p, g in zip(self.params, grads):
            if g is None:
                raise ShapeError(f"{type(self).__name__}: parameter {p.name!r} has no gradient; "
                                 f"call loss.backward() first or pass grads")
        if accumulate > 1:
            grads = self._accumulated(graph, grads, accumulate)
        t = self.step_count = self._state(graph, (), "step")
        lr = self.lr(t) if callable(self.lr) else self.lr
        for p, g in zip(self.params, grads):
            new = self._update(p, g, lr, t, p.name)
            self.updates[p.id] = self._gated(new, p).output()
        self._set_next("step", t + 1.0)
        return [self.updates[p.id] for p in self.params]

    def _accumulated(self, graph, grads, accumulate: int) -> list:
        """The mean of each gradient over ``accumulate`` executes, summed in state inputs; sets
        the gate that makes only the last of them update."""
        micro = self._state(graph, (), "micro_step")
        last = micro > accumulate - 1.5
        self._set_next("micro_step", where(last, 0.0, micro + 1.0))
        means = []
        for p, g in zip(self.params, grads):
            total = self._state(graph, p.shape, f"{p.name}.grad_sum") + g
            self._set_next(f"{p.name}.grad_sum", where(last, 0.0, total))
            means.append(total * (1.0 / accumulate))
        self._gate = last
        return means

    def _gated(self, value, current):
        """``value`` where this execute updates (always, unless accumulating), else
        ``current``."""
        return value if self._gate is None else where(self._gate, value, current)

    def _state(self, graph, shape, name: str, initial: float = 0.0):
        """A new state input of ``shape`` that starts at ``initial``; its next value is given
        with ``_set_next(name, value)``."""
        tensor = graph.tensor(shape, name=f"optim.{name}")
        self.states[name] = [tensor, None, np.full(shape, initial, np.float32)]
        return tensor

    def _set_next(self, name: str, value) -> None:
        """The value state ``name`` takes after this execute (held on executes that do not
        update, when accumulating; the accumulation's own state is never held)."""
        tensor = self.states[name][0]
        own = name == "micro_step" or name.endswith(".grad_sum")
        self.states[name][1] = (value if own else self._gated(value, tensor)).output()

    def _update(self, p, g, lr, t, name: str):
        raise NotImplementedError(type(self).__name__)

    # ---- on a runtime -----------------------------------------------------------------------
    def attach(self, runtime) -> None:
        """Makes ``runtime`` (holding this graph's program, parameters set) keep the state:
        every state input starts at its initial value, and every parameter and state input is
        carried from its next value after each execute."""
        if not self.params:
            raise ShapeError(f"{type(self).__name__}: attach() needs step() first")
        for p in self.params:
            runtime.carry(self.updates[p.id], p)
        for tensor, next_value, _ in self.states.values():
            runtime.carry(next_value, tensor)
        for tensor, _, initial in self.states.values():
            runtime.set_data(tensor, initial)

    def state_dict(self, runtime) -> dict:
        """The state's current values by name (numpy arrays): ``optim.step``, and per
        parameter ``optim.<name>.<buffer>``."""
        return {f"optim.{name}": runtime.value(tensor)
                for name, (tensor, _, _) in self.states.items()}

    def load_state_dict(self, runtime, state: dict) -> None:
        """Sets the state inputs from ``state`` (as ``state_dict`` returned it)."""
        for name, (tensor, _, _) in self.states.items():
            key = f"optim.{name}"
            if key not in state:
                raise ShapeError(f"{type(self).__name__}.load_state_dict: missing {key!r}")
            runtime.set_data(tensor, np.asarray(state[key], np.float32))
