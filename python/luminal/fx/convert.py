"""An ATen-level FX graph (torch.compile's AOT autograd output, or torch.export's) as a luminal
Graph: each placeholder becomes an input (a parameter where the caller says so), each call an
entry of aten.ATEN, each returned tensor an output. Symbolic sizes (dynamo's s0, s1, ...)
become luminal symbols, so one compiled program serves every size. Raises aten.Unsupported
with a one-line reason for anything it cannot express. Not here: searching or running the
graph (backend.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .._core import Expr
from ..graph import Graph
from .aten import ATEN, NEEDS_GRAPH, SIZED_BY_OUTPUT, Unsupported, to_dtype
from .unsupported import reason

aten = torch.ops.aten


@dataclass
class Converted:
    graph: Graph
    # per placeholder: the input tensor (None for a symbolic int or an unused tensor)
    inputs: list = field(default_factory=list)
    # per output: ("tensor", GraphTensor, torch dtype), ("value", python value) or
    # ("expr", Expr) for a symbolic int
    outputs: list = field(default_factory=list)
    # symbol name -> (placeholder index, axis or None for a SymInt placeholder)
    symbols: dict = field(default_factory=dict)
    # (parameter input, torch tensor) of the graph's constant tensors, set once
    constants: list = field(default_factory=list)

    def dims_of(self, args) -> dict:
        """The symbols' values for one call's arguments."""
        dims = {}
        for name, (index, axis) in self.symbols.items():
            value = args[index] if axis is None else args[index].shape[axis]
            dims[name] = int(value)
        return dims


def sym_expr(value):
    """An int, or a SymInt as a luminal Expr (from its sympy expression)."""
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt):
        return _sympy(value.node.expr)
    raise Unsupported(f"size {value!r}")


def _sympy(e):
    import sympy

    if e.is_Integer:
        return int(e)
    if e.is_Symbol:
        return Expr(str(e))
    args = [_sympy(a) for a in e.args]
    kind = type(e).__name__
    if isinstance(e, sympy.Add):
        return _fold(args, lambda a, b: a + b)
    if isinstance(e, sympy.Mul):
        return _fold(args, lambda a, b: a * b)
    if kind == "FloorDiv":
        return args[0] // args[1]
    if kind in ("Mod", "PythonMod"):
        return args[0] % args[1]
    raise Unsupported(f"symbolic size {e}")


def _fold(args, op):
    out = args[0]
    for a in args[1:]:
        out = op(out, a)
    return out


def convert(gm: torch.fx.GraphModule, parameters=()) -> Converted:
    """The luminal graph of ``gm``; ``parameters``: indices of placeholders that are weights
    (constant across calls)."""
    cx = Graph()
    out = Converted(cx)
    env = {}
    hints = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        env[node] = _placeholder(cx, out, i, node, i in set(parameters), hints)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            env[node] = _call(cx, node, env)
        elif node.op == "get_attr":
            env[node] = _constant(cx, out, node, getattr(gm, node.target))
        elif node.op == "output":
            out.outputs = [_output(env, v) for v in _flat(node.args[0])]
    for name, hint in hints.items():
        cx.set_dim(name, hint)
    return out


def _placeholder(cx, out, index, node, parameter, hints):
    val = node.meta.get("val")
    if isinstance(val, torch.SymInt):
        expr = sym_expr(val)
        if isinstance(expr, Expr) and expr.is_symbol():
            out.symbols.setdefault(str(expr), (index, None))
            hints.setdefault(str(expr), int(val.node.hint))
        out.inputs.append(None)
        return expr
    if isinstance(val, (int, float, bool)):
        out.inputs.append(None)
        return val
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"input {node.name} of type {type(val).__name__}")
    shape = []
    for axis, d in enumerate(val.shape):
        expr = sym_expr(d)
        if isinstance(expr, Expr) and expr.is_symbol():
            out.symbols.setdefault(str(expr), (index, axis))
            hints.setdefault(str(expr), int(d.node.hint))
        elif isinstance(expr, Expr):
            raise Unsupported(f"input {node.name} with a derived symbolic size {expr}")
        shape.append(expr)
    t = cx.tensor(tuple(shape), to_dtype(val.dtype), node.name, parameter=parameter)
    out.inputs.append(t)
    return t


def _constant(cx, out, node, value):
    if not isinstance(value, torch.Tensor):
        raise Unsupported(f"constant attribute {node.target} of type {type(value).__name__}")
    t = cx.tensor(tuple(value.shape), to_dtype(value.dtype), node.name, parameter=True)
    out.constants.append((t, value))
    return t


def _flat(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


# Operators whose result is a fresh tensor (no view of another): an in-place copy_ into one
# that nothing reads afterwards is a plain value.
_FRESH = {aten.full.default, aten.full_like.default, aten.zeros_like.default,
          aten.ones_like.default, aten.empty.memory_format, aten.empty_permuted.default,
          aten.empty_strided.default, aten.new_empty.default, aten.new_zeros.default,
          aten.new_ones.default, aten.clone.default, aten.scalar_tensor.default}


def _copy_into_fresh(node, env):
    """aten.copy_(dst, src) as src broadcast to dst (in dst's dtype), where dst is a fresh
    tensor read by nothing after the copy; else Unsupported (it would mutate shared data)."""
    dst, src = node.args[0], node.args[1]
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    if dst.op != "call_function" or dst.target not in _FRESH or \
            any(order[u] > order[node] for u in dst.users if u is not node):
        raise Unsupported(f"operator {node.target} writes into a view or a tensor read elsewhere "
                          f"(an in-place write luminal does not express)")
    out = env[src].expand(*env[dst].shape)
    return out if out.dtype == env[dst].dtype else out.to(env[dst].dtype)


def _call(cx, node, env):
    if node.target == aten.copy_.default:
        return _copy_into_fresh(node, env)
    fn = ATEN.get(node.target)
    if fn is None:
        raise Unsupported(reason(node.target))
    args = [_arg(a, env) for a in node.args]
    if node.target in SIZED_BY_OUTPUT:
        args[1] = [sym_expr(d) for d in node.meta["val"].shape]
    kwargs = {k: _arg(v, env) for k, v in node.kwargs.items()
              if k not in ("device", "layout", "pin_memory", "memory_format",
                           "non_blocking")}
    if node.target in NEEDS_GRAPH:
        args = [cx] + args
    try:
        return fn(*args, **kwargs)
    except Unsupported:
        raise
    except Exception as e:  # a luminal error on these arguments: the reason, in one line
        raise Unsupported(f"{node.target}: {type(e).__name__}: {str(e).splitlines()[0]}") \
            from None


def _arg(a, env):
    if isinstance(a, torch.fx.Node):
        return env[a]
    if isinstance(a, (list, tuple)):
        return type(a)(_arg(x, env) for x in a)
    if isinstance(a, torch.SymInt):
        return sym_expr(a)
    return a


def _output(env, value):
    if isinstance(value, torch.fx.Node):
        value_out = env[value]
        val = value.meta.get("val")
        if value_out is None:
            raise Unsupported(f"output {value.name} is one luminal does not compute")
        if isinstance(value_out, Expr):
            return ("expr", value_out)
        if isinstance(value_out, (int, float, bool)):
            return ("value", value_out)
        return ("tensor", value_out.output(), val.dtype)
    return ("value", value)
