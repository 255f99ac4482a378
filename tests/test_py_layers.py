"""The modules of python/luminal depend one way, as csrc/'s layers do (test_layers.py): this test
reads every import in the package with ``ast`` (at module level and inside functions; not those
under ``if TYPE_CHECKING:``, which never run), fails on an import of a layer above the
importer's, and fails on any import cycle between modules, function-local imports included.
Importing ``a.b.c`` also runs ``a/b/__init__.py``; that implicit import is not counted here."""

import ast
import os

PACKAGE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "python"))
# Bottom to top. A module belongs to the longest entry its name starts with; it may import its
# own layer and those below. The search's modules sit below graph.py (which calls them), except
# calibrate, whose probe graphs are built with Graph and luminal.nn; autograd sits below graph.py
# too (GraphTensor.backward calls it), the train step above nn.
LAYERS = [
    "luminal._core",  # the C++ extension
    "luminal._version",
    "luminal.errors",
    "luminal.dtype",
    "luminal.embedding",
    "luminal.linalg",
    "luminal.cuda",
    "luminal.runtime_threads",  # the runtime's guard against two threads at once
    "luminal.runtime",
    "luminal.hl_ops",
    "luminal.weights.quantize",
    "luminal.training.autograd_views",
    "luminal.training.autograd",
    "luminal.training.optim",
    "luminal.search",
    "luminal.graph",
    "luminal.precision",
    "luminal.weights",
    "luminal.nn",
    "luminal.training",
    "luminal.search.calibrate",
    "luminal.models",
    "luminal.fx",
    "luminal",  # the package's __init__: the public names
    "luminal.cli",
]


def _modules() -> dict:
    """{dotted name: path} of every module of the package (the extension with no path)."""
    out = {"luminal._core": None}
    for root, _, files in os.walk(os.path.join(PACKAGE, "luminal")):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            name = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".")
            out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _type_checking_only(tree) -> set:
    """The ids of the import nodes under ``if TYPE_CHECKING:``."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skipped.update(id(n) for n in ast.walk(inner))
    return skipped


def _known(name: str) -> str:
    """The longest module of the package that ``name`` (a module or a name in one) is in."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _targets(module: str, path: str, node) -> list:
    """The package's modules one import statement of ``module`` names."""
    if isinstance(node, ast.Import):
        return [_known(a.name) for a in node.names if a.name.split(".")[0] == "luminal"]
    if node.level:
        base = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
        if source.split(".")[0] != "luminal":
            return []
    return [_known(f"{source}.{a.name}") for a in node.names]


def _imports() -> dict:
    """{module: {imported module: line}} over the package, the module itself left out."""
    graph = {}
    for module, path in MODULES.items():
        graph[module] = {}
        if path is None:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        skipped = _type_checking_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
                for target in _targets(module, path, node):
                    if target != module:
                        graph[module].setdefault(target, node.lineno)
    return graph


def _layer(module: str) -> int:
    entries = [e for e in LAYERS if module == e or module.startswith(e + ".")]
    return LAYERS.index(max(entries, key=len)) if entries else -1


def test_every_module_is_in_a_layer():
    for module in MODULES:
        assert _layer(module) >= 0, f"{module} is in no layer of LAYERS"


def test_no_upward_import():
    upward = []
    for module, targets in _imports().items():
        for target, line in targets.items():
            if _layer(target) > _layer(module):
                where = f"{os.path.relpath(MODULES[module], PACKAGE)}:{line}"
                upward.append(f"{where}: {module} imports {target} "
                              f"({LAYERS[_layer(module)]} -> {LAYERS[_layer(target)]})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def _cycle(graph: dict):
    """One import cycle of ``graph`` as a list of modules (first = last), or None."""
    state = {}  # module -> "open" while on the DFS path, "done" after
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = "open"
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = "done"
                stack.pop()
            elif state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = "open"
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_import_cycle():
    cycle = _cycle(_imports())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b": 1}, "b": {}, "c": {"b": 1}}) is None


def test_the_cost_model_is_pure():
    """search.cost reaches no graph, nn or runtime, even through what it imports."""
    graph = _imports()
    reached, todo = set(), ["luminal.search.cost"]
    while todo:
        for target in graph[todo.pop()]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    banned = {m for m in reached if _known(m) in ("luminal.graph", "luminal.runtime")
              or m.startswith("luminal.nn")}
    assert not banned, f"luminal.search.cost reaches {sorted(banned)}"
