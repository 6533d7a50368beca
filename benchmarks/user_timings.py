"""Wall times of what the documentation tells a user to run (issue 25), as a user runs it.

Every command and call the README and docs/ quote a time for runs in fresh processes
(interpreter start, imports, numba's cached kernels loaded, the work, exit): the
quick-start ``accountant audit``, ``accountant learn`` with no arguments, every
``python examples/<name>.py`` as documented, the commands whose output a page shows with
``(computed in X s)``, and the Python calls and sweeps a page times. One untimed run of
each item first fills the caches a user's second run finds (numba's kernels, Python's
bytecode), then ``--repeats`` timed runs (default 5); the JSON keeps the median, min and
max of each, what the command printed about its own time, the machine, the load average
at the start and the end, the versions and the commit::

    python benchmarks/user_timings.py                    # measure, write docs/user-timings.json
    python benchmarks/user_timings.py --write-docs       # measure, then update the docs
    python benchmarks/user_timings.py --report-only      # update the docs from the JSON
    python benchmarks/user_timings.py --only quick_audit learn_default --repeats 3
    python benchmarks/user_timings.py --list             # the items, nothing run

The docs quote these figures only in marked spans, which ``--write-docs`` and
``--report-only`` rewrite from the JSON (``tests/test_doc_figures.py`` checks that every
timing figure of README.md and docs/ is in one, or on a generated page):

* inline, ``<!-- timing:ITEM -->3.2 s<!-- /timing -->``: the median wall time of ITEM;
  ``ITEM.FIGURE`` a figure the command printed or the snippet timed (``quick_audit.computed``),
  a ``:range`` suffix the min-max of the runs (``sweep_cli:range``, ``2.9-3.4 s``);
* ``<!-- timing-block:ITEM -->`` on the line before a fenced block of the command's
  output: every figure ITEM prints (``(computed in 3.19 s)``) is set in that block to the
  median of what the runs printed, formatted as the command prints it.

HTML comments are invisible on GitHub and in the MkDocs site. The page
``docs/user-timings.md`` lists every item with its command and figures. With ``--only``,
the items measured replace their earlier entries and the others are kept (each item
records its own date and load average); so with ``--skip``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
JSON_PATH = DOCS / "user-timings.json"
PAGE_PATH = DOCS / "user-timings.md"
SCRIPT = "python benchmarks/user_timings.py"
#: Distributions whose versions are recorded (absent ones as ``null``).
DISTRIBUTIONS = (
    "truncated-noise-accountant",
    "numpy",
    "scipy",
    "numba",
    "torch",
    "opacus",
    "dp-accounting",
    "dask",
    "matplotlib",
)
#: The last line of a snippet's output: ``USER_TIMINGS {"part": seconds, ...}``.
PARTS_PREFIX = "USER_TIMINGS "


# -- items ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Printed:
    """A figure a command prints about itself: ``pattern`` has one group, the number,
    written with ``printf`` (``"{:.2f}"``) as the command writes it."""

    name: str
    pattern: str
    printf: str


@dataclass(frozen=True)
class Item:
    """One thing the docs time. ``command`` is what a user types (``python`` is this
    interpreter, ``accountant`` the command installed beside it), run from the repository
    root (``cwd="root"``) or an empty directory (``"temp"``); ``snippet``, Python source
    the command ``python snippet.py`` runs, printing its timed parts last
    (:data:`PARTS_PREFIX`). ``prepare`` makes the files the command reads in its directory;
    ``collect`` reads figures from what it wrote; ``shared`` runs every repetition in one
    directory (what the first run leaves is there for the next)."""

    name: str
    command: str
    what: str
    cwd: str = "temp"
    snippet: str | None = None
    printed: tuple[Printed, ...] = ()
    needs: tuple[str, ...] = ()
    prepare: Callable[[Path], None] | None = None
    collect: Callable[[Path], dict[str, float]] | None = None
    shared: bool = False
    statuses: tuple[int, ...] = (0,)
    timeout: float = 3600.0
    extra: dict[str, str] = field(default_factory=dict)


COMPUTED = Printed("computed", r"\(computed in ([0-9.]+) s\)", "{:.2f}")
LEARN_TRAINING = Printed("training", r"epochs in ([0-9.]+) s of training", "{:.1f}")
LEARN_TOTAL = Printed("total", r"s of training, ([0-9.]+) s in all", "{:.1f}")

MNIST_EPSILON = """
import json, time
start = time.perf_counter()
from accountant import PrivacyBuckets
from accountant.mechanisms import SubsampledTruncatedGaussian as Step

