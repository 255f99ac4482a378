"""The Python side of the CUDA runtime: where NVRTC and the CUBIN cache are, the options the
C++ runtime takes (it reads no environment), and whether a usable GPU is present. The runtime
class itself is luminal.CudaRuntime (runtime.py).
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os

from . import _core
from .errors import DeviceError

# Where the NVRTC wheels put the library, newest layout first.
_WHEEL_LIB_DIRS = ("cu13/lib", "cu12/lib", "cuda_nvrtc/lib")


def _nvrtc_in(directory: str) -> str | None:
    found = [p for p in glob.glob(os.path.join(directory, "libnvrtc.so*"))
             if "builtins" not in os.path.basename(p)]
    return sorted(found, key=len)[0] if found else None


def find_nvrtc() -> str:
    """The path of libnvrtc: from the ``nvidia-cuda-nvrtc`` wheel, else a CUDA toolkit
    (``CUDA_HOME``, ``CUDA_PATH``, /usr/local/cuda). "" lets the loader search its default
    names."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        for sub in _WHEEL_LIB_DIRS:
            path = _nvrtc_in(os.path.join(root, sub))
            if path:
                return path
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
                path = _nvrtc_in(os.path.join(home, sub))
                if path:
                    return path
    return ""


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "luminal", "cuda")


def cuda_options(nvrtc_library: str | None = None, cache_dir: str | None = None, device: int = 0,
                 driver_library: str | None = None) -> _core.CudaOptions:
    """The C++ runtime's options; None means: find NVRTC, use the default cache directory,
    load the driver as $LUMINAL_CUDA_DRIVER or libcuda.so.1."""
    o = _core.CudaOptions()
    o.driver_library = driver_library or os.environ.get("LUMINAL_CUDA_DRIVER", "libcuda.so.1")
    o.nvrtc_library = find_nvrtc() if nvrtc_library is None else nvrtc_library
    o.cache_dir = default_cache_dir() if cache_dir is None else cache_dir
    o.device = device
    return o


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    """True when the driver loads, reports a device and NVRTC is found."""
    try:
        _core.CudaRuntime(cuda_options(cache_dir=""))
    except DeviceError:
        return False
    return True


def codegen_check(graph, arch: str = "sm_90", choice: dict | None = None,
                  nvrtc_library: str | None = None, cache_dir: str | None = None) -> str:
    """Renders ``graph``'s CUDA program and compiles it with NVRTC for ``arch``, without a
    device. Returns the source; raises CompileError if NVRTC rejects it."""
    options = cuda_options(nvrtc_library, "" if cache_dir is None else cache_dir)
    return _core.cuda_codegen_check(graph._g, arch, options, _tuning(choice))


def codegen_check_batch(graphs, arch: str = "sm_90", choice: dict | None = None,
                        nvrtc_library: str | None = None, cache_dir: str | None = None) -> str:
    """codegen_check for many graphs in one NVRTC translation unit (one compile)."""
    options = cuda_options(nvrtc_library, "" if cache_dir is None else cache_dir)
    return _core.cuda_codegen_check_batch([g._g for g in graphs], arch, options,
                                          _tuning(choice))


def _tuning(params: dict | None) -> _core.TuningChoice:
    tc = _core.TuningChoice()
    tc.params = sorted((params or {}).items())
    return tc


def render(graph, arch: str = "sm_90", choice: dict | None = None,
           fixed: dict | None = None) -> str:
    """The CUDA source of ``graph``'s program, not compiled: each kernel under ``choice``,
    overridden by its node's schedule (the runtime's rules attach them), overridden by
    ``fixed`` (what ``CudaRuntime(choice=...)`` fixes)."""
    return _core.cuda_render(graph._g, arch, _tuning(choice), _tuning(fixed))


def rewrite_rules(arch: str = "sm_90") -> str:
    """The lowering rules CudaRuntime adds to the search's e-graph on a device of ``arch``
    (csrc/runtime/rules/cuda*.rules: reduction strategies, matmul mappings, tensor cores from
    sm_80 on), readable without a GPU."""
    if not arch.startswith("sm_") or not arch[3:].isdigit():
        raise ValueError(f"arch '{arch}' is not sm_XX")
    return _core.cuda_rewrite_rules(int(arch[3:]))
