"""A benchmark side in its own process (its own threads, caches and peak RSS): the child prints
one line `RESULT <json>`, the parent runs it and reads that line back."""

from __future__ import annotations

import json
import subprocess
import sys


def run_for_result(cmd: list, env: dict | None = None, **on_error) -> dict:
    """Runs ``cmd`` and returns the JSON of its RESULT line; without one, writes the tail of
    its output to stderr and returns ``{"error": "exit N", **on_error}``."""
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
    return {**on_error, "error": f"exit {done.returncode}"}