mnist = Step(sigma=1.1, sampling_rate=256 / 60000, cut=8.0)
called = time.perf_counter()
bounds = PrivacyBuckets().compose(mnist, 14_062).epsilon(1e-5)
done = time.perf_counter()
print(bounds)
print("USER_TIMINGS " + json.dumps({"import": called - start, "query": done - called}))
"""

OPACUS_QUERY = """
import json, time
start = time.perf_counter()
from optimizers.opacus import TruncatedAccountant

accountant = TruncatedAccountant(dimension=10**6)
stepping = time.perf_counter()
for _ in range({steps}):
    accountant.step(noise_multiplier=1.0, sample_rate={rate})
queried = time.perf_counter()
bounds = accountant.epsilon_bounds(1e-5)
done = time.perf_counter()
print(len(accountant), bounds)
print("USER_TIMINGS " + json.dumps(
    {{"step": (queried - stepping) / {steps}, "query": done - queried, "import": stepping - start}}
))
"""

DP_ACCOUNTING_EXPORT = """
import json, time
start = time.perf_counter()
from accountant import WorstCasePair, noise
from accountant.interop import to_dp_accounting_pld

pair = WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0)
called = time.perf_counter()
exported = to_dp_accounting_pld(pair, value_discretization_interval=2e-6, times=128)
delta = exported.get_delta_for_epsilon(0.3)
done = time.perf_counter()
print(delta)
print("USER_TIMINGS " + json.dumps({"export": done - called, "import": called - start}))
"""

SWEEP_SPEC = """
from optimizers import Schedule
from optimizers.sweep import SweepSpec, run_sweep

spec = SweepSpec(
    epsilons=[0.5, 1.0],
    times=[2],
    utilities=["L1"],
    losses=["ADP", "MA"],
    sampling_rates=[None],
    seeds=[0],
    bound=4.0, step=0.25,
    target_deltas=[0.2],
    schedule=Schedule(epochs=30, learning_rate=0.1, checkpoint_every=10),
)
"""

RUN_SWEEP_POOL = (
    "import json, time\n"
    + SWEEP_SPEC
    + """
if __name__ == "__main__":  # the pool's workers import this script (spawn)
    called = time.perf_counter()
    outcome = run_sweep(spec, "sweep-results", workers=2, progress=False)
    done = time.perf_counter()
    assert len(outcome.results) == 4, outcome
    print("USER_TIMINGS " + json.dumps({"run_sweep": done - called}))
"""
)

LOCAL_CLUSTER = (
    "import json, time\n"
    + SWEEP_SPEC
    + """
from dask.distributed import Client, LocalCluster

if __name__ == "__main__":
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1)
    client = Client(cluster)
    up = time.perf_counter()
    outcome = run_sweep(spec, "sweep-results", scheduler=client, progress=False)
    done = time.perf_counter()
    assert len(outcome.results) == 4, outcome
    client.close()
    cluster.close()
    print("USER_TIMINGS " + json.dumps(
        {"start": up - start, "sweep": done - up, "start_and_sweep": done - start}
    ))
