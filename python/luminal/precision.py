"""Half precision as one call: ``lm.to_half(cx, lm.bfloat16)`` rewrites a graph to store and
compute in f16 or bf16, with norms, means and softmax sums accumulated in f32 (see
csrc/ir/precision.h for the rule). Like Luminal's fp16 compiler, it remaps tensor handles.
"""

from __future__ import annotations

import gc

from . import _core
from . import dtype as dt


def _flatten(tensors):
    for t in tensors:
        if isinstance(t, (list, tuple)):
            yield from _flatten(t)
        elif isinstance(t, dict):
            yield from _flatten(list(t.values()))
        else:
            yield t


def to_half(cx, dtype=dt.bfloat16, tensors=None):
    """Rewrites graph ``cx`` in place to run in ``dtype`` (f16 or bf16). The GraphTensors in
    ``tensors`` (any nesting of lists, tuples, dicts) are remapped to the new graph; with
    ``tensors=None`` every live GraphTensor of ``cx`` is. Input data is given as before (f32
    data converts on set_data); outputs come back in ``dtype``. Returns ``tensors``."""
    from .graph import GraphTensor

    dtype = dt.to_dtype(dtype)
    new_graph, mapping = _core.to_half(cx._g, dtype)
    if tensors is None:
        targets = [o for o in gc.get_objects()
                   if type(o) is GraphTensor and o.graph is cx]
    else:
        targets = list(_flatten(tensors))
    seen = set()
    for t in targets:
        if id(t) in seen or not isinstance(t, GraphTensor) or t.graph is not cx:
            continue
        seen.add(id(t))
        new_id = mapping[t.id]
        t.id = new_id
        t.dtype = new_graph.node_dtype(new_id)
    cx._g = new_graph
    cx._search_space = None
    return tensors
