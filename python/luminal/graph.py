"""Graph and GraphTensor: the lazy graph a user builds.

A GraphTensor is a node of the C++ graph read through a view (ShapeTracker). Movement ops
change only the view; every other op adds primitive nodes. High-level ops come from the
mixins in ``luminal.hl_ops``; this file holds only the primitive emitters they build on.
Nothing here runs anything: runtimes do that after ``search``.
"""

from __future__ import annotations

from typing import Iterable, Union

from . import _core
from . import dtype as dt
from ._core import DType, Expr, OpKind, ShapeTracker
from .errors import ShapeError
from .hl_ops import (
    BinaryOps,
    CreationOps,
    IndexOps,
    MatmulOps,
    MovementOps,
    NNOps,
    ReductionOps,
    ScatterOps,
    SortingOps,
    UnaryOps,
)
from .hl_ops.shape_utils import py_dim

Dim = Union[int, str, Expr]


def _to_expr(d: Dim, what: str) -> Expr:
    if isinstance(d, bool) or not isinstance(d, (int, str, Expr)):
        raise ShapeError(f"{what}: dimension {d!r} must be an int, a symbol name or an Expr")
    if isinstance(d, int) and d < 0:
        raise ShapeError(f"{what}: dimension {d} is negative")
    if isinstance(d, str):
        if not d.isidentifier() or d == "z":
            raise ShapeError(f"{what}: {d!r} is not a usable symbol name ('z' is reserved)")
        return Expr(d)
    return Expr(d) if isinstance(d, int) else d


class GraphTensor(UnaryOps, BinaryOps, MovementOps, IndexOps, ScatterOps, ReductionOps,
                  MatmulOps, NNOps, SortingOps):
    """A lazy tensor: node ``id`` of ``graph``, read through the view ``st`` (ShapeTracker)."""

    __slots__ = ("graph", "id", "st", "dtype", "grad")

    def __init__(self, graph: Graph, node_id: int, view: ShapeTracker, dtype: DType):
        self.graph = graph
        self.id = node_id
        self.st = view
        self.dtype = dtype
        self.grad = None  # set by backward() on tensors that ask for a gradient

    # ---- facts -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(py_dim(d) for d in self.st.dims)

    @property
    def ndim(self) -> int:
        return self.st.rank()

    def dim(self) -> int:
        return self.st.rank()

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[self._axis(dim, "size")]

    def numel(self):
        return py_dim(self.st.numel())

    @property
    def name(self) -> str:
        return self.graph._g.node_name(self.id)

    @property
    def is_parameter(self) -> bool:
        """Whether this is a parameter: an input made with ``cx.tensor(..., parameter=True)``."""
        return self.graph._g.node_op(self.id) == OpKind.Input and \
            self.graph._g.node_parameter(self.id)

    def __repr__(self) -> str:
        shape = ", ".join(str(d) for d in self.shape)
        return f"GraphTensor(shape=({shape}), dtype={dt.name(self.dtype)}, node=%{self.id})"

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        first = self.shape[0]
        if not isinstance(first, int):
            raise TypeError(f"len() of a tensor whose first dim is symbolic ({first})")
        return first

    def __bool__(self):
        raise TypeError("a GraphTensor is lazy and has no truth value; compare after execute")

    def output(self) -> GraphTensor:
        """Marks this tensor as a result the runtime keeps; returns it."""
        self.graph._g.output(self.id, self.st)
        return self

    # ---- gradients (luminal.training.autograd) ----------------------------------------------------
    def requires_grad_(self) -> GraphTensor:
        """Asks ``backward()`` to record this tensor's gradient in ``.grad`` (parameters ask
        already); returns it."""
        if all(t is not self for t in self.graph._grad_tensors):
            self.graph._grad_tensors.append(self)
        return self

    def detach(self) -> GraphTensor:
        """torch's detach: the same values, through which no gradient flows back. A Cast of
        the node to its own dtype through its identity view (which the search removes, so it
        costs nothing at run time), marked for luminal.training.autograd, read through this view."""
        g = self.graph._g
        whole = GraphTensor(self.graph, self.id, ShapeTracker.contiguous(g.node_shape(self.id)),
                            self.dtype)
        copy = whole._cast(self.dtype)
        self.graph._detached.add(copy.id)
        return copy._with_view(self.st)

    def backward(self, gradient: GraphTensor | None = None) -> None:
        """Adds this tensor's gradient graph and sets ``.grad`` on the tensors that ask
        (luminal.training.autograd.backward)."""
        from .training.autograd import backward

        backward(self, gradient)

    # ---- primitive emitters -------------------------------------------------------------
    def _new(self, node_id: int, dims=None) -> GraphTensor:
        g = self.graph._g
        shape = g.node_shape(node_id) if dims is None else dims
        view = ShapeTracker.contiguous(shape)
        return GraphTensor(self.graph, node_id, view, g.node_dtype(node_id))

    def _with_view(self, view: ShapeTracker) -> GraphTensor:
        return GraphTensor(self.graph, self.id, view, self.dtype)

    def _unary(self, op: OpKind) -> GraphTensor:
        return self._new(self.graph._g.unary(op, self.id, self.st))

    def _binary(self, op: OpKind, other: GraphTensor) -> GraphTensor:
        self.graph._check_owns(other)
        return self._new(self.graph._g.binary(op, self.id, self.st, other.id, other.st))

    def _reduce(self, op: OpKind, axis: int) -> GraphTensor:
        return self._new(self.graph._g.reduce(op, self.id, self.st, axis))

    def _gather(self, indices: GraphTensor) -> GraphTensor:
        self.graph._check_owns(indices)
        g = self.graph._g
        return self._new(g.gather(self.id, self.st, indices.id, indices.st))

    def _cast(self, dtype: DType) -> GraphTensor:
        return self._new(self.graph._g.cast(self.id, self.st, dtype))

    def _axis(self, axis: int, op: str) -> int:
        n = self.ndim
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ShapeError(f"{op}: dim must be an int, got {axis!r}")
        if not -max(n, 1) <= axis < max(n, 1):
            raise ShapeError(f"{op}: dim {axis} is out of range for shape {self.shape}")
        return axis % max(n, 1)

    def contiguous(self) -> GraphTensor:
        """A copy laid out row-major (a Cast to its own dtype)."""
        return self._cast(self.dtype)

    def to(self, dtype) -> GraphTensor:
        dtype = dt.to_dtype(dtype)
        return self if dtype == self.dtype else self._cast(dtype)

    def float(self) -> GraphTensor:
        return self.to(dt.float32)

    def half(self) -> GraphTensor:
        return self.to(dt.float16)

    def bfloat16(self) -> GraphTensor:
        return self.to(dt.bfloat16)

    def int(self) -> GraphTensor:
        return self.to(dt.int32)

    def bool(self) -> GraphTensor:
        return self.to(dt.bool_)

    def _scalar_like(self, value, dtype: DType | None = None) -> GraphTensor:
        return self.graph.constant(value, dtype or self.dtype)


