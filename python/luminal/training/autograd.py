"""Reverse-mode autodiff as a graph pass: ``grad(loss, inputs)`` adds the gradient of ``loss``
with respect to each input to the same Graph, as more primitive nodes, so forward and backward
compile into one searched program. One rule per primitive (``_RULES``, below) and one adjoint
per input view (autograd_views), so every hl_op and nn module is differentiable without a
backward of its own. Not here: optimizers (luminal.optim), the train step (luminal.training.train).
"""

from __future__ import annotations

import math

from .. import dtype as dt
from .._core import Expr, OpKind, ShapeTracker
from .autograd_views import scatter_add, view_adjoint
from ..errors import ShapeError
from ..hl_ops.indexing import AlongAxisLayout, AxesLayout
from ..hl_ops.shape_utils import product

# Each rule: (inputs read through their views, the node's output, the output's gradient,
# the node's reduce axis) -> the gradient of each input view (None: no gradient flows).


def _log2(xs, y, g, axis):
    return [g * xs[0].reciprocal() * (1.0 / math.log(2.0))]


def _exp2(xs, y, g, axis):
    return [g * y * math.log(2.0)]


def _sin(xs, y, g, axis):
    return [g * xs[0].cos()]


def _sqrt(xs, y, g, axis):
    return [g * y.reciprocal() * 0.5]


def _recip(xs, y, g, axis):
    return [-(g * y * y)]


def _add(xs, y, g, axis):
    return [g, g]


def _mul(xs, y, g, axis):
    return [g * xs[1], g * xs[0]]


def _mod(xs, y, g, axis):
    a, b = xs
    quotient = (a - y) * b.reciprocal()  # trunc(a / b), as torch.fmod's backward
    return [g, -(g * quotient)]


def _sum_reduce(xs, y, g, axis):
    return [g.unsqueeze(axis).expand(list(xs[0].st.dims))]


def _max_reduce(xs, y, g, axis):
    """torch.amax's rule: the gradient is split evenly between the elements that tie."""
    x = xs[0]
    dims = list(x.st.dims)
    hits = x.eq(y.unsqueeze(axis).expand(dims)).to(x.dtype)
    share = g * hits.sum(axis).reciprocal()
    return [share.unsqueeze(axis).expand(dims) * hits]


def _gather(xs, y, g, axis):
    data, indices = xs
    layout = data.graph._gather_layouts.get(y.id)
    if isinstance(layout, AxesLayout):
        return [_gather_axes_adjoint(data, g, layout), None]
    if isinstance(layout, AlongAxisLayout):
        return [_gather_along_axis_adjoint(data, g, layout), None]
    flat = scatter_add(g, indices, data.st.numel())
    return [flat.reshape(list(data.st.dims)), None]


def _cast(xs, y, g, axis):
    return [g.to(xs[0].dtype)]


_RULES = {
    OpKind.Log2: _log2,
    OpKind.Exp2: _exp2,
    OpKind.Sin: _sin,
    OpKind.Sqrt: _sqrt,
    OpKind.Recip: _recip,
    OpKind.Add: _add,
    OpKind.Mul: _mul,
    OpKind.Mod: _mod,
    OpKind.SumReduce: _sum_reduce,
    OpKind.MaxReduce: _max_reduce,
    OpKind.Gather: _gather,
    OpKind.Cast: _cast,
}
_NO_GRADIENT = (OpKind.LessThan, OpKind.Iota, OpKind.Constant, OpKind.Input)


def _gather_axes_adjoint(data, g, layout):
    """The adjoint of hl_ops' gather_axes (x[idx], index_select, Embedding): data viewed as
    (pre, K, post), indexed on its K axis by a combined index of shape S: a one-hot (K, S)
    contracted with the gradient (pre, S, post), O(pre x K x S x post): a matmul, not a
    scatter over every element."""
    pre, block_dims, post, indices, shape = layout
    graph = data.graph
    block = None
    for j, idx in enumerate(indices):
        stride = graph.constant(product(block_dims[j + 1:]), dt.int32)
        term = (idx * stride).expand(shape)
        block = term if block is None else block + term
    p, q, k = product(pre), product(post), product(block_dims)
    s = product(shape)
    rows = graph.iota(Expr("z"), k).reshape(1, k, 1, 1)
    hits = rows.eq(block.reshape(1, 1, s, 1)).to(g.dtype)
    spread = g.reshape(p, 1, s, q)
    return (hits * spread).sum(2).reshape(list(data.st.dims))


