"""The markdown report of ``compare_accountants.py``: rows, table, machine, versions."""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import peers

import accountant


@dataclass
class Row:
    """One table row; ``parts`` keeps component times (e.g. dp_accounting's two runs)."""

    workload: str
    accountant: str
    setting: str
    seconds: float | None = None
    lower: float | None = None
    upper: float | None = None
    note: str = ""
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.lower is not None and self.upper is not None

    @property
    def bracket(self) -> float | None:
        if not self.ok or self.upper <= 0.0:
            return None
        return (self.upper - self.lower) / self.upper

    def cells(self) -> list[str]:
        def num(x: float | None, fmt: str) -> str:
            return "" if x is None else format(x, fmt)

        return [
            self.workload,
            self.accountant,
            self.setting,
            num(self.seconds, ".3g"),
            num(self.lower, ".9g"),
            num(self.upper, ".9g"),
            num(self.bracket, ".3g"),
            self.note,
        ]


HEADER = ["workload", "accountant", "setting", "time (s)", "lower", "upper", "rel. bracket", "note"]


def markdown_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def machine() -> str:
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = ""
    with contextlib.suppress(ValueError, OSError, AttributeError):
        memory = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM"
    return f"{cores} cores ({model}){memory}, {platform.system()} {platform.release()}"


def engine_snapshot() -> str:
    """When the engine's sources (``accountant/buckets``) were last modified."""
    sources = list((Path(accountant.__file__).parent / "buckets").glob("*.py"))
    if not sources:
        return "unknown"
    latest = max(p.stat().st_mtime for p in sources)
    return f"{datetime.datetime.fromtimestamp(latest, datetime.UTC):%Y-%m-%d %H:%M} UTC"


def versions() -> str:
    names = ["numpy", "scipy", "numba", "dp-accounting", "prv-accountant"]
    parts = [
        f"Python {platform.python_version()}",
        f"truncated-noise-accountant {accountant.__version__}",
    ]
    parts += [f"{name} {peers.version(name)}" for name in names]
    return ", ".join(parts)


METHOD = """\
- **Same inputs.** W1-W3: every accountant gets the two pmf arrays `(A, B)` of the
  `WorstCasePair` and bounds `max(delta_A/B, delta_B/A)`, the quantity
  `PrivacyBuckets.delta(eps)` brackets. dp_accounting:
  `from_two_probability_mass_functions(log B, log A, symmetric=False)` builds both
  directions (its "remove" PLD `ln A/B` under `A` and "add" PLD `ln B/A` under `B`) and
  `get_delta_for_epsilon` returns the larger; `self_compose(n)` composes (default tail
  truncation 1e-15). prv_accountant 0.2.0 has no constructor for a PRV given by losses
  and probabilities, so `benchmarks/peers.py` implements its `PrivacyRandomVariable`
  interface exactly (step CDF of the finite losses, `pm_inf` = distinguishing mass,
  exact Rényi divergences) and mirrors `PRVAccountant.__init__` only to give the
  truncated PRV its exact mean (the stock one integrates the CDF with `quad`); domain,
  mesh, cell-centred discretisation, FFT composition and `compute_delta` are the peer's
  code. One prv accountant per direction; the larger lower / upper is reported.
  W4: our analytic `GaussianMechanism(sigma=10)` if `PrivacyBuckets` accepts it, else
  its grid pair `GaussianMechanism(10).pair(0.1)` (see the setting column); the full run
  adds that grid pair as a reference row. The grid pair is the discretised mechanism,
  whose delta differs slightly from the continuous one. dp_accounting
  `from_gaussian_mechanism` (connect-the-dots for the pessimistic estimate, its
  privacy-buckets construction for the optimistic one), prv_accountant
  `GaussianMechanism`.
- **What lower and upper mean.** This engine: certified bounds (FFT round-off
  included). dp_accounting: lower = optimistic estimate, upper = pessimistic estimate;
  the time is the sum of both runs. prv_accountant: its returned lower and upper
  (`compute_delta`; the estimate is in the note); `delta_error` = 1e-10, so its bracket
  width is governed by `eps_error`. "MISSES" flags a bracket disjoint (by more than
  1e-9 relative) from the closed form (W4) or from this engine's tightest bracket.
- **Timing.** `time.perf_counter` around construction, composition and the query,
  imports excluded; conversions of the arrays into a peer's input format are included.
  This engine runs on a fresh `PrivacyBuckets` each time. One warm-up call of each
  accountant precedes all timing (numba loads or compiles its cached kernels on the
  first ever call). Each call is limited to the time limit (interrupted by SIGALRM);
  a setting whose 10x coarser neighbour already took more than a tenth of the limit,
  or a prv grid above 4e7 points, is skipped.
"""


