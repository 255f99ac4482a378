"""Past one device: the communicator luminal's multi-process programs talk through. It wraps a
torch.distributed process group (Gloo on CPUs, NCCL on GPUs; the processes launched by
``torchrun``), so there is no transport of luminal's own. Arrays cross as float32 or int32
numpy arrays. ``init()`` joins the group torchrun's environment describes."""

from __future__ import annotations

import os

import numpy as np

from .errors import DeviceError, ShapeError


def _torch_distributed():
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:  # torch is not a dependency of luminal itself
        raise DeviceError("luminal.distributed needs torch (pip install torch): it runs over "
                          "torch.distributed") from e
    if not dist.is_available():
        raise DeviceError("luminal.distributed: this torch build has no torch.distributed")
    return torch, dist


def init(backend: str | None = None) -> Communicator:
    """Joins (or reuses) torch.distributed's default process group as torchrun sets it up
    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment); ``backend`` defaults to
    Gloo (the CPU runtime's). Raises DeviceError outside torchrun. Call the communicator's
    close() when done: Gloo's threads must end before the interpreter does."""
    _, dist = _torch_distributed()
    if not dist.is_initialized():
        missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
                   if v not in os.environ]
        if missing:
            raise DeviceError(f"luminal.distributed.init: {', '.join(missing)} not set; run "
                              f"under torchrun (torchrun --nproc-per-node N script.py ...)")
        dist.init_process_group(backend or "gloo")
    return Communicator()


class _Sending:
    """A send in flight and the tensor it reads, kept alive until wait() returns."""

    def __init__(self, work, tensor):
        self._work, self._tensor = work, tensor

    def wait(self) -> None:
        self._work.wait()
        self._tensor = None


class Communicator:
    """Point-to-point and collective transfers of numpy arrays within a torch.distributed
    process group (the default one unless ``group`` is given)."""

    def __init__(self, group=None):
        self._torch, self._dist = _torch_distributed()
        if not self._dist.is_initialized():
            raise DeviceError("Communicator: torch.distributed is not initialized (call "
                              "luminal.distributed.init() under torchrun)")
        self.group = group
        self.rank = self._dist.get_rank(group)
        self.world_size = self._dist.get_world_size(group)

    def _tensor(self, array):
        array = np.asarray(array)
        dtype = np.int32 if np.issubdtype(array.dtype, np.integer) else np.float32
        return self._torch.from_numpy(np.ascontiguousarray(array, dtype))

    def send(self, array, dst: int) -> None:
        self._dist.send(self._tensor(array), dst, group=self.group)

    def isend(self, array, dst: int):
        """Starts sending ``array``; returns the request, whose wait() ends it (the array is
        kept until then)."""
        tensor = self._tensor(array)
        return _Sending(self._dist.isend(tensor, dst, group=self.group), tensor)

    def recv(self, shape, src: int, dtype=np.float32) -> np.ndarray:
        out = self._torch.from_numpy(np.empty(tuple(shape), dtype))
        self._dist.recv(out, src, group=self.group)
        return out.numpy()

    def broadcast(self, array, src: int, shape, dtype=np.float32) -> np.ndarray:
        """``array`` of rank ``src`` on every rank (the others pass None and its shape)."""
        t = self._tensor(array) if self.rank == src else \
            self._torch.from_numpy(np.empty(tuple(shape), dtype))
        self._dist.broadcast(t, src, group=self.group)
        return t.numpy()

    def all_reduce(self, array) -> np.ndarray:
        """The sum over the ranks of their ``array`` (float32), on every rank."""
        t = self._tensor(array).clone()
        self._dist.all_reduce(t, group=self.group)
        return t.numpy()

    def all_gather(self, array, axis: int = -1) -> np.ndarray:
        """The ranks' ``array`` (one shape on all) joined along ``axis``, rank order."""
        t = self._tensor(array)
        parts = [self._torch.empty_like(t) for _ in range(self.world_size)]
        self._dist.all_gather(parts, t, group=self.group)
        return np.concatenate([p.numpy() for p in parts], axis=axis)

    def close(self) -> None:
        """Leaves the process group (every rank, once its last transfer is done)."""
        if self._dist.is_initialized():
            self._dist.destroy_process_group(self.group)

    def agree(self, value, what: str) -> None:
        """Raises ShapeError on every rank unless all ranks pass an equal ``value`` (what the
        ranks built their programs for: shapes, layer counts)."""
        values = [None] * self.world_size
        self._dist.all_gather_object(values, value, group=self.group)
        if any(v != values[0] for v in values):
            seen = ", ".join(f"rank {r}: {v}" for r, v in enumerate(values))
            raise ShapeError(f"the ranks disagree on {what}: {seen}")
