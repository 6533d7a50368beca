"""``accountant calibrate``: the DP-SGD noise multiplier for a target ``(eps, delta)``.

Every option is used (none is ignored), and every value is checked, naming the option,
before any work. The library call is
:func:`accountant.learning.calibration.calibrate_noise_multiplier`; ``--json`` prints
:meth:`~accountant.learning.calibration_results.NoiseCalibration.to_dict`, whose layout the JSON
Schema ``accountant/schemas/calibrate.schema.json`` fixes.

The library's errors and notes name its keyword arguments (``max_evaluations=20``,
``raise max_sigma``); here they are said in this command's options (``--max-evaluations
20``, ``raise --max-sigma``, :func:`in_options`), so that every remedy they give is one a
user of the command can follow.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import warnings

import attrs

from accountant.errors import AccountantError, InvalidInputError
from accountant.report.terminal import note_line
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)

__all__ = ["add_calibrate", "format_calibration", "in_options", "run_calibrate"]

_DESCRIPTION = """\
Find the smallest noise multiplier sigma of DP-SGD with Gaussian noise cut at
+-cut*sigma (Poisson sampling rate q, add/remove neighbours, both directions) whose
certified PrivacyBuckets upper bound on delta at --epsilon after --steps releases is
at most --delta, and a sigma_low certified to fail (its lower bound exceeds --delta),
at most --tolerance apart (relative). Example, MNIST (a model of 10^6 parameters):

  accountant calibrate --epsilon 3 --delta 1e-5 --sampling-rate 0.0042667 \\
      --steps 14062 --cut 10 --dimension 1000000

