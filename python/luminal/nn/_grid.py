"""Index grids: a tensor read at coordinates that are integer expressions of the output index,
as one Iota (the flat source indices) feeding one Gather. This is how windows (convolution,
pooling) are extracted without copies of the input: out[o, k] = x[o * stride + k * dilation].
Coordinates linear in the grid's axes (gather_linear) take one broadcast Iota per axis
instead, so the gather is a loop nest over the grid, with no divisions of a flat index.
Private to ``luminal.nn``."""

from __future__ import annotations

from .._core import Expr
from ..hl_ops.shape_utils import as_expr, product


def grid_coords(sizes):
    """The coordinate of each axis of a row-major grid of ``sizes`` as an Expr of the flat
    index z (the Iota variable). The first axis is not reduced modulo its size, so it may be
    symbolic."""
    coords = []
    inner = Expr(1)
    for i in reversed(range(len(sizes))):
        c = Expr("z") if inner == Expr(1) else Expr("z") // inner
        if i > 0:
            c = c % as_expr(sizes[i])
        coords.insert(0, c)
        inner = inner * as_expr(sizes[i])
    return coords


def iota_grid(graph, sizes, expr: Expr):
    """An int tensor of shape ``sizes`` whose element is ``expr`` (an Expr of z, usually built
    from ``grid_coords(sizes)``)."""
    sizes = [as_expr(s) for s in sizes]
    return graph.iota(expr, product(sizes)).reshape(sizes)


def gather_grid(x, sizes, source_coords):
    """A tensor of shape ``sizes`` whose element at grid index z is ``x`` at the coordinates
    ``source_coords`` (one Expr of z per axis of x, in x's logical, possibly padded, view)."""
    flat = Expr(0)
    stride = Expr(1)
    for coord, dim in zip(reversed(source_coords), reversed(x.st.dims)):
        flat = flat + coord * stride
        stride = stride * dim
    sizes = [as_expr(s) for s in sizes]
    index = x.graph.iota(flat, product(sizes))
    return x._gather(index).reshape(sizes)


def gather_linear(x, sizes, source_terms):
    """gather_grid for coordinates linear in the grid's axes: ``source_terms[i]`` lists the
    (grid axis, int coefficient) pairs whose sum is x's coordinate along its axis i. The flat
    source index is a sum of one Iota per grid axis, broadcast over the others."""
    sizes = [as_expr(s) for s in sizes]
    coefficients = [0] * len(sizes)
    stride = Expr(1)
    for terms, dim in zip(reversed(source_terms), reversed(x.st.dims)):
        for axis, k in terms:
            coefficients[axis] = stride * k + coefficients[axis]
        stride = stride * dim
    graph = x.graph
    index = None
    for axis, (size, k) in enumerate(zip(sizes, coefficients)):
        if isinstance(k, int):  # no coordinate reads this axis
            continue
        shape = [Expr(1)] * len(sizes)
        shape[axis] = size
        term = graph.iota(Expr("z") * k, size).reshape(shape)
        index = term if index is None else index + term
    if index is None:
        index = graph.iota(Expr(0), Expr(1)).reshape([Expr(1)] * len(sizes))
    return x._gather(index.expand(sizes))