"""
)

SWEEP_COMMAND = (
    "accountant sweep --epsilons 0.5,1 --times 2 --losses ADP,MA --bound 4 --step 0.25 "
    "--target-deltas 0.2 --epochs 30 --learning-rate 0.1 --checkpoint-every 10 "
    "--workers 2 --store sweep-results"
)


def _saving_run_file(directory: Path) -> None:
    """``run.json``: the JSON block of docs/guide/saving.md that describes a run."""
    text = (DOCS / "guide" / "saving.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```json\n(.*?)```", text, flags=re.S) if '"segments"' in b]
    if len(blocks) != 1:
        raise RuntimeError(f"docs/guide/saving.md: expected one run JSON block, got {len(blocks)}")
    (directory / "run.json").write_text(blocks[0], encoding="utf-8")


def _store_wall_seconds(directory: Path) -> dict[str, float]:
    """The sum of the ``wall_seconds`` of the runs stored in ``directory / "S"``."""
    total = 0.0
    for path in (directory / "S").glob("*.json"):
        if re.fullmatch(r"[0-9a-f]{16}", path.stem):
            total += json.loads(path.read_text(encoding="utf-8"))["result"]["wall_seconds"]
    return {"runs_wall_seconds": total}


def _example(name: str, options: str = "", **kwargs) -> Item:
    suffix = "_" + options.strip("-").replace("-", "_") if options else ""
    command = f"python examples/{name}.py {options}".strip()
    return Item(
        name=f"example_{name}{suffix}",
        command=command,
        what=f"the example as documented (outputs in a temporary directory), `{command}`",
        cwd="root",
        **kwargs,
    )


ITEMS: tuple[Item, ...] = (
    Item(
        "quick_audit",
        "accountant audit",
        "the README's quick start: the paper's truncated Gaussian, n = 128, eps = 0.3",
        printed=(COMPUTED,),
    ),
    Item(
        "calibrate_api",
        "accountant calibrate --epsilon 1 --delta 1e-5 --sampling-rate 0.05 --steps 100 "
        "--cut 8 --dimension 1",
        "the calibration example of docs/api/calibration.md",
        printed=(COMPUTED,),
    ),
    Item(
        "dpsgd_mnist_epsilon",
        "python snippet.py",
        "docs/guide/dp-sgd.md: `PrivacyBuckets().compose(mnist, 14_062).epsilon(1e-5)` in a "
        "fresh process (parts: the imports, the query)",
        snippet=MNIST_EPSILON,
    ),
    Item(
        "dp_accounting_export",
        "python snippet.py",
        "docs/guide/dp-accounting.md: W1 exported at h = 2e-6 and composed 128 times by "
        "dp_accounting, its delta at eps 0.3 (part: export, the call)",
        snippet=DP_ACCOUNTING_EXPORT,
        needs=("dp_accounting",),
    ),
    Item(
        "opacus_query_80",
        "python snippet.py",
        "docs/guide/opacus.md: TruncatedAccountant(dimension=10**6), 80 steps at q = 1/16, "
        "eps at delta 1e-5 (parts: step, the mean per step; query, the first query)",
        snippet=OPACUS_QUERY.format(steps=80, rate=1 / 16),
        needs=("opacus",),
    ),
    Item(
        "opacus_query_10000",
        "python snippet.py",
        "docs/guide/opacus.md: the same after 10,000 steps at q = 0.004",
        snippet=OPACUS_QUERY.format(steps=10_000, rate=0.004),
        needs=("opacus",),
    ),
    Item(
        "dpsgd_calibrate_mnist",
        "accountant calibrate --epsilon 3 --delta 1e-5 --sampling-rate 0.0042667 --steps "
        "14062 --cut 10 --dimension 1000000",
        "docs/guide/dp-sgd.md: the noise multiplier for MNIST on 10^6 parameters",
        printed=(COMPUTED,),
    ),
    Item(
        "dpsgd_audit",
        "accountant audit --sigma 2.291 --bound 10 --step 0.05 --sampling-rate 0.1 -n 128 "
        "--epsilon 1",
        "docs/guide/dp-sgd.md: the DP-SGD mixture pair from the command line",
        printed=(COMPUTED,),
    ),
    Item(
        "saving_run_audit",
        "accountant audit --run run.json --target-delta 1e-5",
        "docs/guide/saving.md: a training run described in JSON (the page's run.json)",
        printed=(COMPUTED,),
        prepare=_saving_run_file,
    ),
    _example("quick_audit"),
    _example("dp_accounting_interop", needs=("dp_accounting",)),
    _example("compare_accountants"),
    _example("audit_truncated_gaussian"),
    _example("dp_sgd_truncated"),
    _example("opacus_truncated_dp_sgd", needs=("opacus",)),
    _example("opacus_truncated_dp_sgd", "--fast", needs=("opacus",)),
    _example(
        "learn_noise",
        needs=("torch",),
        printed=(Printed("training", r"trained \d+ epochs in ([0-9.]+) s", "{:.1f}"),),
    ),
    _example("reproduce_staircase", "--no-learn"),
    _example(
        "reproduce_staircase",
        needs=("torch",),
        printed=(Printed("learning", r"learned \d+ epochs in ([0-9.]+) s", "{:.0f}"),),
    ),
    Item(
        "learn_default",
        "accountant learn",
        "the README's `accountant learn` with no arguments: the paper's staircase setting",
        printed=(LEARN_TRAINING, LEARN_TOTAL),
        needs=("torch",),
    ),
    Item(
        "sweep_cli",
        SWEEP_COMMAND,
        "docs/guide/sweeps.md: the tiny sweep (4 runs of 30 epochs), into an empty store",
        needs=("torch",),
    ),
    Item(
        "sweep_cli_again",
        SWEEP_COMMAND,
        "the same command again in the same directory (every run in the store: nothing run)",
        needs=("torch",),
        shared=True,
    ),
    Item(
        "run_sweep_pool",
        "python snippet.py",
        "docs/guide/sweeps.md: `run_sweep(spec, store, workers=2)` into an empty store "
        "(part: run_sweep, the call)",
        snippet=RUN_SWEEP_POOL,
        needs=("torch",),
    ),
    Item(
        "local_cluster",
        "python snippet.py",
        "docs/guide/sweeps.md: `LocalCluster(n_workers=2, processes=True, "
        "threads_per_worker=1)` and `run_sweep(spec, store, scheduler=client)` (parts: "
        "start, sweep, start_and_sweep)",
        snippet=LOCAL_CLUSTER,
        needs=("torch", "distributed"),
    ),
    Item(
        "sweep_range_pool",
        "python benchmarks/sweep_curves.py --parts range --workers 2 --store S",
        "docs/guide/sweeps.md: the 5 range runs of the curves sweep (3,000 epochs each) on "
        "a local pool, into an empty store (collected: runs_wall_seconds, the sum of the "
        "runs' wall_seconds)",
        needs=("torch",),
        collect=_store_wall_seconds,
    ),
    Item(
        "sweep_range_cluster",
        "python benchmarks/sweep_curves.py --parts range --cluster 2 --store S",
        "the same on a LocalCluster of 2 workers (printed: up, its start)",
        needs=("torch", "distributed"),
        printed=(Printed("up", r"LocalCluster of \d+ workers up in ([0-9.]+) s", "{:.1f}"),),
        collect=_store_wall_seconds,
    ),
)
BY_NAME = {item.name: item for item in ITEMS}


# -- formatting (the test formats with these too) ---------------------------------------


def format_seconds(seconds: float) -> str:
    """A wall time as the docs show it: two significant digits in µs or ms below 0.1 s,
    ``0.79 s``, ``3.2 s``, ``25 s``, and minutes from 120 s (``2.5 min``)."""
    if seconds < 1e-3:
        value, unit = seconds * 1e6, "µs"
    elif seconds < 0.1:
        value, unit = seconds * 1e3, "ms"
    elif seconds < 120:
        value, unit = seconds, "s"
    else:
        return f"{seconds / 60:.1f} min"
    if value < 1:
        return f"{value:.2f} {unit}"
    if value < 10:
        return f"{value:.1f} {unit}"
    return f"{value:.0f} {unit}"


def format_range(low: float, high: float) -> str:
    """``min-max`` with the unit once (``2.9-3.4 s``), or both in full if they differ."""
    first, second = format_seconds(low), format_seconds(high)
    (a, unit_a), (b, unit_b) = first.split(" "), second.split(" ")
    return f"{a}-{b} {unit_a}" if unit_a == unit_b else f"{first}-{second}"


def figure_of(results: dict, key: str) -> dict:
    """The ``{median, min, max}`` of ``ITEM`` (its wall time) or ``ITEM.FIGURE``."""
    name, _, figure = key.partition(".")
    items = results["items"]
    if name not in items:
        raise KeyError(f"no item {name!r} in the JSON (known: {', '.join(sorted(items))})")
    entry = items[name]
    if "error" in entry:
        raise KeyError(f"item {name!r} has no figures: {entry['error']}")
    if not figure:
        return entry["wall"]
    if figure not in entry["figures"]:
        raise KeyError(f"item {name!r} has no figure {figure!r} (has {sorted(entry['figures'])})")
    return entry["figures"][figure]


def span_value(results: dict, key: str) -> str:
    """What a span ``<!-- timing:KEY -->`` holds: the median, or ``min-max`` for ``:range``."""
    base, _, stat = key.partition(":")
    figure = figure_of(results, base)
    if stat == "range":
        return format_range(figure["min"], figure["max"])
    if stat:
        raise KeyError(f"unknown statistic {stat!r} in timing span {key!r} (only ':range')")
    return format_seconds(figure["median"])


# -- the markers in the docs -------------------------------------------------------------

SPAN = re.compile(r"<!-- timing:(?P<key>[\w.:]+) -->(?P<value>.*?)<!-- /timing -->")
BLOCK = re.compile(
    r"^<!-- timing-block:(?P<name>\w+) -->\n(?P<fence>[ \t]*```[^\n]*\n)(?P<body>.*?)"
    r"(?P<close>^[ \t]*```[ \t]*$)",
    re.M | re.S,
)
#: A duration in figures: ``0.79 s``, ``10 seconds``, ``1.2-3 min``, ``4 to 12 µs``.
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_UNIT = r"(?:s|secs?|seconds?|ms|µs|us|mins?|minutes?|h|hrs?|hours?)"
NUMERIC = re.compile(rf"(?<![\w.]){_NUMBER}(?:\s?(?:-|–|to)\s?{_NUMBER})?\s?{_UNIT}(?!\w)")
#: A duration in words: ``a few seconds``, ``two minutes``, ``under a second``.
WORDED = re.compile(
    r"\b(?:(?:under|within|in|than|about|takes?)\s+(?:a|one)\s+second\b(?!-)"
    r"|(?:a|an|one|two|three|four|five|ten|fifteen|twenty|thirty|few|several)\s+"
    r"(?:seconds|minutes?|hours?)\b)",
    re.I,
)


def doc_pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def rewrite(text: str, results: dict, missing: list[str] | None = None) -> str:
    """``text`` with every timing span and block set from ``results``. A figure the JSON
    lacks raises ``KeyError``, or, given a list ``missing``, is left as it is and its
    reason appended there."""

    def span(match: re.Match) -> str:
        try:
            value = span_value(results, match["key"])
        except KeyError as exc:
            if missing is None:
                raise
            missing.append(str(exc))
            return match.group(0)
        return f"<!-- timing:{match['key']} -->{value}<!-- /timing -->"

    def block(match: re.Match) -> str:
        body = match["body"]
        item = BY_NAME[match["name"]]
        for printed in item.printed:
            try:
                median = figure_of(results, f"{item.name}.{printed.name}")["median"]
            except KeyError as exc:
                if missing is None:
                    raise
                missing.append(str(exc))
                continue
            body = set_printed(body, printed, printed.printf.format(median))
        return f"<!-- timing-block:{match['name']} -->\n{match['fence']}{body}{match['close']}"

    return BLOCK.sub(block, SPAN.sub(span, text))


def set_printed(text: str, printed: Printed, value: str) -> str:
    """``text`` with the number of every match of ``printed``'s pattern set to ``value``."""

    def replace(match: re.Match) -> str:
        start, end = match.start(1) - match.start(0), match.end(1) - match.start(0)
        return match.group(0)[:start] + value + match.group(0)[end:]

    return re.sub(printed.pattern, replace, text)