The cut must leave room for the noise: on D coordinates some coordinate of the
D x steps draws reaches the cut with a probability tau that no sigma changes, and
e^eps tau alone must stay below --delta (here cut 8 cannot: the error names the
smallest cut that can).
"""

_TRUNCATIONS = ("renormalised", "resampled", "clamped")

#: The library's keyword arguments -> this command's options (the keys of :func:`_arguments`).
OPTIONS = {
    "epsilon": "--epsilon",
    "delta": "--delta",
    "sampling_rate": "--sampling-rate",
    "steps": "--steps",
    "cut": "--cut",
    "dimension": "--dimension",
    "truncation": "--truncation",
    "tolerance": "--tolerance",
    "accuracy": "--accuracy",
    "max_sigma": "--max-sigma",
    "max_evaluations": "--max-evaluations",
}
_NAMED_VALUE = re.compile(rf"\b({'|'.join(OPTIONS)})=")
_BARE_NAME = re.compile(rf"\b({'|'.join(name for name in OPTIONS if '_' in name)})\b")


def add_calibrate(subparsers) -> None:
    """Add the ``calibrate`` subcommand to the ``accountant`` parser."""
    parser = subparsers.add_parser(
        "calibrate",
        help="the DP-SGD noise multiplier for a target (eps, delta), certified",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    target = parser.add_argument_group("target")
    target.add_argument("--epsilon", type=float, required=True, help="target eps (> 0)")
    target.add_argument("--delta", type=float, required=True, help="target delta in (0, 1)")
    mechanism = parser.add_argument_group("mechanism")
    mechanism.add_argument(
        "--sampling-rate", type=float, required=True, metavar="Q", help="Poisson rate q in (0, 1]"
    )
    mechanism.add_argument(
        "--steps", type=int, required=True, help="number of releases (training steps)"
    )
    mechanism.add_argument(
        "--cut", type=float, required=True, help="noise cut at +-cut*sigma (inf: no cut)"
    )
    mechanism.add_argument(
        "--dimension",
        type=int,
        metavar="D",
        help="noised coordinates per step, each cut separately (the model's trainable "
        "parameters; 1 for one number); required with a finite --cut",
    )
    mechanism.add_argument(
        "--truncation",
        choices=_TRUNCATIONS,
        default="renormalised",
        help="renormalised (= resampled: redrawn until inside) or clamped (default: renormalised)",
    )
    search = parser.add_argument_group("search")
    search.add_argument(
        "--tolerance",
        type=float,
        default=1e-3,
        help="relative width sigma/sigma_low - 1 sought (default: 0.001)",
    )
    search.add_argument(
        "--accuracy",
        type=float,
        help="PrivacyBuckets accuracy of the two deciding queries "
        "(default: what --tolerance needs)",
    )
    search.add_argument(
        "--max-sigma", type=float, default=1e4, help="largest sigma tried (default: 10000)"
    )
    search.add_argument(
        "--max-evaluations",
        type=int,
        default=20,
        metavar="N",
        help="PrivacyBuckets queries allowed, each a full composition (at least 2; default: 20)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run_calibrate)


def _arguments(args: argparse.Namespace) -> dict:
    """The library's keyword arguments, each value checked under its option's name."""
    cut = args.cut
    if not (isinstance(cut, float) and cut == math.inf):
        cut = check_positive_real("--cut", cut)
    tolerance = check_positive_real("--tolerance", args.tolerance)
    if tolerance >= 1.0:
        raise InvalidInputError(f"--tolerance must lie in (0, 1), got {tolerance!r}")
    accuracy = args.accuracy
    if accuracy is not None:
        accuracy = check_positive_real("--accuracy", accuracy)
        if accuracy >= 1.0:
            raise InvalidInputError(f"--accuracy must lie in (0, 1), got {accuracy!r}")
    dimension = args.dimension
    if dimension is None and cut != math.inf:
        raise InvalidInputError(
            f"--dimension must be given with a finite --cut (--cut {cut:g}): the number of "
            "noised coordinates per step (the model's trainable parameters; 1 for one number)"
        )
    return {
        "epsilon": check_positive_real("--epsilon", args.epsilon),
        "delta": check_target_delta("--delta", args.delta),
        "sampling_rate": check_probability("--sampling-rate", args.sampling_rate),
        "steps": check_positive_int("--steps", args.steps),
        "cut": cut,
        "dimension": None if dimension is None else check_positive_int("--dimension", dimension),
        "truncation": args.truncation,
        "tolerance": tolerance,
        "accuracy": accuracy,
        "max_sigma": check_positive_real("--max-sigma", args.max_sigma),
        "max_evaluations": check_positive_int("--max-evaluations", args.max_evaluations),
    }


def in_options(message: str) -> str:
    """A library message said in this command's options: ``name=value`` becomes
    ``--option value`` for every keyword of :data:`OPTIONS`, and a bare keyword with an
    underscore (``max_evaluations``, never a word of prose) becomes its option."""
    message = _NAMED_VALUE.sub(lambda m: OPTIONS[m.group(1)] + " ", message)
    return _BARE_NAME.sub(lambda m: OPTIONS[m.group(1)], message)


def format_calibration(result) -> str:
    """The human-readable report of a
    :class:`~accountant.learning.calibration_results.NoiseCalibration`."""
    rows = [
        ("sigma (noise multiplier)", f"{result.sigma:.6g}"),
        (
            "certified delta at sigma",
            f"[{result.delta_lower:.4g}, {result.delta_upper:.4g}] <= {result.delta:g}",
        ),
    ]
    if result.sigma_low is None:
        rows.append(("sigma_low (certified to fail)", "none found"))
    else:
        rows += [
            ("sigma_low (certified to fail)", f"{result.sigma_low:.6g}"),
            (
                "certified lower delta there",
                f"{result.sigma_low_delta_lower:.4g} > {result.delta:g}",
            ),
            (
                "sigma / sigma_low - 1",
                f"{result.relative_bracket:.3g} (tolerance {result.tolerance:g})",
            ),
        ]
    rows.append(("coordinates per step", str(result.dimension)))
    rows.append(("PrivacyBuckets queries", str(result.evaluations)))
    width = max(len(name) for name, _ in rows) + 2
    lines = [
        f"noise multiplier for eps = {result.epsilon:g}, delta = {result.delta:g} after "
        f"{result.steps} steps (ADP, both directions)",
        f"mechanism: {result.mechanism.description}",
        "",
        *(f"  {name:<{width}}{value}" for name, value in rows),
    ]
    if not result.converged:
        lines += ["", "NOT within the tolerance (sigma is still certified): see the note"]
    lines += [note_line(note) for note in result.notes]
    return "\n".join(lines)


def run_calibrate(args: argparse.Namespace) -> int:
    """Run ``accountant calibrate``; returns the exit status."""
    started = time.perf_counter()
    arguments = _arguments(args)
    from accountant.learning.calibration import calibrate_noise_multiplier

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # CertificationWarning and others
        try:
            result = calibrate_noise_multiplier(**arguments)
        except AccountantError as exc:  # the same error, said in the options
            raise type(exc)(in_options(str(exc))) from None
    others = [str(w.message) for w in caught if str(w.message) not in result.notes]
    result = attrs.evolve(result, notes=tuple(in_options(note) for note in result.notes))
    seconds = time.perf_counter() - started
    if args.json:
        payload = result.to_dict(seconds)
        payload["notes"] += list(dict.fromkeys(others))
        print(json.dumps(payload, indent=2))
        for note in payload["notes"]:
            print(note_line(note), file=sys.stderr)
        return 0
    print(format_calibration(result))
    for note in dict.fromkeys(others):
        print(note_line(note))
    print(f"\n(computed in {seconds:.2f} s)")
    return 0
