"""Whether a tensor shape a weights file declares can be a numpy array: numpy refuses a shape
whose non-zero dims multiply past its index range even when a zero dim empties it, so a
reader checks this before numpy sees the shape. Not the readers' byte-count checks."""

from __future__ import annotations

import math

import numpy as np

_MAX_BYTES = int(np.iinfo(np.intp).max)


def numpy_can_hold(shape, itemsize: int) -> bool:
    """True when every dim and the product of the non-zero dims, times ``itemsize``, fit
    numpy's index range (the test np.zeros(shape) makes)."""
    return math.prod(d for d in shape if d) * itemsize <= _MAX_BYTES
