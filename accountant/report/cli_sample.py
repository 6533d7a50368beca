"""``accountant sample``: draw noise for a release, exactly from the quantised pmf.

The noise is chosen with the audit's options (:mod:`accountant.report.cli_noise`), then
quantised (:func:`accountant.noise.quantised.quantise`, ``--bits``) and drawn from the
operating system's cryptographic source (``os.urandom``): every value is a grid point of
the audited noise, never outside its support. ``--simulate --seed S`` draws the same law
from a seeded numpy generator instead, for simulations only (never for a release; a note
says so). Values go to stdout, one per line as exact decimal ``repr``, or to
``--output`` (``.npy``, or ``.txt`` one per line); a note on stderr states the source,
the bits, the quantisation's total-variation distance to the pmf, and the
``accountant audit ... --bits B`` command that audits exactly the law drawn
(:func:`~accountant.report.cli_noise.audit_command`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from accountant.errors import InvalidInputError
from accountant.noise.bits import DEFAULT_BITS, MAX_BITS, MIN_BITS
from accountant.report.cli_noise import (
    PMF_FILE_FORMATS,
    add_noise_options,
    audit_command,
    build_quantised,
    check_bits,
    noise_settings,
)
from accountant.report.terminal import check_output_path, note_line
from accountant.validation import check_positive_int, check_positive_real

__all__ = ["add_sample", "run_sample"]

_DESCRIPTION = (
    """\
Draw N noise values for a release from the quantised pmf of the chosen noise (the same
--family options as accountant audit), from the operating system's cryptographic
source: every value is exactly a grid point, never outside the support. --simulate
--seed S draws the same law from a seeded numpy generator, for simulations only. The
note on stderr names the accountant audit command (--bits B) that audits exactly the
law drawn.

"""
    + PMF_FILE_FORMATS
)


def add_sample(subparsers) -> None:
    """Add the ``sample`` subcommand to the ``accountant`` parser."""
    sample = subparsers.add_parser(
        "sample",
        help="draw noise for a release (secure, exactly on the grid)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_noise_options(sample)
    sample.add_argument(
        "--sensitivity",
        type=float,
        help="the staircase's design sensitivity (--family staircase only; default: 1)",
    )
    draws = sample.add_argument_group("draws")
    draws.add_argument("-n", "--count", type=int, required=True, help="number of values")
    draws.add_argument(
        "--bits",
        type=int,
        metavar="B",
        default=DEFAULT_BITS,
        help=f"draw from the pmf quantised to B bits, {MIN_BITS} to {MAX_BITS}: integer "
        f"weights over 2^B (default: {DEFAULT_BITS})",
    )
    draws.add_argument(
        "--simulate",
        action="store_true",
        help="draw from numpy with --seed instead of os.urandom: NOT for releases",
    )
    draws.add_argument("--seed", type=int, help="the numpy seed of --simulate")
    sample.add_argument(
        "--output", metavar="FILE", help="write the values to FILE (.npy or .txt) instead"
    )
    sample.set_defaults(func=run_sample)


def _checked(args: argparse.Namespace) -> dict:
    """Every option checked before any work, naming it; returns the noise settings."""
    settings = noise_settings(args)
    if args.sensitivity is not None and settings["family"] != "staircase":
        raise InvalidInputError(
            f"--sensitivity does not apply to --family {settings['family']}, which would "
            "ignore it (only the staircase is designed for a sensitivity)"
        )
    sensitivity = 1.0 if args.sensitivity is None else args.sensitivity
    settings["sensitivity"] = check_positive_real("--sensitivity", sensitivity)
    check_positive_int("-n/--count", args.count)
    check_bits(args.bits)
    if args.simulate and args.seed is None:
        raise InvalidInputError("--simulate needs --seed (a simulation must be reproducible)")
    if args.seed is not None and not args.simulate:
        raise InvalidInputError(
            "--seed applies only to --simulate; a release draws from os.urandom, which "
            "takes no seed"
        )
    if args.output is not None:
        if Path(args.output).suffix not in (".npy", ".txt"):
            raise InvalidInputError(f"--output must name a .npy or .txt file, got {args.output!r}")
        check_output_path("--output", args.output)
    return settings


def run_sample(args: argparse.Namespace) -> int:
    """Run ``accountant sample``; returns the exit status."""
    import numpy as np  # not at module level: --help reads this module

    settings = _checked(args)
    quantised, description = build_quantised(settings, args.bits)
    if args.simulate:
        values = quantised.simulate(args.count, np.random.default_rng(args.seed))
        source = f"simulated with numpy seed {args.seed}: NOT for a release"
    else:
        values = quantised.draw(args.count)
        source = "drawn from os.urandom"
    if args.output is None:
        sys.stdout.write("".join(f"{float(v)!r}\n" for v in values))
    elif args.output.endswith(".npy"):
        np.save(args.output, values)
    else:
        Path(args.output).write_text("".join(f"{float(v)!r}\n" for v in values))
    sys.stderr.write(
        note_line(
            f"{args.count} values of {description} (total variation to the pmf <= "
            f"{quantised.total_variation:.3g}), {source}"
            + ("" if args.output is None else f"; written to {args.output}")
            + f"; audit exactly this law with: {audit_command(settings, args.bits)}"
            + " (and the --sensitivity, -n and query of your release)"
        )
        + "\n"
    )
    return 0
