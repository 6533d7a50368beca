"""Query time of ``CertifiedAccountant`` beside dp_accounting's ``PLDAccountant`` (issue 27):
the same events composed by each, then the same queries, each accountant in a fresh process
per run, the two interleaved run by run; medians of ``--runs`` runs, written as markdown with
the raw figures (docs/benchmarks-dp-accounting.md)::

    python benchmarks/dp_accounting_queries.py            # 3 runs
    python benchmarks/dp_accounting_queries.py --runs 5 --output /tmp/q.md

Per job and accountant, timed apart: ``compose`` (``PLDAccountant`` builds and composes its
PLD there; ``CertifiedAccountant`` defers its composition to the first query), the first
query, then every further query of a fixed sequence (eps at other deltas, delta at several
eps). The sum of compose and the first query is the time to a first answer; the further
queries are what a user asking again waits for. One untimed run of each child first fills
Python's bytecode cache and numba's kernel cache, as an installed package has them.
Wall times on a shared machine drift with its load: the load average is recorded.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: name -> (the event built in the child, the neighbouring relation)
JOBS = {
    "DP-SGD: Poisson(0.01) Gaussian(1.0) x 1000": (
        "dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.01, "
        "dp_event.GaussianDpEvent(1.0)), 1000)",
        "ADD_OR_REMOVE_ONE",
    ),
    "Poisson(0.1) Laplace(2.0) x 300": (
        "dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.1, "
        "dp_event.LaplaceDpEvent(2.0)), 300)",
        "ADD_OR_REMOVE_ONE",
    ),
    "Gaussian(10) x 100": (
        "dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(10.0), 100)",
        "ADD_OR_REMOVE_ONE",
    ),
    "replace-one: Gaussian(10) x 100": (
        "dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(10.0), 100)",
        "REPLACE_ONE",
    ),
}
#: The queries, in order: (kind, target); the first one is "the first query".
QUERIES = [
    ("epsilon", 1e-5),
    ("epsilon", 1e-6),
    ("epsilon", 1e-7),
    ("epsilon", 1e-9),
    ("delta", 1.0),
    ("delta", 1.5),
    ("delta", 2.0),
]
ACCOUNTANTS = {
    "PLDAccountant": "from dp_accounting.pld.pld_privacy_accountant import PLDAccountant as A",
    "CertifiedAccountant": "from accountant.interop import CertifiedAccountant as A",
}

CHILD = """
import json, time, warnings
warnings.simplefilter("ignore")
{importer}
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
event = {event}
start = time.perf_counter()
accountant = A(NeighboringRelation.{relation}).compose(event)
times = {{"compose": time.perf_counter() - start}}
answers = {{}}
for kind, target in {queries!r}:
    start = time.perf_counter()
    value = accountant.get_epsilon(target) if kind == "epsilon" else accountant.get_delta(target)
    times[f"{{kind}}({{target:g}})"] = time.perf_counter() - start
    answers[f"{{kind}}({{target:g}})"] = float(value)
print(json.dumps([times, answers]))
"""


def _child(job: str, name: str, env: dict[str, str]) -> tuple[dict, dict]:
    event, relation = JOBS[job]
    code = CHILD.format(importer=ACCOUNTANTS[name], event=event, relation=relation, queries=QUERIES)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if done.returncode != 0:
        raise RuntimeError(f"{name} on {job} failed:\n{done.stderr}")
    times, answers = json.loads(done.stdout.strip().splitlines()[-1])
    return times, answers


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _table(results: dict) -> list[str]:
    """Markdown rows: per job, per accountant, the medians."""
    first = f"{QUERIES[0][0]}({QUERIES[0][1]:g})"
    further = [f"{kind}({target:g})" for kind, target in QUERIES[1:]]
    lines = [
        "| job | accountant | compose | first query | compose + first | further queries "
        "(median of each) | slowest further |",
        "|---|---|---|---|---|---|---|",
    ]
    for job, per in results.items():
        for name, runs in per.items():
            times = [run[0] for run in runs]
            compose, query = _median(times, "compose"), _median(times, first)
            medians = [_median(times, key) for key in further]
            lines.append(
                f"| {job} | {name} | {compose:.3f} s | {query:.3f} s | {compose + query:.3f} s "
                f"| {statistics.median(medians):.3f} s | {max(medians):.3f} s |"
            )
    return lines


def _answers(results: dict) -> list[str]:
    lines = ["| job | query | PLDAccountant | CertifiedAccountant (certified upper) |"]
    lines.append("|---|---|---|---|")
    for job, per in results.items():
        theirs, ours = per["PLDAccountant"][0][1], per["CertifiedAccountant"][0][1]
        for key in ours:
            lines.append(f"| {job} | {key} | {theirs[key]:.8g} | {ours[key]:.8g} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per child (3)")
    parser.add_argument(
        "--output",
        type=Path,
        default=ROOT / "docs" / "benchmarks-dp-accounting.md",
        help="markdown written (docs/benchmarks-dp-accounting.md)",
    )
    parser.add_argument("--jobs", nargs="*", choices=list(JOBS), help="a subset of the jobs")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    jobs = args.jobs or list(JOBS)
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_start = os.getloadavg()
    results: dict = {job: {name: [] for name in ACCOUNTANTS} for job in jobs}
    with tempfile.TemporaryDirectory(prefix="pycache-") as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        for job in jobs:  # untimed: fills the caches
            for name in ACCOUNTANTS:
                _child(job, name, env)
        for run in range(args.runs):
            for job in jobs:
                for name in ACCOUNTANTS:  # interleaved, each in a fresh process
                    results[job][name].append(_child(job, name, env))
            print(f"run {run + 1} of {args.runs} done", file=sys.stderr)
    load_end = os.getloadavg()
    command = shlex.join(["python", "benchmarks/dp_accounting_queries.py", *argv])
    lines = [
        "# dp_accounting: query time beside PLDAccountant",
        "",
        f"Generated by `{command}` on {started} ({len(os.sched_getaffinity(0))} cores; load "
        f"average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end). Medians of "
        f"{args.runs} runs, each accountant in a fresh process per run, the two interleaved; "
        "one untimed run first fills the bytecode and numba caches.",
        "",
        "`PLDAccountant` (its default interval `1e-4`) builds and composes its PLD in "
        "`compose`; `CertifiedAccountant` (default accuracy `1e-4`) composes at its first "
        "query, so the time to a first answer is the sum. Further queries are "
        + ", ".join(f"`get_{kind}({target:g})`" for kind, target in QUERIES[1:])
        + f", after `get_{QUERIES[0][0]}({QUERIES[0][1]:g})`.",
        "",
        *_table(results),
        "",
        "Answers (the first run):",
        "",
        *_answers(results),
        "",
        "Raw seconds, every run:",
        "",
        "```json",
        json.dumps(
            {
                job: {name: [run[0] for run in runs] for name, runs in per.items()}
                for job, per in results.items()
            },
            indent=1,
        ),
        "```",
        "",
    ]
    args.output.write_text("\n".join(lines))
    print("\n".join(_table(results)))
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
