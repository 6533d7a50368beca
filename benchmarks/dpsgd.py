"""DP-SGD accounting against the peers, the accounting call alone in a warm process: this
library, dp_accounting (pessimistic and optimistic) and prv_accountant (eps_error 0.01 and
0.001) on the Poisson-subsampled Gaussian, in one run. Writes a Markdown table and the raw
results next to it (``--output``; default ``dpsgd-warm.md`` in the temporary directory).

The user's path (a fresh process per job, import included, peers interleaved), which
writes ``docs/benchmarks-dpsgd.md``, is ``benchmarks/dpsgd_user_path.py``; this script
isolates the accounting call (imports and a warm-up call excluded)::

    python benchmarks/dpsgd.py                        # every row (hours)
    python benchmarks/dpsgd.py --quick                # CI-sized smoke run
    python benchmarks/dpsgd.py --rows mnist,het --accountants ours,prv-0.01 --timeout 300

Peers (benchmark-only, never dependencies of the project), installed without their pins
(dp-accounting pins attrs<24 but imports fine with ours; dm-tree is needed only by its
tests)::

    pip install --no-deps dp-accounting==0.6.0 prv-accountant==0.2.0 absl-py

A peer that is not installed is a cell saying "not installed", never a missing one.

Each (accountant, row) run is a fresh child process (this script with ``--child``) with
its address space limited (``RLIMIT_AS``, ``--memory-limit`` GiB): a run that exceeds
``--timeout`` seconds is killed and recorded as "timeout", one that runs out of memory as
"out of memory". Time is ``time.perf_counter`` around the accounting call only (imports
and a tiny warm-up call excluded); peak memory is the child's peak resident set
(``VmHWM``), imports and warm-up included. Runs are repeated up to ``--repeats`` times
(median time) unless one takes longer than 60 s. One child runs at a time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
for _path in (str(HERE), str(ROOT)):  # ROOT first: the accountant next to this script
    if _path not in sys.path:
        sys.path.insert(0, _path)

import dpsgd_process  # noqa: E402
import dpsgd_report  # noqa: E402

#: A run longer than this many seconds is not repeated.
LONG_RUN = 60.0
GIB = 2**30


# ------------------------------------------------------------------------ this library


def ours_mechanism(sigma: float, q: float, cut: float):
    """One DP-SGD step as users run it: Gaussian noise of multiplier ``sigma`` cut at
    ``+-cut * sigma`` (renormalised, i.e. resampled), Poisson sampling rate ``q``, clip 1,
    accounted from its CDFs with no grid."""
    from accountant import mechanisms

    return mechanisms.SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=cut)


def ours_epsilon(schedule, cut: float, delta: float, accuracy: float | None = None):
    """Certified ``(eps_low, eps_high)`` at ``delta`` of a schedule of ``(sigma, q,
    steps)``: ``PrivacyBuckets()`` (default accuracy unless ``accuracy`` is given)."""
    from accountant import PrivacyBuckets

    buckets = PrivacyBuckets() if accuracy is None else PrivacyBuckets(accuracy=accuracy)
    for sigma, q, steps in schedule:
        buckets = buckets.compose(ours_mechanism(sigma, q, cut), steps)
    bounds = buckets.epsilon(delta)
    return float(bounds.lower), float(bounds.upper)


def ours_calibrate(q, steps, cut, epsilon, delta):
    """``accountant.calibrate_noise_multiplier`` at its defaults: ``(sigma_low, sigma,
    evaluations, note)``, ``sigma`` certified (its upper delta meets ``delta``) and
    ``sigma_low`` certified too small."""
    from accountant import calibrate_noise_multiplier

    found = calibrate_noise_multiplier(
        epsilon=epsilon, delta=delta, sampling_rate=q, steps=steps, cut=cut, dimension=1
    )
    return found.sigma_low, found.sigma, found.evaluations, "; ".join(found.notes)


# -------------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """A benchmark row: ``steps`` steps (per setting if ``settings > 1``, a heterogeneous
    run from :func:`schedule`); ``epsilon`` set makes it a calibration of sigma."""

    name: str
    sigma: float
    q: float
    steps: int
    delta: float = 1e-5
    cut: float = 8.0
    dp_interval: float = 1e-5
    settings: int = 1
    epsilon: float | None = None
    accuracy: float | None = None  # this library's PrivacyBuckets accuracy (None: default)

    @property
    def title(self) -> str:
        if self.epsilon is not None:
            what = f"sigma for eps={self.epsilon:g}, q={self.q:.4g}, {self.steps:,} steps"
        elif self.settings > 1:
            what = f"{self.settings:,} settings x {self.steps} steps (seeded schedule)"
        else:
            what = f"sigma={self.sigma:g}, q={self.q:.4g}, {self.steps:,} steps"
        return f"{what}, delta={self.delta:g}, cut +-{self.cut:g} sigma"


#: Seed and ranges of the heterogeneous schedule (uniform sigma and q per setting).
SCHEDULE_SEED, SIGMA_RANGE, Q_RANGE = 12, (0.8, 1.5), (0.002, 0.01)

ROWS = {
    r.name: r
    for r in (
        Row("r1", 1.1, 0.004, 1_000),
        Row("r2", 0.8, 0.01, 10_000),
        Row("r3", 1.1, 0.004, 10_000),
        Row("mnist", 1.1, 256 / 60000, 14_062),
        Row("1e5", 1.0, 1e-3, 100_000, delta=1e-6),
        Row("1e6", 1.0, 1e-3, 1_000_000, delta=1e-6),
        Row("tiny-delta", 4.0, 0.00033, 10_000, delta=1e-15, cut=10.0),
        Row("het", 0.0, 0.0, 10, settings=1000, dp_interval=1e-4, accuracy=1e-3),
        Row("calibrate", 0.0, 256 / 60000, 14_062, dp_interval=1e-4, epsilon=3.0),
    )
}
QUICK_ROWS = {
    r.name: r
    for r in (
        Row("quick", 1.1, 0.01, 50, dp_interval=1e-4),
        Row("quick-het", 0.0, 0.0, 5, settings=4, dp_interval=1e-4),
        Row("quick-calibrate", 0.0, 0.01, 50, dp_interval=1e-4, epsilon=2.0),
    )
}


def schedule(row: Row) -> list[tuple[float, float, int]]:
    """``(sigma, q, steps)`` entries: one, or ``row.settings`` drawn uniformly from
    :data:`SIGMA_RANGE` x :data:`Q_RANGE` by ``random.Random(SCHEDULE_SEED)``."""
    if row.settings == 1:
        return [(row.sigma, row.q, row.steps)]
    draw = random.Random(SCHEDULE_SEED)
    return [
        (draw.uniform(*SIGMA_RANGE), draw.uniform(*Q_RANGE), row.steps) for _ in range(row.settings)
    ]


def cut_mass(row: Row) -> float:
    """Upper bound (union bound) on the distinguishing mass the cut adds over the whole
    run: ``sum steps * q * P(X >= cut * sigma - 1)``, ``X ~ N(0, sigma^2)``, clipping norm
    1. Only ``B = (1 - q) p + q p(. - 1)`` reaches past the cut, by at most that mass per
    step (renormalisation of the truncated body changes it by a factor 1 + O(1e-15))."""
    return sum(
        steps * q * 0.5 * math.erfc((row.cut * sigma - 1.0) / (sigma * math.sqrt(2.0)))
        for sigma, q, steps in schedule(row)
    )


@dataclass(frozen=True)
class Accountant:
    key: str
    label: str
    module: str | None = None  # the peer's import name
    pessimistic: bool = True
    eps_error: float = 0.0


ACCOUNTANTS = {
    a.key: a
    for a in (
        Accountant("ours", "this library"),
        Accountant("dp-pessimistic", "dp_accounting pessimistic", "dp_accounting"),
        Accountant("dp-optimistic", "dp_accounting optimistic", "dp_accounting", False),
        Accountant("prv-0.01", "prv_accountant eps_error=0.01", "prv_accountant", eps_error=0.01),
        Accountant("prv-0.001", "prv_accountant eps_error=0.001", "prv_accountant", eps_error=1e-3),
    )
}


# ------------------------------------------------------------------------------- child


def compute(accountant: Accountant, row: Row) -> dict:
    """The accounting call: eps (``lower``/``estimate``/``upper``, whichever the
    accountant gives) or, for a calibration row, sigma."""
    import dpsgd_peers as peers

    entries = schedule(row)
    if row.epsilon is not None:
        if accountant.key == "ours":
            low, high, count, note = ours_calibrate(
                row.q, row.steps, row.cut, row.epsilon, row.delta
            )
            return {"lower": low, "upper": high, "evaluations": count, "note": note}
        if accountant.module == "dp_accounting":
            args = (row.q, row.steps, row.epsilon, row.delta, row.dp_interval)
            return {"estimate": peers.dp_calibrate(*args, accountant.pessimistic)}
        args = (row.q, row.steps, row.epsilon, row.delta, accountant.eps_error)
        return {"estimate": peers.prv_calibrate(*args)}
    if accountant.key == "ours":
        low, high = ours_epsilon(entries, row.cut, row.delta, row.accuracy)
        return {"lower": low, "upper": high}
    if accountant.module == "dp_accounting":
        value = peers.dp_epsilon(entries, row.delta, row.dp_interval, accountant.pessimistic)
        return {"upper" if accountant.pessimistic else "lower": value}
    low, estimate, high = peers.prv_epsilon(entries, row.delta, accountant.eps_error)
    return {"lower": low, "estimate": estimate, "upper": high}


def child(spec: dict) -> None:
    """Child-process mode: one run, one JSON line on stdout (progress lines before it)."""
    accountant = ACCOUNTANTS[spec["accountant"]]
    row = Row(**spec["row"])
    out: dict = {"status": "ok"}
    try:
        import importlib

        importlib.import_module(accountant.module or "accountant")
    except ImportError as error:
        print(json.dumps({"status": "not installed", "message": str(error)}), flush=True)
        return
    tiny = Row("warm-up", 1.0, 0.01, 2, delta=1e-3, dp_interval=1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            compute(accountant, tiny)
            del caught[:]
            start = time.perf_counter()
            out.update(compute(accountant, row))
            out["seconds"] = time.perf_counter() - start
        except MemoryError as error:
            out = {"status": "out of memory", "message": f"MemoryError: {error}"[:300]}
        except Exception as error:
            out = {"status": "error", "message": f"{type(error).__name__}: {error}"[:300]}
    notes = sorted({f"{w.category.__name__}: {w.message}"[:400] for w in caught})
    out["warnings"] = notes
    if accountant.key == "ours":
        import accountant as engine

        out["engine"] = str(Path(engine.__file__).parent)
    out["peak_mib"] = dpsgd_process.peak_rss_mib()
    print(json.dumps(dpsgd_report.finite_json(out)), flush=True)


# ------------------------------------------------------------------------------ parent


def measure(row: Row, accountant: Accountant, args: argparse.Namespace) -> dict:
    """Up to ``args.repeats`` runs (one if a run fails or takes over :data:`LONG_RUN` s)."""
    spec = {"accountant": accountant.key, "row": asdict(row)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    runs = []
    for _ in range(args.repeats):
        dpsgd_report.log(f"  {row.name} / {accountant.key} (run {len(runs) + 1}) ...")
        runs.append(dpsgd_process.run_child(command, args.timeout, int(args.memory_limit * GIB)))
        last = runs[-1]
        dpsgd_report.log(f"    {last.get('status')} {last.get('seconds', '')}")
        if last["status"] != "ok" or last.get("seconds", math.inf) > LONG_RUN:
            break
    return dpsgd_report.summarise(row, accountant, runs, args)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized rows (seconds)")
    parser.add_argument("--rows", help="comma-separated row names (default: all)")
    parser.add_argument("--accountants", help=f"comma-separated subset of {','.join(ACCOUNTANTS)}")
    parser.add_argument("--repeats", type=int, help="runs per cell (3; 1 with --quick)")
    parser.add_argument("--timeout", type=float, help="seconds per run (900; 120 with --quick)")
    parser.add_argument("--memory-limit", type=float, default=12.0, help="GiB per run (12)")
    parser.add_argument(
        "--output", type=Path, default=Path(tempfile.gettempdir()) / "dpsgd-warm.md"
    )
    parser.add_argument("--json", type=Path, help="raw results (default: --output as .json)")
    parser.add_argument("--render", type=Path, help="rewrite --output from this JSON, no runs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return args
    table = QUICK_ROWS if args.quick else ROWS
    args.selected_rows = _choose(parser, "--rows", args.rows, table)
    args.selected_accountants = _choose(parser, "--accountants", args.accountants, ACCOUNTANTS)
    if args.timeout is None:
        args.timeout = 120.0 if args.quick else 900.0
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    for name in ("repeats", "timeout", "memory_limit"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {value!r}")
    if args.json is None:
        args.json = args.output.with_suffix(".json")
    return args


def _choose(parser, option: str, given: str | None, table: dict) -> list:
    names = [n.strip() for n in (given or ",".join(table)).split(",") if n.strip()]
    unknown = [n for n in names if n not in table]
    if unknown or not names:
        parser.error(f"{option}: unknown {unknown or given!r}; choose from {', '.join(table)}")
    return [table[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    if args.render:
        print(dpsgd_report.render(args.render, args.output))
        return 0
    meta = dpsgd_report.metadata(argv, args, ROOT)
    meta["long_run"] = LONG_RUN
    meta["schedule"] = {"seed": SCHEDULE_SEED, "sigma": SIGMA_RANGE, "q": Q_RANGE}
    meta["cut_mass"] = {
        r.name: {"mass": cut_mass(r), "delta": r.delta}
        for r in args.selected_rows
        if r.epsilon is None
    }
    results: list[dict] = []
    missing: dict[str, str] = {}
    interrupted = False
    try:
        for row in args.selected_rows:
            dpsgd_report.log(f"{row.name}: {row.title}")
            for accountant in args.selected_accountants:
                if accountant.module in missing:
                    runs = [{"status": "not installed", "message": missing[accountant.module]}]
                    results.append(dpsgd_report.summarise(row, accountant, runs, args))
                else:
                    results.append(measure(row, accountant, args))
                    if results[-1]["status"] == "not installed":
                        missing[accountant.module] = results[-1]["note"]
                dpsgd_report.write(results, meta, args)
    except KeyboardInterrupt:
        interrupted = True
    meta["finished"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta["interrupted"] = interrupted
    print(dpsgd_report.write(results, meta, args))
    return 130 if interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
