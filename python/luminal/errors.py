"""The exceptions luminal raises, from Python and from the C++ core alike.

Every error is a ``LuminalError``; shape and dtype errors are also ``ValueError`` and
``TypeError`` so code written for PyTorch catches them the same way.
"""


class LuminalError(Exception):
    """Base class of every luminal error."""


class ShapeError(LuminalError, ValueError):
    """Shapes that do not fit, bad axes, wrong data sizes, unbound or unknown symbols."""


class DTypeError(LuminalError, TypeError):
    """A dtype an op cannot take."""


class CompileError(LuminalError):
    """Generating or compiling a program failed."""


class DeviceError(LuminalError):
    """A device or its driver is missing or failed."""


class InternalError(LuminalError):
    """A broken invariant inside luminal: a bug, please report it."""


class WeightsError(LuminalError, ValueError):
    """A weight file that is corrupt or truncated, or whose tensors do not fit the model."""
