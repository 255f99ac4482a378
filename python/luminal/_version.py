"""The package's version, in a module of its own so that the layers below the package's
__init__ (the search cache's keys) can read it without importing the whole package."""

__version__ = "0.1.0"
