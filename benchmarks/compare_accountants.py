"""Time and accuracy of PrivacyBuckets against dp_accounting and prv_accountant.

One process, the same inputs for every accountant; writes a markdown report
(default ``docs/benchmarks.md``) and prints it::

    python benchmarks/compare_accountants.py                  # everything (minutes)
    python benchmarks/compare_accountants.py --quick          # W1 and W4, coarse settings
    python benchmarks/compare_accountants.py --workloads W1,W3 --output /tmp/b.md

Peers missing? Only this engine's rows are produced. A run that fails, exceeds
``--time-limit`` seconds (interrupted by SIGALRM) or is predicted to exceed it is a
row saying so, never a crash. Ctrl-C writes the rows measured so far.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(Path(__file__).resolve().parent)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import peers  # noqa: E402
import report  # noqa: E402
from report import Row  # noqa: E402
from scipy.stats import norm  # noqa: E402
from timing import failure, log, peak_rss_mib, timed  # noqa: E402

from accountant import WorstCasePair, noise  # noqa: E402
from accountant.buckets import PrivacyBuckets  # noqa: E402
from accountant.mechanisms import GaussianMechanism  # noqa: E402

OURS = "this engine"
DP = "dp_accounting"
PRV = "prv_accountant"
TRUTH = "closed form"
#: Grid step of the fallback for W4 if analytic bucketing is unavailable.
W4_FALLBACK_STEP = 0.1
#: prv_accountant grids above this many points are skipped (memory and time).
PRV_MAX_POINTS = 40_000_000
FULL = {"ours": (1e-2, 1e-4, 1e-6), DP: (1e-3, 1e-4, 1e-5, 1e-6), PRV: (1e-2, 1e-3, 1e-4, 1e-5)}
QUICK = {"ours": (1e-2,), DP: (1e-3,), PRV: (1e-2,)}


# ---------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    releases: int
    epsilon: float
    build: Callable[[], WorstCasePair] | None = None  # discrete pair (W1-W3)
    sigma: float | None = None  # untruncated Gaussian, sensitivity 1 (W4)


def _w1() -> WorstCasePair:
    return WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0)


def _w2() -> WorstCasePair:
    return WorstCasePair.subsampled(noise.truncated_gaussian(100.0, 500.0, 0.5), q=0.1, clip=1.0)


def _w3() -> WorstCasePair:
    return WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 1.0 / 60.0), 1.0)


WORKLOADS = {
    "W1": Workload(
        "W1", "truncated Gaussian σ=100, bound 500, step 0.5, sensitivity 1", 128, 0.3, _w1
    ),
    "W2": Workload("W2", "W1's noise as DP-SGD pair, q=0.1, clip 1", 1024, 1.0, _w2),
    "W3": Workload(
        "W3", "truncated Gaussian σ=100, bound 500, 60,001 points (step 1/60)", 1024, 1.0, _w3
    ),
    "W4": Workload("W4", "Gaussian σ=10 (no truncation), sensitivity 1", 1000, 1.0, sigma=10.0),
}


def gaussian_delta(sigma: float, releases: int, epsilon: float) -> float:
    """Closed form for ``releases`` Gaussian mechanisms (Balle & Wang 2018, Thm. 8)::

    delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),   mu = sqrt(n) / sigma.
    """
    mu = math.sqrt(releases) / sigma
    return float(
        norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    )


# ------------------------------------------------------------------------------- rows


# -------------------------------------------------------------------------- this engine


def ours_delta(target: object, releases: int, epsilon: float, accuracy: float):
    """A fresh ``PrivacyBuckets`` each call, so nothing is reused between timings."""
    return PrivacyBuckets(accuracy=accuracy).compose(target, times=releases).delta(epsilon)


def warm_up() -> None:
    """Load the cached numba kernels (first ever call compiles) before any timing."""
    small = WorstCasePair.additive(noise.truncated_gaussian(10.0, 50.0, 0.5), 1.0)
    ours_delta(small, 64, 0.5, 1e-3)
    with contextlib.suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours_delta(GaussianMechanism(10.0), 4, 0.5, 1e-1)
    if peers.available(DP):
        peers.dp_gaussian_delta(1.0, 1.0, 2, 1.0, 1e-2, True)
    if peers.available(PRV):
        peers.prv_gaussian_delta(1.0, 1.0, 2, 1.0, 1e-1)


def ours_rows(w: Workload, target: object, accuracies: tuple, limit: float, label: str) -> list:
    rows: list[Row] = []
    for accuracy in accuracies:
        row = Row(w.name, OURS, f"accuracy={accuracy:g}{label}")
        if rows and "time limit" in rows[-1].note:
            row.note = "skipped: the coarser accuracy already exceeded the time limit"
        else:
            try:
                call = functools.partial(ours_delta, target, w.releases, w.epsilon, accuracy)
                bounds, row.seconds, messages = timed(call, limit)
                row.lower, row.upper = float(bounds.lower), float(bounds.upper)
                row.note = f"width {bounds.bucket_width:.3g}"
                if messages:
                    row.note += f"; CertificationWarning: reached {bounds.achieved_accuracy:.3g}"
            except Exception as error:
                failure(row, error, limit)
        rows.append(row)
        log(f"  {row.cells()}")
    return rows


def ours_target(w: Workload, pair: WorstCasePair | None) -> tuple[object, str]:
    """W4 through analytic bucketing if the engine supports it, else the grid pair (the
    discretised mechanism: its delta differs slightly from the continuous one)."""
    if pair is not None:
        return pair, ""
    mechanism = GaussianMechanism(w.sigma)
    try:
        PrivacyBuckets().compose(mechanism, times=w.releases)
    except Exception as error:
        reason = f"{type(error).__name__}"
        return (
            mechanism.pair(W4_FALLBACK_STEP),
            f", grid pair step {W4_FALLBACK_STEP:g} (analytic bucketing raised {reason})",
        )
    return mechanism, ", analytic GaussianMechanism"


# -------------------------------------------------------------------------------- peers


def _too_slow(previous: Row | None, limit: float) -> str | None:
    """Each setting is 10x finer than the previous one, so its cost grows >= 10x."""
    if previous is None:
        return None
    if previous.note.startswith("skipped") or "time limit" in previous.note:
        return "skipped: a coarser setting was already skipped or exceeded the time limit"
    if previous.seconds is not None and previous.seconds * 10.0 > limit:
        return (
            f"skipped: would exceed ~{limit:g} s (the 10x coarser setting took "
            f"{previous.seconds:.3g} s)"
        )
    return None


def dp_rows(w: Workload, pair: WorstCasePair | None, intervals: tuple, limit: float) -> list:
    rows: list[Row] = []
    for interval in intervals:
        row = Row(w.name, DP, f"interval={interval:g}")
        skip = _too_slow(rows[-1] if rows else None, limit)
        if skip:
            row.note = skip
            rows.append(row)
            continue
        values, seconds = {}, {}
        try:
            for pessimistic in (False, True):
                if pair is not None:
                    call = functools.partial(peers.dp_pair_delta, pair.a, pair.b)
                else:
                    call = functools.partial(peers.dp_gaussian_delta, w.sigma, 1.0)
                call = functools.partial(call, w.releases, w.epsilon, interval, pessimistic)
                values[pessimistic], seconds[pessimistic], _ = timed(call, limit)
            row.lower, row.upper = values[False], values[True]
            row.seconds = seconds[False] + seconds[True]
            row.parts = {"optimistic": seconds[False], "pessimistic": seconds[True]}
            row.note = (
                f"lower: optimistic ({seconds[False]:.3g} s), "
                f"upper: pessimistic ({seconds[True]:.3g} s)"
            )
        except Exception as error:
            failure(row, error, limit)
        rows.append(row)
        log(f"  {row.cells()}")
    return rows


def prv_rows(w: Workload, pair: WorstCasePair | None, errors: tuple, limit: float) -> list:
    rows: list[Row] = []
    prvs = (
        peers.prv_pair_prvs(pair.a, pair.b)
        if pair is not None
        else peers.prv_gaussian_prvs(w.sigma, 1.0)
    )
    for eps_error in errors:
        row = Row(w.name, PRV, f"eps_error={eps_error:g}, delta_error={peers.DELTA_ERROR:g}")
        skip = _too_slow(rows[-1] if rows else None, limit)
        points = peers.prv_domain_size(prvs, w.releases, eps_error)
        if skip is None and points > PRV_MAX_POINTS:
            skip = f"skipped: {points:.3g} grid points (> {PRV_MAX_POINTS:.0e}; time and memory)"
        if skip:
            row.note = skip
            rows.append(row)
            continue
        try:
            if pair is not None:
                call = functools.partial(peers.prv_pair_delta, pair.a, pair.b)
            else:
                call = functools.partial(peers.prv_gaussian_delta, w.sigma, 1.0)
            call = functools.partial(call, w.releases, w.epsilon, eps_error)
            (row.lower, estimate, row.upper), row.seconds, _ = timed(call, limit)
            row.note = f"estimate {estimate:.9g}; {points:.3g} grid points"
        except Exception as error:
            failure(row, error, limit)
        rows.append(row)
        log(f"  {row.cells()}")
    return rows


#: Relative slack before brackets count as disjoint: peers' estimates carry rounding at
#: the 1e-14 level (dp_accounting's equal lower and upper on W2, for instance).
DISJOINT_SLACK = 1e-9


def check_consistency(rows: list[Row]) -> None:
    """Flag brackets that miss the truth (W4) or are disjoint from this engine's tightest
    one by more than :data:`DISJOINT_SLACK` relative."""
    reference = [r for r in rows if r.ok and r.accountant in (TRUTH, OURS)]
    if not reference:
        return
    best = min(reference, key=lambda r: r.upper - r.lower)
    slack = DISJOINT_SLACK * best.upper
    for row in rows:
        if not row.ok or row is best:
            continue
        if row.upper < best.lower - slack or row.lower > best.upper + slack:
            which = "the closed form" if best.accountant == TRUTH else "this engine's best bracket"
            row.note += f"; MISSES {which}"


# ------------------------------------------------------------------ speed-up and memory


def speed_up(w1_rows: list[Row], pair: WorstCasePair, limit: float) -> dict:
    """Our time at the accuracy of dp_accounting's bracket at its finest interval on W1."""
    measured = [r for r in w1_rows if r.accountant == DP and r.ok]
    if not measured:
        return {"status": "dp_accounting unavailable or failed on W1"}
    finest = measured[-1]
    bracket = finest.bracket
    accuracy = min(max(bracket, 1e-12), 0.999)
    times, bounds = [], None
    try:
        for _ in range(3):
            call = functools.partial(ours_delta, pair, 128, 0.3, accuracy)
            bounds, seconds, _ = timed(call, limit)
            times.append(seconds)
    except Exception as error:
        return {"status": f"our run failed: {failure(Row('', '', ''), error, limit).note}"}
    ours = statistics.median(times)
    pessimistic = finest.parts["pessimistic"]
    return {
        "status": "ok",
        "setting": finest.setting,
        "dp_bracket": bracket,
        "dp_seconds": finest.seconds,
        "dp_pessimistic_seconds": pessimistic,
        "accuracy": accuracy,
        "ours_seconds": ours,
        "ours_times": times,
        "ours_bracket": bounds.achieved_accuracy,
        "ratio": finest.seconds / ours,
        "ratio_pessimistic": pessimistic / ours,
    }


