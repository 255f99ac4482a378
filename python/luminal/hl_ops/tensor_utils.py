"""Helpers on tensors the elementwise, reduction, indexing and sorting ops share: PyTorch
result types with Python scalars, operands brought to one dtype and one broadcast shape, exact
selection (``choose``, and ``where``, torch.where itself) and the cheaper arithmetic ``blend``,
and running half-precision math in f32. Plain functions over GraphTensors; no GraphTensor
methods live here, and helpers on dims alone live in shape_utils.py."""

from __future__ import annotations

import functools
import math

from .._core import Expr, OpKind
from .. import dtype as dt
from ..errors import DTypeError
from .joining import stack
from .shape_utils import broadcast_shapes

_CATEGORY = {dt.bool_: 0, dt.int32: 1, dt.float16: 2, dt.bfloat16: 2, dt.float32: 2}
_SCALAR_DEFAULT = {0: dt.bool_, 1: dt.int32, 2: dt.float32}
HALF_TYPES = (dt.float16, dt.bfloat16)


def is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float))


def _scalar_category(x) -> int:
    if isinstance(x, bool):
        return 0
    return 1 if isinstance(x, int) else 2


def is_tensor(x) -> bool:
    return hasattr(x, "graph") and hasattr(x, "view")


def result_type(*operands, op: str = "op"):
    """torch.result_type over tensors and Python scalars: tensors decide the dtype unless a
    scalar is of a higher category (bool < int < float), which then takes its default."""
    tensor_dtype = None
    scalar_cat = -1
    for x in operands:
        if x is None:
            continue
        if is_tensor(x):
            tensor_dtype = x.dtype if tensor_dtype is None else dt.promote(tensor_dtype, x.dtype)
        elif is_scalar(x):
            scalar_cat = max(scalar_cat, _scalar_category(x))
        else:
            raise DTypeError(f"{op}: cannot use {type(x).__name__} {x!r} as a tensor operand")
    if tensor_dtype is None:
        return _SCALAR_DEFAULT[scalar_cat]
    if scalar_cat > _CATEGORY.get(tensor_dtype, 2):  # quantized: the core refuses the op
        return _SCALAR_DEFAULT[scalar_cat]
    return tensor_dtype


def graph_of(*operands, op: str = "op"):
    """The graph the tensor operands share (ShapeError when they come from two graphs)."""
    graph = None
    for x in operands:
        if is_tensor(x):
            if graph is None:
                graph = x.graph
            else:
                graph._check_owns(x)
    if graph is None:
        raise DTypeError(f"{op}: needs at least one GraphTensor operand")
    return graph


def to_tensor(x, graph, dtype):
    """A Python scalar as a constant of ``dtype``, or a tensor converted to ``dtype``."""
    return graph.constant(x, dtype) if is_scalar(x) else x.to(dtype)


def broadcast_all(tensors, op: str):
    """Tensors expanded (as views) to their common broadcast shape."""
    shape = broadcast_shapes([t.st.dims for t in tensors], op)
    return [t if list(t.st.dims) == shape else t.expand(shape) for t in tensors]


def as_tensors(*operands, op: str, dtype=None):
    """Every operand as a tensor of one dtype (the result type unless given), all expanded to
    their common broadcast shape. Python scalars become constants."""
    graph = graph_of(*operands, op=op)
    dtype = dtype or result_type(*operands, op=op)
    return broadcast_all([to_tensor(x, graph, dtype) for x in operands], op)


def full_like(x, value, dtype=None):
    """A constant broadcast (as a view) to ``x``'s shape."""
    c = x.graph.constant(value, dtype or x.dtype)
    return c.expand(list(x.st.dims)) if x.ndim else c


def choose(index, options):
    """``options[index]`` elementwise: ``index`` is an int tensor with values in
    [0, len(options)), all of one shape; one Gather from the options stacked on a new last
    axis, so exact for any values (inf and NaN included)."""
    stacked = stack(options, -1)
    k = len(options)
    dims = list(index.st.dims)
    numel = index.st.numel()
    base = index.graph.iota(Expr("z") * k, numel)
    base = base.reshape(dims) if dims else base.reshape([])
    return stacked._gather(base._binary(OpKind.Add, index.to(dt.int32)))


