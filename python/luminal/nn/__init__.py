"""luminal.nn: neural-network building blocks. ``luminal.nn.functional`` holds
torch.nn.functional's ops by the same names; modules with parameters may join it here."""

from . import functional

__all__ = ["functional"]
