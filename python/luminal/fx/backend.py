"""torch.compile's "luminal" backend: dynamo's graph goes through AOT autograd (the core ATen
decompositions), is converted to a luminal Graph (convert.py), searched on a runtime and run
there. Tensors cross without a copy where they are contiguous CPU float32 (the CPU runtime
reads them in place); weights are set once and set again only when they change.
Training works too: AOT autograd's forward and backward graphs are each compiled by luminal.
A graph luminal cannot express runs in PyTorch instead: never a wrong result; the reason is
reported once on stderr and counted in ``report``.

    compiled = torch.compile(model, backend="luminal", options={"runtime": "cpu", "search": 4})

Options: ``runtime`` ("cpu" default, "native"), ``search`` (candidates timed, default 1),
``cache`` (the search cache, default True), ``verbose`` (print each graph's search report)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy
import torch

from .. import runtime as runtime_module
from .aten import Unsupported, decompositions
from .convert import convert


@dataclass
class BackendReport:
    """What the backend did since the process started (or ``reset()``)."""

    compiled: int = 0            # graphs compiled by luminal
    fallbacks: list = field(default_factory=list)  # (reason) of each graph run in PyTorch

    def reset(self) -> None:
        self.compiled = 0
        self.fallbacks.clear()

    def __str__(self) -> str:
        lines = [f"luminal backend: {self.compiled} graph(s) compiled, {len(self.fallbacks)} run "
                 f"in PyTorch"]
        lines += [f"  in PyTorch: {r}" for r in self.fallbacks]
        return "\n".join(lines)


report = BackendReport()
_RUNTIMES = {"cpu": "CpuRuntime", "native": "NativeRuntime"}
_OPTIONS = {"runtime", "search", "cache", "verbose"}


def luminal_backend(gm: torch.fx.GraphModule, example_inputs, options=None):
    """The dynamo backend (registered as "luminal" through the torch_dynamo_backends entry
    point; ``options`` are torch.compile's)."""
    from torch._functorch.aot_autograd import aot_module_simplified

    options = dict(options or {})
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ValueError(f"luminal backend: unknown option(s) {unknown}; known: "
                         f"{sorted(_OPTIONS)}")
    if options.get("runtime", "cpu") not in _RUNTIMES:
        raise ValueError(f"luminal backend: runtime must be one of {sorted(_RUNTIMES)}, got "
                         f"{options['runtime']!r}")
    lifted = len(list(gm.parameters())) + len(list(gm.buffers()))
    weights = {i for i, x in enumerate(example_inputs) if isinstance(x, torch.nn.Parameter)}
    parameters = set(range(lifted)) | {lifted + i for i in weights}

    def compiler(graph_parameters):
        def compile_graph(aten_gm, aten_inputs):
            from torch._functorch.aot_autograd import make_boxed_func

            try:
                compiled = CompiledGraph(aten_gm, graph_parameters, options)
            except Unsupported as e:
                return _fallback(aten_gm, str(e), boxed=True)
            except Exception as e:  # a luminal failure must not stop the user's program
                return _fallback(aten_gm, f"luminal failed: {type(e).__name__}: "
                                          f"{str(e).splitlines()[0] if str(e) else ''}",
                                 boxed=True)
            report.compiled += 1
            return make_boxed_func(compiled)
        return compile_graph

    # With gradients, AOT autograd splits the forward (which also returns what the backward
    # saves) from the backward (saved tensors and output gradients in, input gradients out):
    # each is an ATen graph of its own, compiled the same way; the backward has no weights.
    return aot_module_simplified(gm, example_inputs, fw_compiler=compiler(parameters),
                                 bw_compiler=compiler(set()),
                                 decompositions=decompositions())


def _fallback(gm, reason: str, boxed: bool = False):
    report.fallbacks.append(reason)
    print(f"luminal backend: running a graph in PyTorch: {reason}", file=sys.stderr)
    if boxed:
        from torch._functorch.aot_autograd import make_boxed_func

        return make_boxed_func(gm.forward)
    return gm.forward


class CompiledGraph:
    """One FX graph compiled by luminal: called with the graph's inputs (torch tensors and
    ints), returns its outputs as torch tensors."""

    def __init__(self, gm, parameters, options):
        self.converted = convert(gm, parameters)
        self.parameters = set(parameters)
        cx = self.converted.graph
        self.runtime = None
        self._set = {}  # parameter placeholder index -> (data_ptr, version, shape) last set
        self._constants_set = False  # set on the first call (compiling runs on fake tensors)
        if not any(o[0] == "tensor" for o in self.converted.outputs):
            return  # sizes and constants only: nothing to run
        runtime = getattr(runtime_module, _RUNTIMES[options.get("runtime", "cpu")])
        cx.build_search_space(runtime)
        self.runtime = cx.search(runtime(), options.get("search", 1),
                                 cache=options.get("cache", True),
                                 verbose=options.get("verbose", False))

    def __call__(self, *args):
        rt, conv = self.runtime, self.converted
        if rt is None:
            return [self._result(o, conv.dims_of(args)) for o in conv.outputs]
        with rt.sequence():  # callers in other threads wait: one call's sets, run and reads
            return self._run(rt, conv, args)

    def _run(self, rt, conv, args):
        if not self._constants_set:
            for t, value in conv.constants:
                rt.set_data(t, value.detach().contiguous())
            self._constants_set = True
        for i, (t, arg) in enumerate(zip(conv.inputs, args)):
            if t is None:
                continue
            if i in self.parameters:
                key = (arg.data_ptr(), arg._version, tuple(arg.shape))
                if self._set.get(i) == key:
                    continue
                self._set[i] = key
            rt.set_data(t, arg.detach())
        dims = conv.dims_of(args)
        rt.execute(dims)
        return [self._result(o, dims) for o in conv.outputs]

    def _result(self, out, dims):
        kind = out[0]
        if kind == "tensor":
            # a fresh array (ascontiguousarray would make a 0-d array 1-d); a 0-d 16-bit
            # result comes back as a numpy scalar
            array = numpy.asarray(self.runtime.get(out[1]))
            return torch.from_numpy(array.copy() if not array.flags.c_contiguous else array) \
                .to(out[2])
        if kind == "expr":
            return out[1].eval(dims) if not isinstance(out[1], int) else out[1]
        return out[1]