def where(condition, x, y):
    """torch.where(condition, x, y): x where condition is True, else y. Python scalars are
    allowed for x and y; the result takes their PyTorch result type."""
    if not is_tensor(condition):
        raise DTypeError("where: condition must be a bool GraphTensor")
    if condition.dtype != dt.bool_:
        raise DTypeError(f"where: condition must be bool, got {dt.name(condition.dtype)}")
    graph = graph_of(condition, x, y, op="where")
    dtype = result_type(x, y, op="where")
    a, b = to_tensor(x, graph, dtype), to_tensor(y, graph, dtype)
    cond, a, b = broadcast_all([condition, a, b], "where")
    if dt.is_float(dtype):
        # An additive mask (0 where true, -inf where false: torch's SDPA builds its causal
        # bias so) as log2 of the condition, exactly, as luminal.nn's masks are: a kernel
        # reading it computes it in place, where a choose gathers from a stacked pair.
        values = [uniform_value(a), uniform_value(b)]
        if values == [0.0, -math.inf] and math.copysign(1.0, values[0]) > 0:
            return cond.to(dtype).log2()
        if values == [-math.inf, 0.0] and math.copysign(1.0, values[1]) > 0:
            return cond.logical_not().to(dtype).log2()
        return choose(cond.to(dt.int32), [b, a])
    return blend(cond, a, b)


def uniform_value(t):
    """The number every element of ``t`` holds where it is a numeric constant read through an
    unmasked view (a full, a scalar broadcast), else None."""
    if t.st.has_mask():
        return None
    return t.graph._g.node_value(t.id)


def blend(mask, a, b):
    """``a`` where ``mask`` else ``b`` by arithmetic (a*m + b*(1-m)): exact for ints and bools,
    and for floats wherever the unchosen side is finite. Cheaper than ``choose``."""
    if a.dtype == dt.bool_:
        return (mask & a) | (mask.logical_not() & b)
    m = mask.to(a.dtype)
    return a * m + b * (1 - m)


def order_flip(x):
    """An exact order-reversing map: -x for floats, ~x = -1 - x for ints (no overflow)."""
    flipped = x._binary(OpKind.Mul, full_like(x, -1))
    if dt.is_float(x.dtype):
        return flipped
    return flipped._binary(OpKind.Add, full_like(x, -1))


def round_to_int(x):
    """A float tensor rounded half away from zero to int32 (for near-integers)."""
    half = (x > 0).to(x.dtype) * 0.5 - (x < 0).to(x.dtype) * 0.5
    return (x + half).to(dt.int32)


def float_math(fn):
    """Runs ``fn`` on a float tensor: ints and bools become f32 (as torch's float ops do), and
    f16/bf16 are computed in f32 and rounded once at the end, as torch's kernels do."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if self.dtype in HALF_TYPES:
            return fn(self.to(dt.float32), *args, **kwargs).to(self.dtype)
        if not dt.is_float(self.dtype):
            return fn(self.to(dt.float32), *args, **kwargs)
        return fn(self, *args, **kwargs)

    return wrapper


def float_only(op: str):
    """Like ``float_math`` but an int or bool input is a DTypeError, as in torch."""

    def decorate(fn):
        inner = float_math(fn)

        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            if not dt.is_float(self.dtype):
                raise DTypeError(f"{op}: needs a float tensor, got {dt.name(self.dtype)} "
                                 f"of shape {self.shape}")
            return inner(self, *args, **kwargs)

        return wrapper

    return decorate


def no_bool(x, op: str) -> None:
    if x.dtype == dt.bool_:
        raise DTypeError(f"{op}: not supported for bool tensors (shape {x.shape})")


def horner(x, coefficients):
    """c0 + c1*x + c2*x^2 + ... evaluated by Horner's rule."""
    acc = None
    for c in reversed(coefficients):
        acc = full_like(x, float(c)) if acc is None else acc * x + float(c)
    return acc
