"""Runs pytest on a core built with AddressSanitizer and UndefinedBehaviorSanitizer (`make
test-asan`): assembles a luminal package from python/luminal and the sanitized build's
_core and libluminal, puts it first on the path of this run and of every process it starts
(a sitecustomize that sets the editable install's import hook aside), and preloads libasan
into the uninstrumented Python. Not a test file itself.

    python tests/sanitized.py BUILD_DIR PYTEST_ARGS...
"""

import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SITECUSTOMIZE = '''\
import sys
# The sanitized package on PYTHONPATH, not the editable install's hook (which rebuilds and
# loads the ordinary build).
sys.meta_path[:] = [f for f in sys.meta_path
                    if type(f).__name__ != "ScikitBuildRedirectingFinder"]
'''


def link(src: str, dst: str) -> None:
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(src, dst)


def assemble(build: str) -> str:
    """build/pkg/luminal: the Python sources, _core, lib/libluminal and include/luminal.h."""
    pkg = os.path.join(build, "pkg")
    luminal = os.path.join(pkg, "luminal")
    os.makedirs(os.path.join(luminal, "lib"), exist_ok=True)
    os.makedirs(os.path.join(luminal, "include"), exist_ok=True)
    source = os.path.join(ROOT, "python", "luminal")
    for name in os.listdir(source):
        if name != "__pycache__":
            link(os.path.join(source, name), os.path.join(luminal, name))
    (core,) = glob.glob(os.path.join(build, "_core*.so"))
    link(core, os.path.join(luminal, os.path.basename(core)))
    link(os.path.join(build, "libluminal.so"), os.path.join(luminal, "lib", "libluminal.so"))
    link(os.path.join(ROOT, "csrc", "api", "luminal.h"),
         os.path.join(luminal, "include", "luminal.h"))
    with open(os.path.join(pkg, "sitecustomize.py"), "w") as f:
        f.write(SITECUSTOMIZE)
    return pkg


def main() -> int:
    build = os.path.abspath(sys.argv[1])
    pkg = assemble(build)
    cxx = os.environ.get("CXX", "c++")

    def runtime_library(name: str) -> str:
        return subprocess.run([cxx, f"-print-file-name={name}"], capture_output=True,
                              text=True, check=True).stdout.strip()

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([pkg, os.path.join(ROOT, "tests")])
    # libstdc++ loaded with libasan, before any extension: ASan intercepts __cxa_throw only
    # when it is there at start (Python itself is C), else the first C++ throw aborts.
    env["LD_PRELOAD"] = " ".join(runtime_library(n) for n in ("libasan.so", "libstdc++.so"))
    # Python and its extensions are not instrumented: their allocations are not leaks to
    # report, and a leak check at exit would fail every run. A malloc too big for the machine
    # returns NULL, as the system's does (numpy raises MemoryError), instead of aborting.
    env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:allocator_may_return_null=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    env["LUMINAL_SANITIZED"] = "1"  # for the tests ASan's allocator cannot run
    check = "import luminal._core as c; assert c.__file__.startswith(%r), c.__file__" % pkg
    subprocess.run([sys.executable, "-c", check], env=env, check=True)
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *sys.argv[2:]]
    return subprocess.run(args, env=env, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