class Graph(CreationOps):
    """A static, lazy computation graph. Build tensors and ops, mark outputs, then search."""

    def __init__(self):
        self._g = _core.Graph()
        self.dyn_map: dict[str, int] = {}
        self._search_space = None
        self._input_count = 0
        self.last_search_report = None  # the report of the last search (luminal.search)
        self._grad_tensors = []  # tensors backward() records .grad on: parameters, requires_grad_
        self._gather_layouts = {}  # Gather node id -> its axis layout, for its gradient (autograd)
        self._detached = set()  # node ids no gradient flows back through (GraphTensor.detach)
        self._random = None  # the RandomState of random_state(), once used

    def tensor(self, shape: Iterable[Dim] | Dim, dtype=dt.float32, name: str | None = None,
               parameter: bool = False):
        """A new input of ``shape`` (ints and symbol names) and ``dtype``. A ``parameter`` (a
        weight) keeps its data across executions, so a runtime may lay it out once, when its
        data is set (CpuRuntime packs it into the panels its GEMM reads)."""
        if isinstance(shape, (int, str, Expr)):
            shape = (shape,)
        dims = [_to_expr(d, f"tensor {name or ''}".strip()) for d in shape]
        if name is None:
            name = f"input{self._input_count}"
        self._input_count += 1
        dtype = dt.to_dtype(dtype)
        node = self._g.input(name, dims, dtype, bool(parameter))
        tensor = GraphTensor(self, node, ShapeTracker.contiguous(dims), dtype)
        if parameter and dt.is_float(dtype):
            self._grad_tensors.append(tensor)
        return tensor

    def named_tensor(self, name: str, shape, dtype=dt.float32):
        return self.tensor(shape, dtype, name)

    def constant(self, value, dtype=None) -> GraphTensor:
        """A scalar (shape ()) constant; ints and Exprs may be symbolic (``Expr('s')``)."""
        if isinstance(value, Expr):
            dtype = dt.to_dtype(dtype or dt.int32)
            node = self._g.constant_expr(value, dtype)
        else:
            if dtype is None:
                dtype = dt.scalar_dtype(value, dt.float32 if isinstance(value, float) else dt.int32)
            dtype = dt.to_dtype(dtype)
            node = self._g.constant(float(value), dtype)
        return GraphTensor(self, node, ShapeTracker.contiguous([]), dtype)

    def iota(self, expr: Dim, length: Dim) -> GraphTensor:
        """Int tensor of shape (length,) whose element i is ``expr`` with symbol z = i."""
        expr = Expr(expr) if not isinstance(expr, Expr) else expr
        length = _to_expr(length, "iota")
        node = self._g.iota(expr, length)
        return GraphTensor(self, node, ShapeTracker.contiguous([length]), dt.int32)

    def random_state(self):
        """This graph's running random counter (hl_ops.random_bits.RandomState), made on first
        use: the random numbers of training-mode dropout, new on every execute."""
        if self._random is None:
            from .hl_ops.random_bits import RandomState

            self._random = RandomState(self)
        return self._random

    def set_dim(self, name: str, value: int) -> None:
        """Binds symbol ``name`` to ``value`` in ``dyn_map``."""
        if not isinstance(name, str) or not name.isidentifier() or name == "z":
            raise ShapeError(f"set_dim: {name!r} is not a symbol name ('z' is reserved)")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise ShapeError(f"set_dim: symbol '{name}' needs a non-negative int below 2**63, "
                             f"got {value!r}")
        self.dyn_map[name] = value

    def symbols(self) -> list[str]:
        return self._g.symbols()

    def build_search_space(self, runtime_type, *, iterations: int = 12, nodes: int = 20000,
                           seconds: float = 2.0, float_reassociation: bool = False) -> None:
        """Collects the programs ``runtime_type`` could run for this graph: an e-graph of the
        graph under the generic rewrite rules and the runtime's own (csrc/egraph). The limits
        bound the saturation. The e-graph is built by the first ``search`` that does not find
        its answer in the search cache, so a cached graph costs nothing here.
        ``float_reassociation`` adds the opt-in rule set csrc/egraph/rules/opt_in/
        float_reassoc.rules (float reassociation, distribution, any constant scale into a
        matmul): programs that round differently, each still checked like every candidate."""
        from .runtime import Runtime
        from .search.driver import SearchLimits, SpaceSpec

        if not (isinstance(runtime_type, type) and issubclass(runtime_type, Runtime)):
            raise TypeError(f"build_search_space takes a runtime class, got {runtime_type!r}")
        if not self._g.outputs():
            raise ShapeError("build_search_space: the graph has no outputs; call .output()")
        self._search_space = SpaceSpec(runtime_type, SearchLimits(iterations, nodes, seconds,
                                                                  float_reassociation))

    def search(self, runtime, budget: int = 1, *, seed: int = 0, progress=None,
               cache: bool = True, cache_dir: str | None = None, verify: bool = True,
               verbose: bool = False, time_limit: float | None = None,
               reference: str = "auto", cost_model="auto", descent: int = 0,
               descent_seconds: float | None = None):
        """Finds a fast program for this graph on ``runtime`` and returns the runtime loaded
        with it, ready for set_data / execute. Parameters whose data was set on ``runtime``
        before are set again on the program it loads (from the same arrays); other inputs must
        be set again.

        Up to ``budget`` candidates (programs from the search space, best-first by the cost
        model, times the runtime's tuning choices; distinct by the code the runtime would run,
        duplicates skipped) are compiled, checked against the reference interpreter on several
        input sets (random ones of ``seed``, at the search's dims and at a second binding of
        them; also large magnitudes, exp2's edge, large ints, zeros; a big graph kernel by
        kernel) and timed; the finalists are re-timed together, and the cost
        model's pick stays unless a challenger is faster by more than the measured spread.
        Budget 1 takes the cost model's pick untimed. The choice is cached on disk (``cache_dir``,
        default ~/.cache/luminal/search; ``cache=False`` to bypass). ``progress``: None shows
        the step under way and the candidates done on a terminal's stderr once a search runs
        over a second (in place; nothing into a pipe or log), True always (into a pipe, a line
        per candidate), False never. ``verbose`` prints the
        report, which is also kept as ``cx.last_search_report``. ``time_limit`` (seconds)
        stops checking and timing further candidates once spent (at least one is tried).
        ``reference``: what candidates are checked against: "native" (the interpreter,
        output by output), "kernels" (the interpreter, kernel by kernel: each kernel's output
        at sampled elements from the operands it read), "runtime" (this runtime running the
        graph as written) or "auto" (native unless the graph is too big for the interpreter,
        then kernels where the runtime can check them; see luminal.search.check). ``cost_model``: the
        calibrated model that orders the candidates (luminal.search.cost; "auto": the one
        calibrated for this machine, if any, next to the search cache; None: the e-graph's
        cost only). ``descent``: up to this many more candidates, within ``descent_seconds``,
        from the fastest timed by changing its kernels' choices (luminal.search.descent)."""
        from .runtime import Runtime
        from .search.driver import search

        if not isinstance(runtime, Runtime):
            raise TypeError(f"search takes a runtime instance, got {runtime!r}")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"search: budget must be a positive int, got {budget!r}")
        if self._search_space is None:
            self.build_search_space(type(runtime))
        elif not isinstance(runtime, self._search_space.runtime_type):
            raise TypeError(f"search space was built for "
                            f"{self._search_space.runtime_type.__name__}, "
                            f"not {type(runtime).__name__}")
        return search(self, runtime, budget, seed=seed, progress=progress, cache=cache,
                      cache_dir=cache_dir, verify=verify, verbose=verbose,
                      time_limit=time_limit, reference=reference, cost_model=cost_model,
                      descent=descent, descent_seconds=descent_seconds)

    def _check_owns(self, t) -> None:
        if not isinstance(t, GraphTensor):
            raise TypeError(f"expected a GraphTensor, got {type(t).__name__}")
        if t.graph is not self:
            raise ShapeError(f"{t!r} belongs to another graph")

    def __str__(self) -> str:
        return str(self._g)

    def __len__(self) -> int:
        return len(self._g)
