"""High-level ops, built only from the 14 primitives. Each module is a mixin of GraphTensor
methods for one family of ops (unary, binary, movement, reduction, matmul)."""

from .binary import BinaryOps
from .matmul import MatmulOps
from .movement import IndexOps, MovementOps
from .nn_ops import NNOps
from .reduction import ReductionOps
from .sorting import SortingOps
from .unary import UnaryOps

__all__ = ["BinaryOps", "IndexOps", "MatmulOps", "MovementOps", "NNOps", "ReductionOps",
           "SortingOps", "UnaryOps"]
