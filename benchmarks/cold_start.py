"""Cold start in fresh processes (issue 26): ``import accountant``, ``accountant --help``,
and a small first query against the same query warm in the same process. Median of
``--runs`` fresh processes, interleaved (each run times every item once), written as
JSON with the machine, the date and the load average::

    python benchmarks/cold_start.py                  # 5 runs, writes docs/cold-start.json
    python benchmarks/cold_start.py --runs 9 --output /tmp/cold-start.json

The query: ``PrivacyBuckets().compose(SubsampledTruncatedGaussian(sigma=1.1,
sampling_rate=0.004, cut=8.0), 1000).epsilon(1e-5)``. Its first call in a process pays for
loading scipy and numba and numba's cached kernels; the warm call is the same query
again on a new accountant.

Children run with Python's bytecode cache on, kept in a temporary directory
(``PYTHONPYCACHEPREFIX``), as an installed package has it; one untimed run of each item
first fills that cache and numba's. The very first run on a machine (numba compiling its
kernels into an empty ``NUMBA_CACHE_DIR``) is timed once, apart (``--no-compile-run``
skips it). Wall times on a shared machine drift with its load: the load average is
recorded at the start and at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = ["truncated-noise-accountant", "numpy", "scipy", "numba", "llvmlite"]
QUERY = (
    "PrivacyBuckets().compose(SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.004, "
    "cut=8.0), 1000).epsilon(1e-5)"
)
HEAVY = ("scipy", "numba", "llvmlite", "torch", "optimizers")

IMPORT = """
import json, sys, time
start = time.perf_counter()
import accountant
took = time.perf_counter() - start
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps([took, heavy, accountant.__file__]))
"""

HELP_MODULES = """
import json, sys
from accountant.report.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print("\\n" + json.dumps(heavy))
"""

QUERY_CHILD = """
import json, time
start = time.perf_counter()
from accountant import PrivacyBuckets, SubsampledTruncatedGaussian
imported = time.perf_counter()
first = {query}
queried = time.perf_counter()
warm = {query}
again = time.perf_counter()
assert first == warm, (first, warm)
print(json.dumps([imported - start, queried - imported, again - queried, str(first)]))
"""


def _environment(pycache: str, numba_cache: str | None = None) -> dict[str, str]:
    """The children's environment: bytecode cached under ``pycache``; numba's cache in
    ``numba_cache`` if given (else beside the sources, as for a user)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = numba_cache
    return env


def _run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of ``command`` in a fresh process, and its stdout (a failure raises)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return took, done.stdout


def _help_command() -> list[str]:
    """The ``accountant`` console script beside this Python, else ``python -m accountant``."""
    script = Path(sys.executable).parent / "accountant"
    if script.exists():
        return [str(script), "--help"]
    found = shutil.which("accountant")
    return [found, "--help"] if found else [sys.executable, "-m", "accountant", "--help"]


def one_run(env: dict[str, str]) -> dict[str, float]:
    """Every timed item once, each in its own fresh process."""
    python = sys.executable
    times = {"python startup": _run([python, "-c", "pass"], env)[0]}
    times["import numpy"] = _run([python, "-c", "import numpy"], env)[0]
    wall, out = _run([python, "-c", IMPORT.format(heavy=HEAVY)], env)
    times["import accountant"] = wall
    times["import accountant, in process"] = json.loads(out.strip().splitlines()[-1])[0]
    times["accountant --help"] = _run(_help_command(), env)[0]
    _, out = _run([python, "-c", QUERY_CHILD.format(query=QUERY)], env)
    imported, first, warm, _ = json.loads(out.strip().splitlines()[-1])
    times["query process: import"] = imported
    times["first query"] = first
    times["warm query"] = warm
    return times


def compile_run(pycache: str) -> dict[str, float]:
    """The first query on an empty numba cache (numba compiles every kernel it needs)."""
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as empty:
        env = _environment(pycache, numba_cache=empty)
        _, out = _run([sys.executable, "-c", QUERY_CHILD.format(query=QUERY)], env)
    imported, first, warm, _ = json.loads(out.strip().splitlines()[-1])
    return {"import": imported, "first query (compiling)": first, "warm query": warm}


def machine() -> str:
    """Cores this process may use, CPU model, RAM and kernel, in one line."""
    model = platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{len(os.sched_getaffinity(0))} cores ({model}), {memory:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}"
    )


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    """The short commit of the tree, noting uncommitted changes under accountant/."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        except OSError:
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    found = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--", "accountant"):
        found += " (accountant/ with uncommitted changes)"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed fresh processes (5)")
    parser.add_argument(
        "--output",
        type=Path,
        default=ROOT / "docs" / "cold-start.json",
        help="JSON written (docs/cold-start.json)",
    )
    parser.add_argument(
        "--no-compile-run",
        action="store_true",
        help="skip the run on an empty numba cache (numba compiling its kernels)",
    )
    parser.add_argument("--note", default="", help="a remark kept in the JSON")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="pycache-") as pycache:
        env = _environment(pycache)
        one_run(env)  # untimed: fills the bytecode cache (and numba's, if empty)
        _, out = _run([sys.executable, "-c", IMPORT.format(heavy=HEAVY)], env)
        _, import_modules, package = json.loads(out.strip().splitlines()[-1])
        _, out = _run([sys.executable, "-c", HELP_MODULES.format(heavy=HEAVY)], env)
        help_modules = json.loads(out.strip().splitlines()[-1])
        runs = [one_run(env) for _ in range(args.runs)]
        compiled = None if args.no_compile_run else compile_run(pycache)
    seconds = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    report = {
        "meta": {
            "command": shlex.join(["python", "benchmarks/cold_start.py", *argv]),
            "started": started,
            "machine": machine(),
            "python": platform.python_version(),
            "versions": {name: _version(name) for name in DISTRIBUTIONS},
            "commit": _commit(),
            "package": str(Path(package).parent),
            "note": args.note,
            "load_average": {"start": load_start, "end": list(os.getloadavg())},
            "runs": args.runs,
            "bytecode": "cached (PYTHONPYCACHEPREFIX), as in an installed package",
            "query": QUERY,
        },
        "seconds": seconds,
        "first / warm": seconds["first query"] / seconds["warm query"],
        "runs": {name: [run[name] for run in runs] for name in runs[0]},
        "first run on a machine": compiled,
        "modules": {"import accountant": import_modules, "accountant --help": help_modules},
    }
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"median of {args.runs} fresh processes (load average {load_start[0]:.2f}):")
    for name, value in seconds.items():
        print(f"  {name:<31} {value:.3f} s")
    print(f"  first / warm query              {report['first / warm']:.1f}x")
    if compiled is not None:
        print(f"first run on a machine: query {compiled['first query (compiling)']:.2f} s")
    print(f"heavy modules after import accountant: {import_modules or 'none'}")
    print(f"heavy modules after accountant --help: {help_modules or 'none'}")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
