"""The on-disk search cache: one JSON file per key holding the chosen program's text and
tuning choice. Writes are atomic (a temp file, then rename), so two processes can search the
same graph at once; an entry that fails its checksum or does not parse is ignored and
rebuilt, never trusted. Not a general key-value store.

Key: sha256 over the graph's canonical text (numbered by a DFS from the outputs, inputs by
position: independent of node numbering and of input names), the runtime's name, the device,
the luminal version and core build (core_identity) and the text of every rewrite rule in use.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile

FORMAT = 1


def default_dir() -> str:
    """LUMINAL_SEARCH_CACHE if set (the test suite points it at a temp dir), else
    ~/.cache/luminal/search."""
    return os.environ.get("LUMINAL_SEARCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "luminal", "search")


def device_name(runtime) -> str:
    """The device a runtime runs on: its own ``device`` if it has one, else the host CPU."""
    device = getattr(runtime, "device", None)
    if isinstance(device, str) and device:
        return device
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.machine()} {model or platform.processor()}".strip()


def core_identity() -> str:
    """The luminal version and the build of its core (each compiled library's size and
    modification time): a rebuilt core (an editable install's rebuild on import) may rank,
    lower or render programs otherwise, so what a search found with another build is not
    reused. One build's identity is the same in every process."""
    from .. import _core
    from .._version import __version__

    here = os.path.dirname(os.path.abspath(_core.__file__))
    parts = [__version__]
    for path in (_core.__file__, os.path.join(here, "lib", "libluminal.so")):
        try:
            st = os.stat(path)
        except OSError:
            continue
        parts.append(f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns}")
    return " ".join(parts)


def make_key(graph_text: str, runtime_name: str, device: str, version: str, rules: str) -> str:
    h = hashlib.sha256()
    for part in (f"format {FORMAT}", graph_text, runtime_name, device, version, rules):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _checksum(entry: dict) -> str:
    body = json.dumps({k: v for k, v in entry.items() if k != "checksum"}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def load(cache_dir: str, key: str) -> dict | None:
    """The entry for ``key``, or None when absent or not trustworthy (corrupt, wrong key)."""
    path = os.path.join(cache_dir, key + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or entry.get("format") != FORMAT:
        return None
    if entry.get("checksum") != _checksum(entry):
        return None
    if not isinstance(entry.get("program"), str) or not isinstance(entry.get("choice"), list):
        return None
    if not isinstance(entry.get("budget"), int):
        return None
    return entry


def store(cache_dir: str, key: str, program: str, choice: list, budget: int, info: dict) -> str:
    """Writes the entry atomically; returns its path."""
    os.makedirs(cache_dir, exist_ok=True)
    entry = {"format": FORMAT, "key": key, "program": program, "choice": choice,
             "budget": budget, "info": info}
    entry["checksum"] = _checksum(entry)
    path = os.path.join(cache_dir, key + ".json")
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entry, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
