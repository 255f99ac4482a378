"""One runtime shared by threads: a lock that lets one call at a time into the core, and the
bookkeeping that refuses a call from one thread that would mix into another thread's
set_data -> execute -> get sequence (a LuminalError saying what to do, never a wrong result).
Not here: what the calls do (runtime.py)."""

from __future__ import annotations

import threading
from threading import get_ident

from .errors import LuminalError

_ADVICE = ("use one runtime per thread, or hold `with rt.sequence():` (or a lock of your own) "
           "around each set_data ... get")


def _running(ident):
    """The thread of id ``ident`` if it is still running (only asked on a conflict)."""
    return next((t for t in threading.enumerate() if t.ident == ident), None)


class SequenceGuard:
    """A runtime's lock and the threads its state belongs to, by thread id. A sequence is a
    thread's set_data calls (parameters aside: they stay set across sequences), its execute,
    and its gets of what that execute produced. Threads that have ended own nothing, so a
    sequential hand-off (thread A's whole sequence, then thread B's) always works. Each check
    is a compare of ids unless two threads meet."""

    def __init__(self, runtime_name: str):
        self.runtime_name = runtime_name
        self.lock = threading.RLock()  # held by every call, and through a whole sequence()
        self._inputs_by = None   # the thread whose set_data calls no execute has run yet
        self._outputs_by = None  # the thread whose execute produced the outputs held now
        self._executing = None   # the thread inside execute now (None: none)
        self._depth = 0          # sequence() blocks the lock holder is inside

    def _check(self, owner, op: str, what: str) -> None:
        """Refuses the call when ``owner`` is another thread that is still running."""
        if owner is None or owner == get_ident():
            return
        other = _running(owner)
        if other is None:
            return
        me = threading.current_thread()
        raise LuminalError(f"{op}: this {self.runtime_name} runtime is being used from two "
                           f"threads at once: {what} thread '{other.name}', and this call from "
                           f"thread '{me.name}' would mix into its set_data/execute/get "
                           f"sequence; {_ADVICE}")

    def acquire_for_set(self, op: str, claims: bool) -> None:
        """Takes the lock for a set_data (released by the caller): refused while another
        thread is inside execute, and (``claims``: a non-parameter input) while another
        thread's inputs wait for their execute."""
        if not self.lock.acquire(False):
            self._check(self._executing, op, "an execute is running in")
            self.lock.acquire()
        if claims:
            try:
                self._check(self._inputs_by, op, "inputs were set and not executed yet by")
            except LuminalError:
                self.lock.release()
                raise

    def claim_inputs(self) -> None:
        """Under the lock, after a set_data of a non-parameter input."""
        self._inputs_by = get_ident()

    def check_outputs(self, op: str) -> None:
        """Under the lock: the outputs were produced by this thread's execute."""
        self._check(self._outputs_by, op, "the outputs held now were produced by an execute in")

    def begin_execute(self) -> None:
        """Under the lock, before the core's execute: the inputs must be this thread's."""
        self._check(self._inputs_by, "execute", "inputs were set and not executed yet by")
        self._executing = get_ident()

    def end_execute(self) -> None:
        """After the core's execute (done or failed): the inputs' sequence ends there and the
        outputs become this thread's."""
        self._outputs_by = self._executing
        self._executing = None
        self._inputs_by = None

    def sequence(self):
        """``with guard.sequence():`` (runtime.sequence's)."""
        return _Sequence(self)


class _Sequence:
    """The lock held throughout: other threads' calls wait until the block ends. Inputs set in
    it and not executed are left as they are, owned by no thread."""

    __slots__ = ("guard",)

    def __init__(self, guard: SequenceGuard):
        self.guard = guard

    def __enter__(self):
        guard = self.guard
        guard.lock.acquire()
        if guard._depth == 0:
            try:
                guard._check(guard._inputs_by, "sequence", "inputs were set and not executed "
                                                           "yet by")
            except LuminalError:
                guard.lock.release()
                raise
        guard._depth += 1
        return self

    def __exit__(self, *exc):
        guard = self.guard
        guard._depth -= 1
        if guard._depth == 0 and guard._inputs_by == get_ident():
            guard._inputs_by = None
        guard.lock.release()
        return False
