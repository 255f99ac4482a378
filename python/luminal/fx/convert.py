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


def _is_view(node) -> bool:
    """Whether a call's result aliases its input (its schema says so: Tensor(a))."""
    schema = getattr(node.target, "_schema", None)
    return schema is not None and any(r.alias_info is not None for r in schema.returns)


def _writes_in_place(target) -> bool:
    schema = getattr(target, "_schema", None)
    first = schema.arguments[0].alias_info if schema is not None and schema.arguments else None
    return first is not None and first.is_write


def _in_place(cx, node, env):
    """An in-place call (copy_, add_, ...) as its functional form, where the tensor it writes
    is a fresh one (computed here, no view, no input) that nothing reads afterwards, nor
    through a view; else Unsupported (the write would be lost)."""
    copy = node.target == aten.copy_.default
    packet = getattr(aten, node.target._schema.name.split("::")[1].rstrip("_"), None)
    functional = getattr(packet, node.target._overloadname, None) if packet else None
    if not copy and functional not in ATEN:
        raise Unsupported(reason(node.target))
    dst = node.args[0]
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    # (dst may be an earlier in-place call's result: converted, so fresh itself)
    fresh = isinstance(dst, torch.fx.Node) and dst.op == "call_function" and \
        (not _is_view(dst) or _writes_in_place(dst.target))
    if not fresh or any(order[u] > order[node] or _is_view(u) for u in dst.users
                        if u is not node):
        raise Unsupported(f"operator {node.target} writes into an input, a view or a tensor "
                          f"read elsewhere (an in-place write luminal does not express)")
    if copy:
        out = env[node.args[1]].expand(*env[dst].shape)
        return out if out.dtype == env[dst].dtype else out.to(env[dst].dtype)
    return _call_function(cx, node, functional, env)


def _as_strided(cx, node, env):
    """as_strided reads its input's storage: where that is the input's own elements in order
    (a contiguous tensor, no storage offset, as FX's metadata records), a Gather of them at
    offset + sum(i_k * stride_k); else Unsupported."""
    x_node, size, stride = node.args[0], node.args[1], node.args[2]
    offset = node.args[3] if len(node.args) > 3 and node.args[3] is not None else 0
    val = x_node.meta.get("val") if isinstance(x_node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not val.is_contiguous() or \
            val.storage_offset() != 0 or not all(isinstance(d, int) for d in (*size, *stride)):
        raise Unsupported(f"operator {node.target} of a tensor whose storage is not its own "
                          f"elements in order (or of symbolic sizes)")
    z, index, inner = Expr("z"), Expr(offset), 1
    for d, st in reversed(list(zip(size, stride))):
        index = index + (z // inner) % d * st
        inner *= d
    flat = cx.iota(index, inner)
    return env[x_node].reshape(-1).gather(0, flat).reshape(*size)


def _call(cx, node, env):
    if node.target in (aten.as_strided.default, aten.as_strided_copy.default):
        return _as_strided(cx, node, env)
    if node.target not in ATEN and _writes_in_place(node.target):
        return _in_place(cx, node, env)
    if node.target not in ATEN:
        raise Unsupported(reason(node.target))
    return _call_function(cx, node, node.target, env)


def _call_function(cx, node, target, env):
    """ATEN[target] on ``node``'s converted arguments."""
    fn = ATEN[target]
    args = [_arg(a, env) for a in node.args]
    if target in SIZED_BY_OUTPUT:
        args[1] = [sym_expr(d) for d in node.meta["val"].shape]
    kwargs = {k: _arg(v, env) for k, v in node.kwargs.items()
              if k not in ("device", "layout", "pin_memory", "memory_format",
                           "non_blocking")}
    if target in NEEDS_GRAPH:
        args = [cx] + args
    try:
        return fn(*args, **kwargs)
    except Unsupported:
        raise
    except Exception as e:  # a luminal error on these arguments: the reason, in one line
        raise Unsupported(f"{target}: {type(e).__name__}: {str(e).splitlines()[0]}") \
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