def unmarked(text: str) -> str:
    """``text`` without its timing spans and the figures of its timing blocks (what may
    not hold a timing figure)."""
    text = SPAN.sub("", text)

    def block(match: re.Match) -> str:
        body = match["body"]
        item = BY_NAME.get(match["name"])
        for printed in item.printed if item else ():
            body = set_printed(body, printed, "")
        return match["fence"] + body + match["close"]

    return BLOCK.sub(block, text)


def timing_figures(text: str) -> list[str]:
    """Every duration written in ``text``, in figures or in words."""
    return [m.group(0) for m in NUMERIC.finditer(text)] + [
        m.group(0) for m in WORDED.finditer(text)
    ]


def write_docs(results: dict, log: Callable[[str], None] = print) -> list[Path]:
    """Rewrite the marked spans and blocks of README.md and docs/ from ``results``, and
    the page docs/user-timings.md; the files changed. A figure the JSON lacks is left
    as it is, and said."""
    changed = []
    for page in doc_pages():
        if page == PAGE_PATH:
            continue
        text = page.read_text(encoding="utf-8")
        if "<!-- timing" not in text:
            continue
        missing: list[str] = []
        new = rewrite(text, results, missing)
        for reason in dict.fromkeys(missing):
            log(f"not updated in {page.relative_to(ROOT)}: {reason}")
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    page = markdown(results)
    if not PAGE_PATH.is_file() or PAGE_PATH.read_text(encoding="utf-8") != page:
        PAGE_PATH.write_text(page, encoding="utf-8")
        changed.append(PAGE_PATH)
    return changed


