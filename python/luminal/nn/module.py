"""Module and Parameter: the PyTorch-style container every luminal.nn layer derives from.

A Parameter is a named weight that becomes a graph parameter (an input constant across
executions: ``cx.tensor(..., parameter=True)``) the first time a forward pass uses it;
``load_state_dict(rt, weights)`` then sets every such input once on a compiled runtime,
and the runtime keeps them across executes. Not here: the layers themselves (layers.py, ...).
"""

from __future__ import annotations

from collections import OrderedDict

from .. import dtype as dt
from ..errors import WeightsError
from ..weights.convert import to_parameter_storage
from ..weights.pages import release_pages


class Parameter:
    """A weight of fixed ``shape`` and ``dtype``; its graph input is made on first use."""

    def __init__(self, shape, dtype=dt.float32):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dt.to_dtype(dtype)
        self._graph = None
        self._tensor = None
        self.name = None  # full dotted name, set by the root module before a forward pass

    def tensor(self, graph):
        """The graph input holding this weight in ``graph`` (made on first call)."""
        if self._graph is not graph:
            self._graph = graph
            self._tensor = graph.tensor(self.shape, self.dtype, self.name or "param",
                                        parameter=True)
        return self._tensor

    def bound_in(self, graph):
        """The input of this weight in ``graph``, or None if no forward pass used it there."""
        return self._tensor if self._graph is graph else None

    def __repr__(self) -> str:
        return f"Parameter({self.shape}, {dt.name(self.dtype)})"


class Buffer(Parameter):
    """A constant input the module computes itself (a rotary table, say): it is not in
    state dicts, and ``load_state_dict`` sets it from ``value``."""

    def __init__(self, value):
        import numpy as np

        value = np.ascontiguousarray(value)
        super().__init__(value.shape, value.dtype)
        self.value = value


class Module:
    """Base class: holds Parameters and sub-Modules by attribute name, as torch.nn.Module."""

    def __init__(self):
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_named", False)
        object.__setattr__(self, "training", True)  # as torch: train() / eval() switch it

    def __setattr__(self, name, value):
        if "_params" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__()")
        self._params.pop(name, None)
        self._buffers.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Buffer):
            self._buffers[name] = value
        elif isinstance(value, Parameter):
            self._params[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    # ---- the tree ----------------------------------------------------------------------
    def named_modules(self, prefix: str = ""):
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}{name}.")

    def named_parameters(self):
        """(dotted name, Parameter) for every weight in the tree, in definition order."""
        for prefix, module in self.named_modules():
            for name, p in module._params.items():
                yield prefix + name, p

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def named_buffers(self):
        for prefix, module in self.named_modules():
            for name, b in module._buffers.items():
                yield prefix + name, b

    def _name_tree(self) -> None:
        for name, p in list(self.named_parameters()) + list(self.named_buffers()):
            p.name = name
        for _, m in self.named_modules():
            object.__setattr__(m, "_named", True)

    def __call__(self, *args, **kwargs):
        if not self._named:
            self._name_tree()
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def train(self, mode: bool = True):
        """Sets ``training`` on this module and every sub-module (dropout reads it) for the
        graphs built from now on; returns self."""
        for _, module in self.named_modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    # ---- weights -----------------------------------------------------------------------
    def load_state_dict(self, runtime, state_dict, strict: bool = True, source: str = "",
                        ignore=()) -> None:
        """Sets every weight a forward pass used in ``runtime``'s graph from ``state_dict``
        (a mapping of dotted names to numpy arrays, torch tensors or a weights reader).

        Checks every shape first and raises WeightsError naming the file and tensor; with
        ``strict``, keys of the model missing from ``state_dict`` and keys of ``state_dict``
        the model does not have are errors too (but for names in ``ignore``). Weights and
        buffers stay set across executes."""
        graph = runtime._graph
        if graph is None:
            raise WeightsError("load_state_dict: the runtime has no program; call cx.search first")
        where = source or getattr(state_dict, "source", "") or "state dict"
        params = dict(self.named_parameters())
        keys = set(state_dict.keys())
        missing = [n for n, p in params.items()
                   if n not in keys and (strict or p.bound_in(graph) is not None)]
        if missing:
            raise WeightsError(f"{where}: missing {len(missing)} tensor(s) the model needs: "
                               f"{_short_list(missing)}")
        unexpected = sorted(keys - set(params) - set(ignore))
        if strict and unexpected:
            raise WeightsError(f"{where}: {len(unexpected)} unexpected tensor(s) the model does "
                               f"not have: {_short_list(unexpected)}")
        with runtime.sequence():  # the buffers stay set too, owned by no thread
            for name, p in params.items():
                if p.bound_in(graph) is None or name not in keys:
                    continue
                storage = to_parameter_storage(state_dict, name, p.shape, p.dtype, where)
                node = p.bound_in(graph)
                runtime.set_storage(node, storage.reshape(dt.storage_shape(p.dtype, p.shape)))
                if runtime._keeps_only_its_layout(node):  # its file pages are not read again
                    release_pages(storage)
            for _, b in self.named_buffers():
                if b.bound_in(graph) is not None:
                    runtime.set_data(b.bound_in(graph), b.value)


def _short_list(names, limit: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


class ModuleList(Module):
    """A list of modules named "0", "1", ... as torch.nn.ModuleList."""

    def __init__(self, modules=()):
        super().__init__()
        self._items = []
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> None:
        setattr(self, str(len(self._items)), module)
        self._items.append(module)

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):
        return self._items[i]


class Sequential(ModuleList):
    """Modules named "0", "1", ... applied in turn, as torch.nn.Sequential."""

    def forward(self, x):
        for module in self:
            x = module(x)
        return x
