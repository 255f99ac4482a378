"""A PyTorch module ahead of time: ``luminal.fx.from_torch(module, example_inputs)`` exports it
with torch.export (the core ATen decompositions), converts the graph (convert.py) and returns a
TorchProgram: a luminal Graph whose weights are parameters, its input and output tensors, and
the weights themselves as numpy arrays, so it is searched and run like any luminal graph.
``dynamic_shapes`` is torch.export's (a torch.export.Dim becomes a luminal symbol)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .convert import convert


@dataclass
class TorchProgram:
    graph: object                # luminal Graph
    inputs: list                 # the module's inputs, in order (GraphTensors)
    outputs: list                # its outputs (GraphTensors)
    weights: dict = field(default_factory=dict)  # weight GraphTensor id -> numpy array

    def dims(self, *inputs) -> dict:
        """The symbols' values (a dyn_map) for one call's user inputs."""
        args = [None] * len(self._converted.inputs)
        for position, x in zip(self._user_positions, inputs):
            args[position] = x
        return self._converted.dims_of(args)

    def load_weights(self, runtime) -> None:
        """Sets every weight (parameters, buffers, constants) on ``runtime``, once."""
        by_id = {t.id: t for t in self._weight_tensors}
        for tid, array in self.weights.items():
            runtime.set_data(by_id[tid], array)

    _weight_tensors: list = field(default_factory=list, repr=False)
    _converted: object = None
    _user_positions: list = field(default_factory=list, repr=False)


def from_torch(module, example_inputs, dynamic_shapes=None) -> TorchProgram:
    """``module`` (an nn.Module, in eval mode for inference) traced at ``example_inputs`` (a
    tuple of tensors)."""
    import torch

    from .aten import decompositions

    exported = torch.export.export(module, tuple(example_inputs), dynamic_shapes=dynamic_shapes)
    exported = exported.run_decompositions(decompositions())
    specs = exported.graph_signature.input_specs
    kinds = torch.export.graph_signature.InputKind
    weight_kinds = (kinds.PARAMETER, kinds.BUFFER, kinds.CONSTANT_TENSOR)
    parameters = [i for i, s in enumerate(specs) if s.kind in weight_kinds]
    converted = convert(exported.graph_module, parameters)
    values = {**exported.state_dict, **exported.constants}
    program = TorchProgram(converted.graph, [], [o[1] for o in converted.outputs
                                                 if o[0] == "tensor"], _converted=converted)
    for i, spec in enumerate(specs):
        t = converted.inputs[i]
        if spec.kind == kinds.USER_INPUT:
            program.inputs.append(t)
            program._user_positions.append(i)
        elif t is not None:
            value = values[spec.target].detach().contiguous()
            program.weights[t.id] = value.numpy() if value.dtype != torch.bfloat16 else \
                value.float().numpy()
            program._weight_tensors.append(t)
    for t, value in converted.constants:
        program.weights[t.id] = np.ascontiguousarray(value.detach().numpy())
        program._weight_tensors.append(t)
    return program
