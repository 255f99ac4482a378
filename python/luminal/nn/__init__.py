"""luminal.nn: neural-network building blocks. ``luminal.nn.functional`` holds
torch.nn.functional's ops by the same names; modules with parameters may join it here."""

from . import functional
from .modules import *  # noqa: F401,F403  (Linear, Embedding, ..., the nn modules)
from .modules import __all__ as _modules_all

__all__ = ["functional"] + _modules_all
