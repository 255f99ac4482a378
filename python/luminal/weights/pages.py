"""release_pages: drops this process's pages of a weight read from a memory-mapped file (a
view of an ``np.memmap``, as the safetensors and GGUF readers give) once the runtime keeps the
weight only in a layout of its own (packed panels, quantized row groups): the file's pages
then no longer count twice in the process's memory. The mapping stays valid; a later read maps
the pages from the file again. Not the readers (weights/safetensors.py, weights/gguf.py) nor
the choice to call it (nn/module.py load_state_dict)."""

from __future__ import annotations

import mmap

import numpy as np


def _mapped_root(array: np.ndarray):
    """The np.memmap over the whole mapping that ``array`` views, or None."""
    node = array
    while isinstance(node, np.ndarray):
        if isinstance(node, np.memmap) and isinstance(node.base, mmap.mmap):
            return node
        node = node.base
    return None


def release_pages(array: np.ndarray) -> bool:
    """madvise(MADV_DONTNEED) over the whole pages of ``array``'s bytes when it views a
    memory-mapped file that nothing wrote (the readers map copy-on-write and never write); a
    no-op (False) for any other array, or where the system has no such advice."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    root = _mapped_root(array)
    if advice is None or root is None or array.nbytes == 0 or not array.flags.c_contiguous:
        return False
    base = root.__array_interface__["data"][0] - root.offset % mmap.ALLOCATIONGRANULARITY
    start = array.__array_interface__["data"][0] - base
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    end = (start + array.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
    if end <= first:
        return False
    root.base.madvise(advice, first, end - first)
    return True
