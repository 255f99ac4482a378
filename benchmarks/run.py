"""`make bench`: runs every benchmark script and prints its table. The CPU benchmark runs in
a child process with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (both together, that process
only) so numpy's OpenBLAS picks its native kernels for the numpy column."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    return subprocess.call([sys.executable, os.path.join(HERE, "cpu.py"), *sys.argv[1:]],
                           env=env)


if __name__ == "__main__":
    sys.exit(main())
