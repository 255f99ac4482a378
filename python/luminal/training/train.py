"""One compiled train step: forward, loss, backward (luminal.training.autograd) and the optimizer's
update (luminal.optim) in one graph, searched and compiled once; parameters, optimizer state
and the random state stay in the runtime and are carried across executes. Checkpoints to and
from safetensors, and torch's default initialization of the nn modules' weights.
Not here: the gradient rules (autograd.py), the update rules (optim/).
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtype as dt
from ..errors import ShapeError

_RANDOM_STATE_KEY = "random.state"


def default_init(model, seed: int = 0) -> dict:
    """Initial weights for ``model`` as torch initializes its modules: Linear and Conv weights
    and biases uniform in +-1/sqrt(fan_in), norms' weights one and biases zero, Embedding
    standard normal; any other parameter normal with std 0.02. name -> float32 array."""
    from ..nn import Conv1d, Conv2d, Embedding, LayerNorm, Linear, RMSNorm

    rng = np.random.default_rng(seed)
    weights = {}
    for prefix, module in model.named_modules():
        for name, p in module._params.items():
            key = prefix + name
            if isinstance(module, (Linear, Conv1d, Conv2d)):
                fan_in = int(np.prod(module.weight.shape[1:]))
                bound = 1.0 / math.sqrt(fan_in)
                weights[key] = rng.uniform(-bound, bound, p.shape)
            elif isinstance(module, (LayerNorm, RMSNorm)):
                weights[key] = np.ones(p.shape) if name == "weight" else np.zeros(p.shape)
            elif isinstance(module, Embedding):
                weights[key] = rng.standard_normal(p.shape)
            else:
                weights[key] = rng.standard_normal(p.shape) * 0.02
    return {k: v.astype(np.float32) for k, v in weights.items()}


class TrainStep:
    """``loss`` (a scalar of the graph ``model``'s forward pass built) minimized by
    ``optimizer`` over the model's parameters, as one program on ``runtime``: ``run(feeds)``
    is one step (forward, backward, update) and returns the loss. ``weights``: the initial
    parameters (name -> array; default ``default_init(model, seed)``). ``accumulate``: runs
    per update (gradient accumulation over micro-batches, Optimizer.step). ``budget`` and the
    other keywords go to ``Graph.search``."""

    def __init__(self, model, loss, optimizer, runtime, weights=None, *, seed: int = 0,
                 budget: int = 1, accumulate: int = 1, **search_options):
        if loss.st.numel().is_const() and loss.st.numel().as_const() != 1:
            raise ShapeError(f"TrainStep: the loss must be a scalar, got shape {loss.shape}")
        self.model = model
        self.graph = loss.graph
        self.loss = loss.output()
        self.optimizer = optimizer
        loss.backward()
        optimizer.step(accumulate=accumulate)
        self._random = self.graph._random
        if self._random is not None:
            self._random.next_value()
        self.runtime = self.graph.search(runtime, budget, **search_options)
        self.parameters = {name: p.bound_in(self.graph) for name, p in model.named_parameters()
                           if p.bound_in(self.graph) is not None}
        optimizer.attach(self.runtime)  # before the weights: a carried input keeps its data
        model.load_state_dict(self.runtime, default_init(model, seed) if weights is None
                              else weights, strict=False)
        if self._random is not None:
            self.runtime.carry(self._random.next_value(), self._random.input)
            self.runtime.set_data(self._random.input, np.array(seed, np.int32))

    def run(self, feeds: dict) -> float:
        """Sets ``feeds`` (input tensor -> data), runs one step, returns the loss."""
        for tensor, data in feeds.items():
            self.runtime.set_data(tensor, data)
        self.runtime.execute(self.graph.dyn_map)
        return float(self.runtime.get(self.loss))

    def state_dict(self) -> dict:
        """The model's current parameters by name (numpy arrays)."""
        return {name: self.runtime.value(t) for name, t in self.parameters.items()}

    def checkpoint(self) -> dict:
        """Parameters, optimizer state and the random state: everything a resumed run needs."""
        state = self.state_dict()
        state.update(self.optimizer.state_dict(self.runtime))
        if self._random is not None:
            state[_RANDOM_STATE_KEY] = self.runtime.value(self._random.input)
        return state

    def save(self, path) -> None:
        """Writes ``checkpoint()`` to a safetensors file."""
        from safetensors.numpy import save_file

        save_file({k: np.ascontiguousarray(v) for k, v in self.checkpoint().items()},
                  str(path))

    def load(self, path_or_state) -> None:
        """Restores a ``save``d file (or a ``checkpoint()`` dict): parameters, optimizer state
        and random state."""
        state = path_or_state
        if not isinstance(state, dict):
            from safetensors.numpy import load_file

            state = load_file(str(path_or_state))
        for name, tensor in self.parameters.items():
            if name not in state:
                raise ShapeError(f"TrainStep.load: the checkpoint has no parameter {name!r}")
            self.runtime.set_data(tensor, np.asarray(state[name], dt.storage(tensor.dtype)))
        self.optimizer.load_state_dict(self.runtime, state)
        if self._random is not None and _RANDOM_STATE_KEY in state:
            self.runtime.set_data(self._random.input, state[_RANDOM_STATE_KEY])
