"""Unsupported: what the converter raises for a call luminal does not express; the backend
then runs that graph in PyTorch and reports the message."""


class Unsupported(Exception):
    """A call luminal does not express; its message is the one-line reason reported."""
