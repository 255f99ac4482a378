"""The layers of csrc/ depend one way: core -> ir -> egraph -> kernel -> codegen -> runtime,
then api and bind on top. A file may include its own layer and the ones below it, never one
above: this test reads every #include "..." in csrc/ and fails on an upward one. CMake builds
each layer as its own library linking only downward, so an upward call does not link either."""

import os
import re

import pytest

CSRC = os.path.join(os.path.dirname(__file__), "..", "csrc")
LAYERS = ["core", "ir", "egraph", "kernel", "codegen", "runtime", "api", "bind"]
# api and bind are siblings on top: neither includes the other.
SIBLINGS = {("api", "bind"), ("bind", "api")}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _sources():
    for root, _, files in os.walk(CSRC):
        for f in sorted(files):
            if f.endswith((".h", ".cc", ".mm", ".def")):
                path = os.path.join(root, f)
                yield os.path.relpath(path, CSRC), path


def _layer(rel: str) -> str:
    return rel.split(os.sep)[0].split("/")[0]


def test_every_file_is_in_a_layer():
    for rel, _ in _sources():
        assert _layer(rel) in LAYERS, f"csrc/{rel} is in no layer of {LAYERS}"


def _includes():
    for rel, path in _sources():
        with open(path) as f:
            for target in INCLUDE.findall(f.read()):
                yield rel, target


def test_no_upward_include():
    upward = []
    for rel, target in _includes():
        src, dst = _layer(rel), _layer(target)
        if dst not in LAYERS:
            continue  # a generated or third-party header
        if (src, dst) in SIBLINGS or LAYERS.index(dst) > LAYERS.index(src):
            upward.append(f"csrc/{rel} includes {target} ({src} -> {dst})")
    assert not upward, "upward includes:\n" + "\n".join(upward)


@pytest.mark.parametrize("layer", ["core", "ir", "egraph", "kernel", "codegen"])
def test_lower_layers_touch_no_vendor_api(layer):
    """Only a runtime backend touches its vendor API; only bind includes nanobind."""
    for rel, path in _sources():
        if _layer(rel) != layer:
            continue
        with open(path) as f:
            text = f.read()
        for banned in ("<cuda.h>", "<nvrtc.h>", "<nanobind/", "<Metal/", "<dlfcn.h>"):
            assert banned not in text, f"csrc/{rel} includes {banned}"