def quoted_in(name: str) -> list[str]:
    """The pages with a span or block of item ``name``."""
    pages = []
    for page in doc_pages():
        if page == PAGE_PATH:
            continue
        text = page.read_text(encoding="utf-8")
        keys = [m["key"].partition(":")[0].partition(".")[0] for m in SPAN.finditer(text)]
        keys += [m["name"] for m in BLOCK.finditer(text)]
        if name in keys:
            pages.append(page.relative_to(ROOT).as_posix())
    return pages


def markdown(results: dict) -> str:
    """The page docs/user-timings.md."""
    machine = results["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in results["versions"].items() if v is not None)
    lines = [
        "# Wall times a user measures",
        "",
        f"Generated by `{SCRIPT}` on {results['date'][:10]}; do not edit by hand. Raw results:",
        "`docs/user-timings.json`. Every time on README.md and the other pages of this site",
        "that is not on a generated benchmark page comes from here.",
        "",
        "Each command runs as a user runs it, in a fresh process: the interpreter starts,",
        "imports the library, loads numba's cached kernels, does the work and exits (the",
        "`examples/` and `benchmarks/` scripts from the repository root, the rest in an",
        "empty directory). One untimed run of each item comes first (unless the invocation",
        "says `--no-warmup`), so that the timed runs find the caches a user's second run",
        "finds; the very first run after an install also compiles the numba kernels (it says",
        "so in a `note:` line). Median, min and max of the timed runs' wall time; *figures*",
        "are what the command printed about its own time, or what a Python snippet (its source",
        "is in the JSON) timed of itself: median (min-max).",
        "",
        f"- Machine: {machine['cores']} cores ({machine['cpu_model']}), "
        f"{machine['ram_gib']:.1f} GiB RAM, {machine['platform']}",
        f"- Versions: {versions}",
        "- Load: the machine may be shared with other work, which slows every figure; the",
        "  table gives the 1-minute load average when each item started, the JSON the 1, 5",
        "  and 15-minute ones at its start and end.",
        "- Measured by:",
    ]
    for run in results["invocations"]:
        git, load = run["git"], run["load_average"]
        dirty = f", {len(git['uncommitted'])} files changed since" if git["uncommitted"] else ""
        lines.append(
            f"  `{run['command']}` on {run['date'][:16].replace('T', ' ')} UTC (commit "
            f"{git['commit'][:12]}{dirty}; load average {_load(load['start'])} at start, "
            f"{_load(load['end'])} at end)"
        )
    lines += [
        "",
        "| item | command | runs | median | min-max | figures | load | quoted in |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results["items"].items():
        pages = ", ".join(quoted_in(name)) or "-"
        command = f"`{entry['command']}`"
        load = f"{entry['load_average_start'][0]:.1f}"
        if "error" in entry:
            lines.append(f"| {name} | {command} | | | | {entry['error']} | {load} | {pages} |")
            continue
        wall = entry["wall"]
        figures = "; ".join(
            f"{figure}: {format_seconds(v['median'])} ({format_range(v['min'], v['max'])})"
            for figure, v in entry["figures"].items()
        )
        lines.append(
            f"| {name} | {command} | {entry['repeats']} | {format_seconds(wall['median'])} | "
            f"{format_range(wall['min'], wall['max'])} | {figures or '-'} | {load} | {pages} |"
        )
    lines += ["", "What each item is:", ""]
    lines += [f"* **{name}**: {entry['what']}" for name, entry in results["items"].items()]
    return "\n".join(lines) + "\n"


def _load(values: Iterable[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


# -- measuring -----------------------------------------------------------------------------


def machine() -> dict:
    """Cores, CPU model, RAM and platform of this machine."""
    model = platform.processor() or platform.machine()
    ram = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) / 2**20
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": model,
        "ram_gib": ram,
        "platform": platform.platform(),
    }


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_state() -> dict:
    """The commit, and the files of the measured code with uncommitted changes."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        except OSError:
            return ""
        return done.stdout if done.returncode == 0 else ""

    status = git("status", "--porcelain", "--", "accountant", "optimizers", "examples")
    return {
        "commit": git("rev-parse", "HEAD").strip() or "unknown",
        "uncommitted": sorted({line[3:].strip() for line in status.splitlines() if line}),
    }


def _available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _argv(item: Item) -> list[str]:
    words = shlex.split(item.command)
    if words[0] == "python":
        words[0] = sys.executable
        if item.cwd != "root" and words[1].startswith(("benchmarks/", "examples/")):
            words[1] = str(ROOT / words[1])  # a script of the repository, run elsewhere
    elif words[0] == "accountant":
        installed = Path(sys.executable).parent / "accountant"
        words[0] = str(installed) if installed.exists() else shutil.which("accountant") or ""
        if not words[0]:
            words = [sys.executable, "-m", "accountant", *words[1:]]
    return words


def run_once(item: Item, directory: Path) -> dict:
    """One fresh process of ``item`` in ``directory``: wall seconds, printed figures,
    snippet parts, collected figures."""
    if item.snippet is not None:
        (directory / "snippet.py").write_text(item.snippet, encoding="utf-8")
    cwd = ROOT if item.cwd == "root" else directory
    # Examples write to a fresh temporary directory by default: keep it inside ours. A
    # user's installation has its bytecode (pip compiles it): never run without it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TMPDIR"] = str(directory)
    start = time.perf_counter()
    done = subprocess.run(
        _argv(item), cwd=cwd, env=env, capture_output=True, text=True, timeout=item.timeout
    )
    wall = time.perf_counter() - start
    if done.returncode not in item.statuses:
        raise RuntimeError(
            f"{item.command} exited with status {done.returncode}: {done.stderr.strip()[-1500:]}"
        )
    figures: dict[str, float] = {}
    for printed in item.printed:
        found = re.findall(printed.pattern, done.stdout)
        if len(found) != 1:
            raise RuntimeError(f"{item.name}: {printed.pattern!r} printed {len(found)} times")
        figures[printed.name] = float(found[0])
    for line in done.stdout.splitlines():
        if line.startswith(PARTS_PREFIX):
            figures.update(json.loads(line.removeprefix(PARTS_PREFIX)))
    if item.collect is not None:
        figures.update(item.collect(directory))
    output = [line for line in done.stdout.splitlines() if not line.startswith(PARTS_PREFIX)]
    return {"wall": wall, "figures": figures, "stderr": done.stderr, "output": output[-3:]}


def _summary(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": [round(v, 6) for v in values],
    }


def measure(item: Item, repeats: int, warmup: bool, log: Callable[[str], None]) -> dict:
    """``item`` run ``repeats`` times (after one untimed run if ``warmup``)."""
    entry: dict = {
        "command": item.command,
        "what": item.what,
        "date": _now(),
        "load_average_start": list(os.getloadavg()),
    }
    if item.snippet is not None:
        entry["snippet"] = item.snippet.strip()
    missing = [m for m in item.needs if not _available(m)]
    if missing:
        entry["error"] = f"skipped: {', '.join(missing)} not installed"
        return entry
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix=f"user-timings-{item.name}-") as top:
        shared = Path(top) / "shared"
        shared.mkdir()
        if item.prepare is not None:
            item.prepare(shared)
        try:
            for k in range(repeats + (1 if warmup else 0)):
                directory = shared
                if not item.shared:
                    directory = Path(top) / f"run-{k}"
                    directory.mkdir()
                    if item.prepare is not None:
                        item.prepare(directory)
                result = run_once(item, directory)
                timed = not (warmup and k == 0)
                log(
                    f"  {item.name}: {'run ' + str(len(runs) + 1) if timed else 'untimed run'} "
                    f"{result['wall']:.2f} s {_figures_text(result['figures'])}"
                )
                notes = [line for line in result["stderr"].splitlines() if line.startswith("note:")]
                if timed:
                    runs.append(result)
                    for note in notes:  # e.g. numba compiling after a change of the engine
                        counts = entry.setdefault("timed_run_notes", {})
                        counts[note] = counts.get(note, 0) + 1
                else:
                    entry["untimed_first_run"] = result["wall"]
                    if notes:
                        entry["untimed_first_run_notes"] = notes
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            entry["error"] = str(exc)
            return entry
    entry["repeats"] = repeats
    entry["output_tail"] = runs[-1]["output"]  # the last lines the last run printed
    entry["wall"] = _summary([r["wall"] for r in runs])
    names = list(runs[0]["figures"])
    entry["figures"] = {n: _summary([r["figures"][n] for r in runs]) for n in names}
    entry["load_average_end"] = list(os.getloadavg())
    return entry


def _figures_text(figures: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in figures.items())


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


# -- command line --------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per item (5)")
    parser.add_argument("--only", nargs="+", metavar="ITEM", help="measure these items only")
    parser.add_argument("--skip", nargs="+", metavar="ITEM", default=[], help="items to skip")
    parser.add_argument("--no-warmup", action="store_true", help="no untimed first run")
    parser.add_argument("--output", type=Path, default=JSON_PATH, help="the JSON written")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write-docs", action="store_true", help="then update the docs")
    mode.add_argument(
        "--report-only", action="store_true", help="update the docs from the JSON, no measuring"
    )
    mode.add_argument("--list", action="store_true", help="list the items and stop")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    unknown = sorted((set(args.only or []) | set(args.skip)) - set(BY_NAME))
    if unknown:
        parser.error(f"unknown items {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for item in ITEMS:
            print(f"{item.name:<40} {item.command if item.snippet is None else item.what}")
        return 0
    if args.report_only:
        results = json.loads(args.output.read_text(encoding="utf-8"))
        for path in write_docs(results):
            print(f"updated {path.relative_to(ROOT)}")
        return 0

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    chosen = [
        i for i in ITEMS if (not args.only or i.name in args.only) and i.name not in args.skip
    ]
    previous = (
        json.loads(args.output.read_text(encoding="utf-8"))
        if (args.only or args.skip) and args.output.is_file()
        else {"items": {}}
    )
    load_start = list(os.getloadavg())
    started = _now()
    measured = {}
    for item in chosen:
        log(f"{item.name}: {item.command}")
        measured[item.name] = measure(item, args.repeats, not args.no_warmup, log)
        entry = measured[item.name]
        entry["invocation"] = started  # the date of this invocation, its id
        if "error" in entry:
            log(f"  {item.name}: {entry['error']}")
    items = {
        name: measured.get(name, previous["items"].get(name))
        for name in BY_NAME
        if name in measured or name in previous["items"]
    }
    invocation = {
        "command": " ".join(["python benchmarks/user_timings.py", *(argv or sys.argv[1:])]),
        "date": started,
        "load_average": {"start": load_start, "end": list(os.getloadavg())},
        "git": git_state(),
        "items": list(measured),
    }
    results = {
        "generated_by": SCRIPT,
        "date": started,
        "machine": machine(),
        "load_average": invocation["load_average"],
        "versions": versions(),
        "git": invocation["git"],
        # the invocations some kept item was measured by
        "invocations": [
            run
            for run in [*previous.get("invocations", []), invocation]
            if any(entry.get("invocation") == run["date"] for entry in items.values())
        ],
        "items": items,
    }
    args.output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.output}")
    for name, entry in measured.items():
        if "error" in entry:
            print(f"{name:<40} {entry['error']}")
        else:
            wall = entry["wall"]
            print(
                f"{name:<40} median {format_seconds(wall['median']):>9} "
                f"({format_range(wall['min'], wall['max'])})"
            )
    if args.write_docs:
        for path in write_docs(results):
            print(f"updated {path.relative_to(ROOT)}")
    return 1 if any("error" in e and "skipped" not in e["error"] for e in measured.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
