"""Luminal: an ahead-of-time ML compiler. Build a lazy graph, search for the fastest
equivalent program on a runtime, run it.

    import luminal as lm
    cx = lm.Graph()
    a = cx.tensor((3, 1)); b = cx.tensor((1, 4))
    c = a.matmul(b).output()
    rt = cx.search(lm.NativeRuntime(), 1)
"""

import sys

from ._core import DType, Expr, ShapeTracker
from ._version import __version__
from .dtype import (
    bf16,
    bfloat16,
    bool_,
    f16,
    f32,
    float16,
    float32,
    half,
    i32,
    int32,
)
from .embedding import get_include, get_library_dir
from .errors import (
    CompileError,
    DeviceError,
    DTypeError,
    InternalError,
    LuminalError,
    ShapeError,
    WeightsError,
)
from .graph import Graph, GraphTensor
from .training.autograd import grad
from .training import optim  # torch.optim's place: luminal.optim (below)
from .hl_ops.tensor_utils import where
from .hl_ops.einsum import einsum
from .hl_ops.joining import cat, stack
from .hl_ops.sorting import bucketize, searchsorted
from .runtime import CpuRuntime, CudaRuntime, MetalRuntime, NativeRuntime, Runtime
from .precision import to_half
from . import linalg, metal

var_mean = GraphTensor.var_mean  # torch.var_mean(x, ...) as lm.var_mean(x, ...)
std_mean = GraphTensor.std_mean

# ``import luminal.optim`` and ``from luminal.optim.lr_scheduler import StepLR`` as with torch:
# the training package's optim and its submodules are importable under that name too.
for _name in [n for n in sys.modules if (n + ".").startswith(optim.__name__ + ".")]:
    sys.modules[__name__ + ".optim" + _name[len(optim.__name__):]] = sys.modules[_name]
del _name


def from_torch(module, example_inputs, dynamic_shapes=None):
    """A PyTorch module as a luminal graph with its weights (luminal.fx.export; needs
    torch)."""
    from .fx.export import from_torch as export

    return export(module, example_inputs, dynamic_shapes)

__all__ = [
    "CompileError", "CpuRuntime", "CudaRuntime", "DType", "DTypeError", "DeviceError", "Expr",
    "Graph", "GraphTensor", "InternalError", "LuminalError", "MetalRuntime", "NativeRuntime",
    "Runtime", "ShapeError", "ShapeTracker", "WeightsError",
    "bf16", "bfloat16", "bool_", "f16", "f32", "float16", "float32", "half", "i32", "int32",
    "bucketize", "cat", "einsum", "from_torch", "get_include", "grad", "get_library_dir",
    "linalg", "metal", "optim", "searchsorted", "stack", "std_mean", "to_half", "var_mean", "where",
]
