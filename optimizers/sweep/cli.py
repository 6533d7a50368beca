"""``accountant sweep``: a grid of learning runs on a local process pool or a Dask
cluster, stored one file per run (registered in the ``accountant.commands`` entry-point
group, as ``accountant learn`` is).

Every option is checked before any work; a bad one is refused in one line naming the
option and the value (exit status 2). Lists are comma-separated (``--epsilons
0.5,1``); ``--sampling-rates`` takes ``additive`` for the additive pair.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from accountant.errors import InvalidInputError
from accountant.report.terminal import check_output_path
from accountant.validation import (
    check_choice,
    check_positive_int,
    check_positive_real,
)
from optimizers.problem import EPOCHS, WARM_STARTS, Schedule
from optimizers.sweep.executors import SweepOutcome, import_distributed, run_sweep
from optimizers.sweep.spec import GRID_CHECKS, SweepSpec, grid_converter
from optimizers.sweep.task import RunResult

__all__ = ["register"]

DESCRIPTION = (
    "Learn truncated noise for every combination of the listed eps, n, utility losses, "
    "training bounds, pairs and seeds, in parallel (a local process pool, or a Dask "
    "cluster with --scheduler). Each finished run is written to --store as "
    "<run id>.json and <run id>.npy; running the same sweep again skips finished runs "
    "and continues interrupted ones from their checkpoints."
)
EPILOG = (
    "Exit status: 0 when every run is finished; 1 when a run failed (the others are "
    "stored); 2 for bad arguments; 130 when interrupted (finished runs are stored, "
    "running ones keep their checkpoints)."
)
#: Comma-separated options: flag -> (spec field, how one item is read).
LISTS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--epsilons": ("epsilons", float),
    "--times": ("times", int),
    "--utilities": ("utilities", str),
    "--losses": ("losses", str),
    "--target-deltas": ("target_deltas", lambda t: None if float(t) == 0 else float(t)),
    "--sampling-rates": ("sampling_rates", lambda t: None if t == "additive" else float(t)),
    "--seeds": ("seeds", int),
}
ITEM_KINDS: dict[Callable[[str], Any], str] = {float: "numbers", int: "integers", str: "names"}
SPECIAL_KINDS = {
    "sampling_rates": "rates or 'additive'",
    "target_deltas": "numbers (0: no target)",
}


def register(subparsers) -> None:
    """Add the ``sweep`` subcommand to the ``accountant`` parser."""
    parser = subparsers.add_parser(
        "sweep",
        help="a grid of learning runs on a process pool or a Dask cluster (needs [torch])",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    grid = parser.add_argument_group("grid (comma-separated lists)")
    grid.add_argument("--epsilons", required=True, help="eps after all releases, e.g. 0.5,1")
    grid.add_argument("--times", required=True, help="numbers of releases n, e.g. 1,8")
    grid.add_argument("--utilities", default="L1", help="L1 and/or L2 (default: L1)")
    grid.add_argument("--losses", default="ADP", help="ADP, PDP and/or MA (default: ADP)")
    grid.add_argument(
        "--sampling-rates",
        default="additive",
        help="'additive' (the additive pair) and/or DP-SGD sampling rates q (default: additive)",
    )
    grid.add_argument(
        "--target-deltas",
        default="0",
        help="certified deltas to learn for; 0: none, the paper's objective (default: 0)",
    )
    grid.add_argument("--seeds", default="0", help="schedule seeds (default: 0)")
    shared = parser.add_argument_group("shared by every run")
    shared.add_argument("--bound", type=float, default=5.0, help="noise range (default: 5)")
    shared.add_argument("--step", type=float, default=0.05, help="grid step (default: 0.05)")
    shared.add_argument(
        "--sensitivity", type=float, default=1.0, help="or clipping norm (DP-SGD) (default: 1)"
    )
    shared.add_argument(
        "--conversion", default=None, help="tight or paper, for --losses MA (default: tight)"
    )
    shared.add_argument(
        "--bucket-width", type=float, default=None, help="loss width of ADP/PDP (default: ~0.005)"
    )
    defaults = Schedule()
    shared.add_argument(
        "--epochs",
        type=int,
        default=defaults.epochs,
        help=f"Adam steps (default: {EPOCHS})",
    )
    shared.add_argument(
        "--learning-rate",
        type=float,
        default=defaults.learning_rate,
        help=f"Adam learning rate (default: {defaults.learning_rate})",
    )
    shared.add_argument(
        "--warm-start",
        default=defaults.warm_start,
        help="gaussian (the best truncated Gaussian) or model (a cold start from the "
        f"seed) (default: {defaults.warm_start})",
    )
    shared.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        help=f"epochs between checkpoints (default: {defaults.checkpoint_every})",
    )
    run = parser.add_argument_group("running")
    run.add_argument("--store", required=True, help="results directory (created if missing)")
    run.add_argument("--scheduler", default=None, help="Dask scheduler address ([cluster])")
    run.add_argument("--workers", type=int, default=None, help="local pool size (default: CPUs)")
    run.add_argument("--no-checkpoints", action="store_true", help="restart runs from scratch")
    run.add_argument(
        "--device",
        default="cpu",
        help="torch device the runs train on: cpu, cuda or cuda:N; not part of the run ids "
        "(default: cpu)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=main)


def _list(flag: str, text: str) -> tuple:
    field, read = LISTS[flag]
    try:
        items = [read(item.strip()) for item in text.split(",")]
    except ValueError:
        kind = SPECIAL_KINDS.get(field) or ITEM_KINDS[read]
        raise InvalidInputError(
            f"{flag} must be a comma-separated list of {kind}, got {text!r}"
        ) from None
    return grid_converter(flag, GRID_CHECKS[field])(items)


def _spec(args: argparse.Namespace) -> SweepSpec:
    """The spec of the arguments; every value checked under its flag's name."""
    grid = {LISTS[flag][0]: _list(flag, getattr(args, LISTS[flag][0])) for flag in LISTS}
    if args.conversion is not None:
        check_choice("--conversion", args.conversion, ("tight", "paper"))
        if "MA" not in grid["losses"]:
            raise InvalidInputError(
                f"--conversion {args.conversion!r} applies to --losses MA only, got "
                f"--losses {args.losses!r}"
            )
    if args.bucket_width is not None:
        check_positive_real("--bucket-width", args.bucket_width)
        if set(grid["losses"]) == {"MA"}:
            raise InvalidInputError(
                f"--bucket-width {args.bucket_width!r} applies to --losses ADP or PDP only, "
                f"got --losses {args.losses!r}"
            )
    if args.checkpoint_every is not None and args.no_checkpoints:
        raise InvalidInputError(
            f"--checkpoint-every {args.checkpoint_every!r} contradicts --no-checkpoints"
        )
    schedule = Schedule(
        epochs=check_positive_int("--epochs", args.epochs),
        learning_rate=check_positive_real("--learning-rate", args.learning_rate),
        warm_start=check_choice("--warm-start", args.warm_start, WARM_STARTS),
        checkpoint_every=check_positive_int("--checkpoint-every", args.checkpoint_every)
        if args.checkpoint_every is not None
        else Schedule().checkpoint_every,
    )
    return SweepSpec(
        **grid,
        bound=check_positive_real("--bound", args.bound),
        step=check_positive_real("--step", args.step),
        sensitivity=check_positive_real("--sensitivity", args.sensitivity),
        conversion=args.conversion or "tight",
        bucket_width=args.bucket_width,
        schedule=schedule,
    )


