"""The Python side of the Metal backend that works on every system: the MSL a graph renders to
under a tuning choice, the Metal runtime's rules, and whether a Metal device is usable here.
The runtime class itself is luminal.MetalRuntime (runtime.py), which runs only on macOS."""

from __future__ import annotations

from . import _core


def available() -> bool:
    """Whether this build has the Metal runtime and the system an Apple GPU it runs on."""
    return bool(_core.metal_available())


def render(cx, choice: dict | None = None) -> str:
    """The MSL of graph ``cx``'s program as written (lowered without a search), each kernel
    rendered under the ``metal_*`` params of ``choice`` over its node's schedule."""
    tc = _core.TuningChoice()
    tc.params = sorted((choice or {}).items())
    return _core.metal_render(cx._g, tc)


def rewrite_rules() -> str:
    """The Metal runtime's lowering rules (csrc/runtime/rules/metal.rules)."""
    return _core.metal_rewrite_rules()
