"""Command line: ``accountant audit ...`` and subcommands registered by plugins.

Plugins (e.g. the torch extra's ``accountant learn``) register a callable under the
entry-point group ``accountant.commands``; it receives the subparsers object and
adds its own subcommand, setting ``func`` to the function that runs it.
Bad arguments exit with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from importlib.metadata import entry_points

import numpy as np

from accountant import noise
from accountant._checks import check_pmf
from accountant.audit import audit_additive, audit_pairs
from accountant.errors import (
    AccountantError,
    CertificationWarning,
    ShiftInvarianceWarning,
)
from accountant.pairs import WorstCasePair, additive_shift_pairs
from accountant.plotting import plot_delta_curves
from accountant.terminal import check_output_path

__all__ = ["build_parser", "check_output_path", "main"]

ENTRY_POINT_GROUP = "accountant.commands"
FAMILIES = ("truncated-gaussian", "truncated-laplace", "staircase", "uniform", "file")


class _UsageError(Exception):
    """A bad command-line argument (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage dump
        raise _UsageError(f"{self.prog}: error: {message}")


def _add_audit(subparsers) -> None:
    audit = subparsers.add_parser(
        "audit",
        help="bound an existing additive-noise mechanism",
        description="Bound an existing additive-noise mechanism. With no arguments: the "
        "paper's truncated Gaussian (sigma 100, bound 500, step 0.5), sensitivity 1, "
        "n = 128, eps = 0.3.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    noise_group = audit.add_argument_group("noise")
    noise_group.add_argument("--family", choices=FAMILIES, default="truncated-gaussian")
    noise_group.add_argument("--sigma", type=float, default=100.0, help="Gaussian sigma")
    noise_group.add_argument("--scale", type=float, default=100.0, help="Laplace scale b")
    noise_group.add_argument(
        "--stair-epsilon", type=float, default=0.3, help="staircase design epsilon"
    )
    noise_group.add_argument("--gamma", type=float, default=None, help="staircase gamma")
    noise_group.add_argument("--bound", type=float, default=500.0, help="truncation bound r")
    noise_group.add_argument("--step", type=float, default=0.5, help="grid step")
    noise_group.add_argument(
        "--pmf-file",
        default=None,
        help="with --family file: a .npy or text file holding the pmf (centred on 0 "
        "unless --start is given)",
    )
    noise_group.add_argument("--start", type=float, default=None, help="grid start of --pmf-file")
    mech = audit.add_argument_group("mechanism")
    mech.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity (or clip)")
    mech.add_argument(
        "--sampling-rate",
        type=float,
        default=None,
        help="audit the DP-SGD mixture pair with this Poisson sampling rate q",
    )
    mech.add_argument("-n", "--compositions", type=int, default=128, help="number of releases")
    query = audit.add_mutually_exclusive_group()
    query.add_argument("--epsilon", type=float, default=None, help="eps (default 0.3)")
    query.add_argument("--target-delta", type=float, default=None, help="find eps for delta")
    audit.add_argument("--direction", choices=("max", "A/B", "B/A"), default="max")
    audit.add_argument("--json", action="store_true", help="print JSON instead of a table")
    audit.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help="also draw the delta(eps) curves with their bounds (needs the [plot] extra)",
    )
    audit.set_defaults(func=_run_audit)


def _load_noise(args: argparse.Namespace) -> tuple[noise.NoiseDistribution, str]:
    family = args.family
    grid = f"bound {args.bound:g}, step {args.step:g}"
    if family == "truncated-gaussian":
        return noise.truncated_gaussian(args.sigma, args.bound, args.step), (
            f"truncated Gaussian (sigma {args.sigma:g}, {grid})"
        )
    if family == "truncated-laplace":
        return noise.truncated_laplace(args.scale, args.bound, args.step), (
            f"truncated Laplace (scale {args.scale:g}, {grid})"
        )
    if family == "staircase":
        stair = noise.staircase(
            args.sensitivity, args.stair_epsilon, args.bound, args.step, args.gamma
        )
        return stair, f"truncated staircase (eps {args.stair_epsilon:g}, {grid})"
    if family == "uniform":
        return noise.uniform(args.bound, args.step), f"uniform ({grid})"
    if args.pmf_file is None:
        raise _UsageError("accountant audit: error: --family file needs --pmf-file")
    try:
        # Reliability fix: an empty text file made loadtxt print a UserWarning to stderr,
        # so the error was no longer one line; the emptiness is reported below instead.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            if args.pmf_file.endswith(".npy"):
                values = np.load(args.pmf_file, allow_pickle=False)
            else:
                values = np.loadtxt(
                    args.pmf_file, delimiter="," if args.pmf_file.endswith(".csv") else None
                )
    except (OSError, ValueError) as exc:
        raise _UsageError(
            f"accountant audit: error: cannot read --pmf-file {args.pmf_file!r}: {exc}"
        ) from None
    values = np.ravel(values)
    try:
        check_pmf("pmf", values)
    except AccountantError as exc:  # reliability fix: name the flag, not only "pmf"
        raise _UsageError(f"accountant audit: error: --pmf-file {args.pmf_file!r}: {exc}") from None
    return noise.from_array(
        values, args.step, args.start
    ), f"pmf from {args.pmf_file} (step {args.step:g})"


def _run_audit(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.compositions < 1:
        raise _UsageError(
            "accountant audit: error: argument -n/--compositions: must be a positive integer, "
            f"got {args.compositions}"
        )
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise _UsageError(
            f"accountant audit: error: --plot must name a .png file, got {args.plot!r}"
        )
    if args.plot is not None:
        check_output_path("--plot", args.plot)
    epsilon = args.epsilon if args.epsilon is not None or args.target_delta is not None else 0.3
    chosen, description = _load_noise(args)
    common = {"epsilon": epsilon, "target_delta": args.target_delta, "direction": args.direction}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CertificationWarning)
        warnings.simplefilter("always", ShiftInvarianceWarning)
        if args.sampling_rate is not None:
            pairs = WorstCasePair.subsampled(chosen, args.sampling_rate, args.sensitivity)
            report = audit_pairs(
                pairs,
                args.compositions,
                shift_note="DP-SGD mixture pair (both directions)",
                **common,
            )
            description = (
                f"DP-SGD with {description}, q {args.sampling_rate:g}, clip {args.sensitivity:g}"
            )
        else:
            pairs = additive_shift_pairs(chosen, args.sensitivity)
            report = audit_additive(chosen, args.sensitivity, args.compositions, **common)
            description = f"{description}, sensitivity {args.sensitivity:g}"
        if args.plot is not None:
            plot_delta_curves(pairs, args.compositions, args.plot, title=description)
    notes = sorted({str(w.message) for w in caught})
    elapsed = time.perf_counter() - started
    if args.json:
        payload = report.to_dict()
        payload["mechanism"] = description
        payload["notes"] = notes
        payload["seconds"] = elapsed
        print(json.dumps(payload, indent=2))
    else:
        table = report.format_table().splitlines()
        table[0] = f"mechanism: {description}"
        print("\n".join(table))
        for note in notes:
            print(f"note: {note}")
        if args.plot is not None:
            print(f"plot written to {args.plot}")
        print(f"\n(computed in {elapsed:.2f} s)")
    return 0


def _unavailable(subparsers, name: str, reason: ImportError) -> None:
    """A subcommand whose plugin cannot be imported: running it reports why, in one line."""
    stub = subparsers.add_parser(name, help=f"(unavailable: {reason})", add_help=False)
    stub.add_argument("arguments", nargs=argparse.REMAINDER)

    def fail(args: argparse.Namespace) -> int:
        raise ImportError(str(reason))

    stub.set_defaults(func=fail)


def _load_plugins(subparsers) -> None:
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register = entry_point.load()
        except ImportError as exc:  # e.g. the [torch] extra is not installed
            _unavailable(subparsers, entry_point.name, exc)
            continue
        register(subparsers)


def build_parser() -> argparse.ArgumentParser:
    """The ``accountant`` parser with ``audit`` and every installed plugin subcommand."""
    parser = _Parser(
        prog="accountant",
        description="Numerical differential-privacy accounting of truncated noise.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_audit(subparsers)
    _load_plugins(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``accountant`` console script; returns the exit status."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return int(args.func(args))
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except ImportError as exc:  # an optional extra is missing
        print(f"accountant: error: {exc}", file=sys.stderr)
        return 2
    except (AccountantError, ValueError) as exc:
        print(f"accountant: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # reliability fix: e.g. --output, --checkpoint or --plot in a
        # directory that cannot exist (a file in the way) used to end in a traceback
        print(f"accountant: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accountant: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