def _check_running(args: argparse.Namespace) -> None:
    check_output_path("--store", args.store, directory=True)
    if args.workers is not None:
        check_positive_int("--workers", args.workers)
    if args.scheduler is not None:
        if not args.scheduler.strip():
            raise InvalidInputError(f"--scheduler must be an address, got {args.scheduler!r}")
        if args.workers is not None:
            raise InvalidInputError(
                f"--workers {args.workers!r} sets the local pool's size; with --scheduler the "
                "cluster's workers run the sweep"
            )
        import_distributed()  # the [cluster] extra, before any work


def _pair(result: RunResult) -> str:
    q = result.task.problem.q
    return "additive" if q is None else f"q={q:g}"


def _row(result: RunResult) -> dict[str, Any]:
    return {"run_id": result.run_id, **result.task.parameters(), **result.summary()}


def _print_table(outcome: SweepOutcome) -> None:
    header = (
        f"{'run id':<17}{'eps':>7}{'n':>6} {'U':<3}{'loss':<5}{'pair':<10}{'seed':>5}"
        f"{'target delta':>13}{'certified delta':>17}{'utility':>11} {'returned':<9}"
        f"{'target':<7}{'epochs':>7}{'wall s':>8}"
    )
    print(header)
    for r in outcome.results:
        p = r.task.problem
        target = {None: "-", True: "met", False: "MISSED"}[r.met_target]
        wanted = "-" if p.target_delta is None else f"{p.target_delta:.3g}"
        print(
            f"{r.run_id:<17}{p.epsilon:>7.4g}{p.times:>6} {p.utility:<3}{p.loss:<5}"
            f"{_pair(r):<10}{r.seed:>5}{wanted:>13}{r.delta_certified:>17.6e}{r.utility:>11.6f} "
            f"{r.returned:<9}{target:<7}{r.epochs_run:>7}{r.wall_seconds:>8.1f}"
        )
    print(
        f"{len(outcome.results)} runs finished: {len(outcome.ran)} run now, "
        f"{len(outcome.skipped)} found in the store"
    )
    for run_id, error in outcome.failed:
        print(f"run {run_id} failed: {error}")
    for run_id in outcome.stopped:
        print(f"run {run_id} was interrupted; it continues from its checkpoint next time")


def main(args: argparse.Namespace) -> int:
    """Run ``accountant sweep``; returns the exit status (see :data:`EPILOG`)."""
    spec = _spec(args)
    _check_running(args)
    outcome = run_sweep(
        spec,
        args.store,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=not args.no_progress,
        checkpoints=not args.no_checkpoints,
        device=args.device,
    )
    if args.json:
        record = {
            "store": args.store,
            "runs": [_row(r) for r in outcome.results],
            "ran": list(outcome.ran),
            "skipped": list(outcome.skipped),
            "stopped": list(outcome.stopped),
            "failed": [{"run_id": i, "error": e} for i, e in outcome.failed],
        }
        print(json.dumps(record, indent=2))
    else:
        _print_table(outcome)
    if outcome.stopped:
        return 130
    return 1 if outcome.failed else 0
