"""The weights readers' file maps (map_file) and release_pages, which drops this process's
pages of a weight read from one once the runtime keeps the weight only in a layout of its own
(packed panels, quantized row groups): the file's pages then no longer count twice in the
process's memory. The mapping stays valid; a later read maps the pages from the file again.
Only the readers' maps are released: they are copy-on-write and nothing writes them, where a
caller's own copy-on-write map may hold writes that dropping its pages would undo. Not the
readers (weights/safetensors.py, weights/gguf.py) nor the choice to call it (nn/module.py
load_state_dict)."""

from __future__ import annotations

import mmap

import numpy as np


class ReaderMap(np.memmap):
    """A file's bytes mapped copy-on-write by a weights reader, which never writes them (the
    core takes writable arrays only, hence not read-only)."""


def map_file(path: str) -> ReaderMap:
    return ReaderMap(path, dtype=np.uint8, mode="c")


def _mapped_root(array: np.ndarray):
    """The reader's map over the whole file that ``array`` views, or None."""
    node = array
    while isinstance(node, np.ndarray):
        if isinstance(node, ReaderMap) and isinstance(node.base, mmap.mmap):
            return node
        node = node.base
    return None


def release_pages(array: np.ndarray) -> bool:
    """madvise(MADV_DONTNEED) over the whole pages of ``array``'s bytes when it views a
    reader's map (map_file); a no-op (False) for any other array, or where the system has no
    such advice."""
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
