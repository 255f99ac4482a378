"""A benchmark against another commit, on machines too noisy for before-and-after runs minutes
apart: builds the reference commit once into a directory of its own (its source from git
archive, then pip install --target, no build isolation), then runs the benchmark alternately
with that build and with this checkout's, --runs times each, each run's output prefixed with
which build ran it. The reference runs its own copy of the benchmark script. Not a test.

    python benchmarks/against.py --ref 0c0642d --runs 2 -- benchmarks/conv.py --batch 8
"""

from __future__ import annotations

import argparse
import os
import runpy
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(ref: str, root: str) -> str:
    """The reference's site directory under ``root``, built on first use."""
    src, site = os.path.join(root, "src"), os.path.join(root, "site")
    if os.path.isdir(os.path.join(site, "luminal")):
        return site
    os.makedirs(src, exist_ok=True)
    archive = subprocess.run(["git", "-C", HERE, "archive", ref], check=True,
                             stdout=subprocess.PIPE).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    print(f"building {ref} into {site} (minutes) ...", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "-q",
                    "--no-build-isolation", "--no-deps", "--target", site, src], check=True)
    return site


def run_with(site: str, script: str, args: list) -> None:
    """Runs ``script`` in this process with luminal imported from ``site`` (the editable
    install's finder removed, so it cannot win)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__name__.lower()
                        and "skbc" not in type(f).__module__.lower()]
    sys.path.insert(0, site)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    import luminal

    if not os.path.abspath(luminal.__file__).startswith(os.path.abspath(site)):
        raise SystemExit(f"against: luminal came from {luminal.__file__}, not {site}")
    sys.argv = [script] + args
    runpy.run_path(script, run_name="__main__")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--run-with":  # the reference's child process
        run_with(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ref", required=True, help="the commit to compare against")
    ap.add_argument("--runs", type=int, default=2, help="alternations (each build once a run)")
    ap.add_argument("--dir", default=None, help="where the reference is built (default: "
                    "/tmp/luminal-against-REF)")
    ap.add_argument("command", nargs=argparse.REMAINDER,
                    help="-- SCRIPT [ARGS...]: the benchmark, relative to the repository")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no benchmark given (-- SCRIPT [ARGS...])")
    ref = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", args.ref], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    root = args.dir or f"/tmp/luminal-against-{ref}"
    site = build(ref, root)
    script, rest = command[0], command[1:]
    ref_script = os.path.join(root, "src", script)
    if not os.path.exists(ref_script):
        raise SystemExit(f"against: {script} does not exist at {ref}")
    for run in range(args.runs):
        for label, argv in ((ref, [sys.executable, os.path.abspath(__file__), "--run-with",
                                   site, ref_script] + rest),
                            ("here", [sys.executable, os.path.join(HERE, script)] + rest)):
            out = subprocess.run(argv, cwd=HERE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            print(f"==== run {run + 1}, {label} (exit {out.returncode})", flush=True)
            for line in out.stdout.splitlines():
                print(f"[{label}] {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
