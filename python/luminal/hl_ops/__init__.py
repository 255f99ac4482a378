"""High-level ops, built only from the 14 primitives. Each module is a mixin of GraphTensor
(or Graph, for creation) methods for one family of ops (unary, binary, movement, reduction,
matmul, ...); shape_utils.py and tensor_utils.py hold the helpers they share."""

from .binary import BinaryOps
from .creation import CreationOps
from .indexing import IndexOps
from .matmul import MatmulOps
from .movement import MovementOps
from .nn_ops import NNOps
from .reduction import ReductionOps
from .scatter import ScatterOps
from .sorting import SortingOps
from .unary import UnaryOps

__all__ = ["BinaryOps", "CreationOps", "IndexOps", "MatmulOps", "MovementOps", "NNOps",
           "ReductionOps", "ScatterOps", "SortingOps", "UnaryOps"]
