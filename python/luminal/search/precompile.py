"""The candidates' kernels compiled ahead: as the extraction takes each distinct candidate,
its kernels go to the runtime's compilers (Runtime.precompile, on a thread of its own with
the GIL released) while the search goes on lowering the next ones and drawing the check's
inputs. attempt_each waits for all of them before the first candidate runs, so no compiler
runs beside a timed run; each candidate's compile is then its link and load."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..errors import LuminalError


class Precompiler:
    def __init__(self, core_rt):
        self.core_rt = core_rt
        self.pool = None
        self.futures = []
        self.seen = set()  # fingerprints sent

    def add(self, prepared) -> None:
        """Compiles ``prepared``'s kernels in the background (once per fingerprint)."""
        if prepared is None or prepared.fingerprint in self.seen:
            return
        self.seen.add(prepared.fingerprint)
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=1)
        self.futures.append(self.pool.submit(self._compile, prepared))

    def _compile(self, prepared) -> None:
        try:
            self.core_rt.precompile(prepared)
        except LuminalError:
            pass  # the candidate's own compile fails again, and says why

    def wait(self) -> None:
        """Returns once every compile sent has finished."""
        for f in self.futures:
            f.result()
        self.futures = []
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