def _gather_along_axis_adjoint(data, g, layout):
    """The adjoint of torch-style gather(dim, index) (take_along_dim, the losses' pick): a
    one-hot along that axis only, O(index elements x axis length)."""
    axis, index = layout
    dims = list(data.st.dims)
    length = dims[axis]
    rank = len(dims)
    classes = data.graph.iota(Expr("z"), length)
    classes = classes.reshape([Expr(1)] * (axis + 1) + [length] + [Expr(1)] * (rank - axis - 1))
    hits = index.unsqueeze(axis + 1).eq(classes).to(g.dtype)  # (..., S_axis, length, ...)
    spread = (hits * g.unsqueeze(axis + 1)).sum(axis)  # S with S_axis replaced by length
    shorts = [dims[e] - spread.st.dims[e] for e in reversed(range(rank))]  # index dims < x's
    if any(short != Expr(0) for short in shorts):
        spread = spread.pad_zeros([p for short in shorts for p in (0, short)])
    return spread


def _walk(graph, roots):
    """Nodes the roots depend on, producers before consumers."""
    g = graph._g
    order, seen = [], set()
    stack = [(r, False) for r in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for src, _ in g.node_inputs(node):
            if src not in seen:
                stack.append((src, False))
    return order


def _filled(graph, value: float, dtype, dims):
    """``value`` broadcast to ``dims`` (a constant read through a view: no buffer)."""
    scalar = graph.constant(value, dtype)
    return scalar.expand(list(dims)) if len(dims) else scalar


def _tensor(kind, graph, node, view):
    """A ``kind`` (GraphTensor, passed in: graph.py sits above autograd and calls it) of
    ``node`` read through ``view``."""
    return kind(graph, node, view, graph._g.node_dtype(node))


def grad(loss, inputs, grad_output=None):
    """The gradients of ``loss`` with respect to each tensor of ``inputs``, as GraphTensors of
    the inputs' shapes in the same Graph (zeros where ``loss`` does not depend on one).
    ``loss`` is a scalar unless ``grad_output`` (a tensor of its shape) seeds the pass."""
    graph = loss.graph
    g = graph._g
    inputs = list(inputs)
    for t in inputs:
        graph._check_owns(t)
        if not dt.is_float(t.dtype):
            raise ShapeError(f"grad: {t!r} is not a float tensor; only floats have gradients")
    if not dt.is_float(loss.dtype):
        raise ShapeError(f"grad: loss {loss!r} is not a float tensor")
    if grad_output is None:
        if loss.st.numel() != Expr(1):
            raise ShapeError(f"grad: loss of shape {loss.shape} is not a scalar; pass "
                             f"grad_output")
        grad_output = _filled(graph, 1.0, loss.dtype, loss.st.dims)
    order = _walk(graph, [loss.id])
    wanted = {t.id for t in inputs}
    needs = set()
    for node in order:
        flows = node not in graph._detached and any(src in needs for src, _ in g.node_inputs(node))
        if (node in wanted or flows) and dt.is_float(g.node_dtype(node)):
            needs.add(node)
    adjoints = {}

    def accumulate(node, view, gradient):
        if node not in needs:
            return
        part = view_adjoint(gradient, view, list(g.node_shape(node)))
        adjoints[node] = part if node not in adjoints else adjoints[node] + part

    accumulate(loss.id, loss.st, grad_output)
    for node in reversed(order):
        op = g.node_op(node)
        if node not in adjoints or op in _NO_GRADIENT or node in graph._detached:
            continue
        edges = g.node_inputs(node)
        xs = [_tensor(type(loss), graph, src, view) for src, view in edges]
        y = _tensor(type(loss), graph, node, ShapeTracker.contiguous(g.node_shape(node)))
        rule_grads = _RULES[op](xs, y, adjoints[node], g.node_axis(node))
        for (src, view), part in zip(edges, rule_grads):
            if part is not None:
                accumulate(src, view, part)
    result = []
    for t in inputs:
        full = adjoints.get(t.id)
        if full is None:
            result.append(_filled(graph, 0.0, t.dtype, t.st.dims))
        else:
            if t.st.is_contiguous() and t.st.numel() == product(g.node_shape(t.id)):
                result.append(full.reshape(list(t.st.dims)))
            else:  # the node's gradient laid out as the node, read through t's own view
                result.append(full.contiguous()._with_view(t.st))
    return result


def backward(loss, grad_output=None) -> None:
    """Records ``.grad`` (a GraphTensor) on every tensor of ``loss``'s graph that asks for
    one: the parameters (``cx.tensor(..., parameter=True)``) and tensors marked with
    ``requires_grad_()``, which ``loss`` depends on."""
    graph = loss.graph
    asking = [t for t in graph._grad_tensors if dt.is_float(t.dtype)]
    reachable = set(_walk(graph, [loss.id]))
    asking = [t for t in asking if t.id in reachable]
    for t, gradient in zip(asking, grad(loss, asking, grad_output)):
        t.grad = gradient if t.grad is None else t.grad + gradient


__all__ = ["backward", "grad"]