def memory_probe(workload: str, accuracy: float) -> None:
    """Child-process mode: imports, then one run of our engine on ``workload`` (no warm-up:
    loading the numba cache is part of a first call); print JSON with the peak RSS."""
    import tracemalloc

    w = WORKLOADS[workload]
    pair = w.build()
    baseline = peak_rss_mib()
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        bounds = ours_delta(pair, w.releases, w.epsilon, accuracy)
        seconds = time.perf_counter() - start
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "accuracy": accuracy,
                "seconds": seconds,
                "lower": float(bounds.lower),
                "upper": float(bounds.upper),
                "achieved": bounds.achieved_accuracy,
                "peak_rss_mib": peak_rss_mib(),
                "baseline_rss_mib": baseline,
                "tracemalloc_peak_mib": traced / 2**20,
            }
        )
    )


def measure_memory(workload: str, accuracy: float, limit: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--memory-probe", workload]
    command += ["--memory-accuracy", repr(accuracy)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": f"exceeded {limit:g} s"}
    except (subprocess.CalledProcessError, ValueError, IndexError) as error:
        stderr = getattr(error, "stderr", "") or ""
        return {"error": f"{type(error).__name__}: {stderr.strip()[-300:]}"}


# -------------------------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="W1 and W4, coarse settings")
    parser.add_argument("--workloads", help="comma-separated subset of W1,W2,W3,W4")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument(
        "--time-limit", type=float, help="seconds per call (default 180, 30 with --quick)"
    )
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    parser.add_argument("--memory-accuracy", type=float, default=1e-4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.time_limit is None:
        args.time_limit = 30.0 if args.quick else 180.0
    default = "W1,W4" if args.quick else ",".join(WORKLOADS)
    args.selected = [n.strip().upper() for n in (args.workloads or default).split(",") if n]
    unknown = [n for n in args.selected if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    return args


def run_workload(w: Workload, settings: dict, limit: float) -> tuple[list[Row], object]:
    log(f"{w.name}: {w.title}, n={w.releases}, eps={w.epsilon:g}")
    pair = w.build() if w.build is not None else None
    target, label = ours_target(w, pair)
    rows = ours_rows(w, target, settings["ours"], limit, label)
    if settings is FULL and isinstance(target, GaussianMechanism):
        grid = GaussianMechanism(w.sigma).pair(W4_FALLBACK_STEP)
        extra = f", grid pair GaussianMechanism({w.sigma:g}).pair({W4_FALLBACK_STEP:g})"
        rows += ours_rows(w, grid, (1e-4,), limit, extra)
    if peers.available(DP):
        rows += dp_rows(w, pair, settings[DP], limit)
    else:
        rows.append(Row(w.name, DP, "", note="skipped: dp_accounting not installed"))
    if peers.available(PRV):
        rows += prv_rows(w, pair, settings[PRV], limit)
    else:
        rows.append(Row(w.name, PRV, "", note="skipped: prv_accountant not installed"))
    if w.sigma is not None:
        start = time.perf_counter()
        value = gaussian_delta(w.sigma, w.releases, w.epsilon)
        seconds = time.perf_counter() - start
        rows.append(
            Row(w.name, TRUTH, "Phi(-eps/mu+mu/2) - e^eps Phi(-eps/mu-mu/2)", seconds, value, value)
        )
    check_consistency(rows)
    return rows, pair


#: Sections of the page that other scripts measure (each names its command): carried over
#: from the page being replaced, verbatim, to the end of the new one.
KEPT_SECTIONS = ("## Sampling",)


def kept_sections(page: Path) -> str:
    """The :data:`KEPT_SECTIONS` of ``page`` (each up to the next ``## `` heading), or ``""``."""
    if not page.is_file():
        return ""
    kept = []
    for block in re.split(r"(?m)^(?=## )", page.read_text(encoding="utf-8")):
        if block.startswith(KEPT_SECTIONS):
            kept.append(block.rstrip("\n") + "\n")
    return "".join("\n" + block for block in kept)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.memory_probe:
        memory_probe(args.memory_probe, args.memory_accuracy)
        return 0
    settings = QUICK if args.quick else FULL
    rows: list[Row] = []
    extras: list[str] = []
    interrupted = False
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.UTC)
    snapshot = report.engine_snapshot()
    try:
        log("warm-up ...")
        warm_up()
        for name in args.selected:
            workload_rows, pair = run_workload(WORKLOADS[name], settings, args.time_limit)
            rows += workload_rows
            if name == "W1":
                log("speed-up figure on W1 ...")
                extras += report.speed_up_text(
                    speed_up(workload_rows, pair, args.time_limit), args.quick
                )
            if name == "W3":
                log("peak memory on W3 (child process) ...")
                accuracy = PrivacyBuckets().accuracy
                extras += report.memory_text(measure_memory("W3", accuracy, 4 * args.time_limit))
    except KeyboardInterrupt:
        interrupted = True
    command = " ".join(["python", "benchmarks/compare_accountants.py", *argv])
    described = [
        f"**{w.name}**: {w.title}; n = {w.releases}, eps = {w.epsilon:g}."
        for w in (WORKLOADS[name] for name in args.selected)
    ]
    context = {"load": (load_start, os.getloadavg()), "snapshot": snapshot, "started": started}
    text = report.report(rows, command, described, extras, context, interrupted)
    text += kept_sections(args.output)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 130 if interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
