"""Where the C API lives in the installed package, for embedding luminal in C and C++ programs:
the header ``luminal.h`` and the shared library ``libluminal``. Only paths, not a build system:

    cc prog.c -I$(get_include) -L$(get_library_dir) -lluminal -Wl,-rpath,$(get_library_dir)
"""

from __future__ import annotations

import os


def _install_dir() -> str:
    """The folder CMake installed into: the one holding the compiled ``_core`` (which is also
    right for editable installs, where this file stays in the source tree)."""
    from . import _core

    return os.path.dirname(os.path.abspath(_core.__file__))


def get_include() -> str:
    """The folder holding ``luminal.h``: pass it to the C compiler with ``-I``."""
    return os.path.join(_install_dir(), "include")


def get_library_dir() -> str:
    """The folder holding ``libluminal``: pass it with ``-L`` and as the rpath."""
    return os.path.join(_install_dir(), "lib")