DPSGD_LINK = (
    "The DP-SGD comparison (Poisson-subsampled Gaussian, 44 settings from 10 to 10^7 steps, "
    "the 1,000-setting heterogeneous run, calibration, Opacus's `get_epsilon` after each of "
    "100 epochs; every job a fresh process, peers interleaved) has its own page, "
    "[DP-SGD against the peers](benchmarks-dpsgd.md), written by "
    "`benchmarks/dpsgd_user_path.py`."
)


def report(
    rows: list[Row],
    command: str,
    workloads: list[str],
    extras: list[str],
    context: dict,
    interrupted: bool,
) -> str:
    """The whole markdown document. ``workloads``: one description line per workload;
    ``context``: ``load`` (the 1/5/15-minute load averages at the start and at the end of
    the run), ``snapshot`` (:func:`engine_snapshot` when the run started), ``started``."""
    load = context["load"]
    start, end = (", ".join(f"{x:.2f}" for x in values) for values in load)
    parts = [
        "# Benchmarks: PrivacyBuckets against dp_accounting and prv_accountant",
        "",
        "Generated by `benchmarks/compare_accountants.py`; do not edit by hand.",
        "",
        DPSGD_LINK,
        "",
        f"- Command: `{command}`",
        f"- Date: started {context['started']:%Y-%m-%d %H:%M} UTC, finished "
        f"{datetime.datetime.now(datetime.UTC):%H:%M} UTC",
        f"- Machine: {machine()}",
        f"- Versions: {versions()}",
        "- Engine sources (`accountant/buckets/*.py`) as imported: last modified "
        f"{context['snapshot']}",
        f"- Load average (1, 5, 15 min) at start {start}; at end {end}. The machine may be "
        "shared with other jobs, which slows multi-threaded BLAS/FFT calls.",
        "",
        "## Workloads",
        "",
    ]
    parts += [f"- {line}" for line in workloads]
    parts += ["", "## Method", "", METHOD, "## Results", ""]
    if interrupted:
        parts += ["**Interrupted: the rows below are those measured before Ctrl-C.**", ""]
    parts += [markdown_table(rows), ""]
    parts += extras
    return "\n".join(parts).rstrip() + "\n"


def speed_up_text(result: dict, quick: bool) -> list[str]:
    lines = ["## Speed-up requirement (W1)", ""]
    lines.append(
        "Requirement: at the bracket dp_accounting reaches with a discretisation interval "
        "of 1e-6, this engine is at least 20 times faster."
    )
    lines.append("")
    if result.get("status") != "ok":
        lines += [f"Not measured: {result.get('status')}.", ""]
        return lines
    if quick:
        lines += [f"(--quick: dp_accounting's finest interval here is {result['setting']}.)", ""]
    lines += [
        f"- dp_accounting at {result['setting']}: relative bracket "
        f"{result['dp_bracket']:.3g}, {result['dp_seconds']:.3g} s for both estimates "
        f"({result['dp_pessimistic_seconds']:.3g} s for the pessimistic one alone).",
        f"- This engine with `accuracy={result['accuracy']:.3g}` (that bracket): median of 3 "
        f"runs {result['ours_seconds']:.3g} s (runs: "
        + ", ".join(f"{t:.3g}" for t in result["ours_times"])
        + f"), achieved relative bracket {result['ours_bracket']:.3g}.",
        f"- Ratio: **{result['ratio']:.3g}x** against both dp_accounting runs, "
        f"{result['ratio_pessimistic']:.3g}x against the pessimistic run alone "
        f"(requirement: >= 20x).",
        "",
    ]
    return lines


def memory_text(result: dict) -> list[str]:
    lines = ["## Peak memory of this engine on W3 (requirement < 2 GiB)", ""]
    if "error" in result:
        return [*lines, f"Not measured: {result['error']}.", ""]
    return [
        *lines,
        f"One run at `accuracy={result['accuracy']:g}` (the default) in a fresh child process "
        f"(no warm-up): peak resident set (`VmHWM`) {result['peak_rss_mib']:.0f} MiB "
        f"({result['baseline_rss_mib']:.0f} MiB after imports and building the pair), "
        "tracemalloc peak "
        f"{result['tracemalloc_peak_mib']:.0f} MiB of numpy/Python allocations; "
        f"{result['seconds']:.3g} s, bounds [{result['lower']:.9g}, {result['upper']:.9g}], "
        f"relative bracket {result['achieved']:.3g}.",
        "",
    ]
