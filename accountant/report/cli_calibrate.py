"""``accountant calibrate``: the DP-SGD noise multiplier for a target ``(eps, delta)``.

Every option is used (none is ignored), and every value is checked, naming the option,
before any work. The library call is
:func:`accountant.learning.calibration.calibrate_noise_multiplier`; ``--json`` prints
:meth:`~accountant.learning.calibration_results.NoiseCalibration.to_dict`, whose layout the JSON
Schema ``accountant/schemas/calibrate.schema.json`` fixes (with an epoch ``--sampler``,
``accountant/schemas/calibrate-sampler.schema.json``).

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

__all__ = [
    "add_calibrate",
    "format_calibration",
    "format_sampler_calibration",
    "in_options",
    "run_calibrate",
]

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

With --sampler shuffle, balls-and-bins or fixed-order (epochs that cover every
example once: what Opacus trains with poisson_sampling=False), the Gaussian noise
multiplier whose certified upper eps for --epochs epochs of --batch-size out of
--dataset-size examples meets the target (no amplification by the sampler is
claimed; with --cut and --dimension, noise cut per coordinate), with the explicit
pair's lower eps and the Poisson figures beside it:

  accountant calibrate --epsilon 3 --delta 1e-5 --sampler shuffle \
      --batch-size 256 --dataset-size 60000 --epochs 10
"""

#: --sampler's choices: Poisson sampling (the default), or epochs covering every example once.
SAMPLERS = ("poisson", "shuffle", "balls-and-bins", "fixed-order")
#: Options of Poisson sampling only, and of the epoch samplers only (each refused with the
#: other); ``--cut``, ``--dimension`` and ``--truncation`` belong to both.
POISSON_ONLY = ("sampling_rate", "steps", "max_evaluations")
EPOCHS_ONLY = ("batch_size", "dataset_size", "epochs", "neighbours")

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
    "batch_size": "--batch-size",
    "dataset_size": "--dataset-size",
    "epochs": "--epochs",
    "neighbours": "--neighbours",
    "sampler": "--sampler",
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
        "--sampler",
        choices=SAMPLERS,
        default="poisson",
        help="how batches are drawn: Poisson sampling, or epochs covering every example once "
        "(default: poisson)",
    )
    mechanism.add_argument(
        "--sampling-rate", type=float, metavar="Q", help="Poisson rate q in (0, 1] (poisson)"
    )
    mechanism.add_argument(
        "--steps", type=int, help="number of releases (training steps) (poisson)"
    )
    mechanism.add_argument(
        "--cut",
        type=float,
        help="noise cut at +-cut*sigma (inf: no cut) (required with poisson; with an epoch "
        "sampler, default: no cut)",
    )
    mechanism.add_argument("--batch-size", type=int, help="examples per batch (epoch samplers)")
    mechanism.add_argument(
        "--dataset-size", type=int, help="examples in the dataset (epoch samplers)"
    )
    mechanism.add_argument("--epochs", type=int, help="passes over the dataset (epoch samplers)")
    mechanism.add_argument(
        "--neighbours",
        choices=("add-remove", "replace-one"),
        help="neighbouring datasets (epoch samplers; default: add-remove)",
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
        metavar="N",
        help="PrivacyBuckets queries allowed, each a full composition (at least 2; default: 20) "
        "(poisson)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run_calibrate)


def _check_sampler_options(args: argparse.Namespace) -> None:
    """Every option given belongs to ``--sampler``'s calibration (none would be ignored),
    and each one it needs is given."""
    poisson = args.sampler == "poisson"
    foreign = EPOCHS_ONLY if poisson else POISSON_ONLY
    for name in foreign:
        if getattr(args, name) is not None:
            raise InvalidInputError(
                f"{OPTIONS[name]} is not used with --sampler {args.sampler} (it belongs to "
                f"{'the epoch samplers' if poisson else '--sampler poisson'})"
            )
    needed = ("sampling_rate", "steps", "cut") if poisson else EPOCHS_ONLY[:3]
    for name in needed:
        if getattr(args, name) is None:
            raise InvalidInputError(f"{OPTIONS[name]} is required with --sampler {args.sampler}")


def _sampler_arguments(args: argparse.Namespace) -> dict:
    """:func:`~accountant.learning.shuffled_calibration.calibrate_shuffled_noise_multiplier`'s
    keyword arguments, each value checked under its option's name (no ``--cut``: Gaussian
    noise)."""
    arguments = {
        **_noise_arguments(args, math.inf if args.cut is None else args.cut),
        "epsilon": check_positive_real("--epsilon", args.epsilon),
        "delta": check_target_delta("--delta", args.delta),
        "batch_size": check_positive_int("--batch-size", args.batch_size),
        "dataset_size": check_positive_int("--dataset-size", args.dataset_size),
        "epochs": check_positive_int("--epochs", args.epochs),
        "neighbours": args.neighbours or "add-remove",
        "sampler": args.sampler,
        "tolerance": _tolerance(args),
        "max_sigma": check_positive_real("--max-sigma", args.max_sigma),
    }
    if arguments["batch_size"] > arguments["dataset_size"]:
        raise InvalidInputError(
            f"--batch-size must be at most --dataset-size {arguments['dataset_size']}, got "
            f"{arguments['batch_size']}"
        )
    if args.accuracy is not None:
        arguments["accuracy"] = _accuracy(args)
    return arguments


def _tolerance(args: argparse.Namespace) -> float:
    tolerance = check_positive_real("--tolerance", args.tolerance)
    if tolerance >= 1.0:
        raise InvalidInputError(f"--tolerance must lie in (0, 1), got {tolerance!r}")
    return tolerance


def _accuracy(args: argparse.Namespace) -> float | None:
    accuracy = args.accuracy
    if accuracy is not None:
        accuracy = check_positive_real("--accuracy", accuracy)
        if accuracy >= 1.0:
            raise InvalidInputError(f"--accuracy must lie in (0, 1), got {accuracy!r}")
    return accuracy


def _noise_arguments(args: argparse.Namespace, cut: object) -> dict:
    """``cut``, ``dimension`` and ``truncation``, checked under their options' names:
    ``--dimension`` is required with a finite cut."""
    if not (isinstance(cut, float) and cut == math.inf):
        cut = check_positive_real("--cut", cut)
    dimension = args.dimension
    if dimension is None and cut != math.inf:
        raise InvalidInputError(
            f"--dimension must be given with a finite --cut (--cut {cut:g}): the number of "
            "noised coordinates per step (the model's trainable parameters; 1 for one number)"
        )
    return {
        "cut": cut,
        "dimension": None if dimension is None else check_positive_int("--dimension", dimension),
        "truncation": args.truncation or "renormalised",
    }


def _arguments(args: argparse.Namespace) -> dict:
    """The library's keyword arguments, each value checked under its option's name."""
    noise = _noise_arguments(args, args.cut)
    tolerance = _tolerance(args)
    accuracy = _accuracy(args)
    return {
        "epsilon": check_positive_real("--epsilon", args.epsilon),
        "delta": check_target_delta("--delta", args.delta),
        "sampling_rate": check_probability("--sampling-rate", args.sampling_rate),
        "steps": check_positive_int("--steps", args.steps),
        **noise,
        "tolerance": tolerance,
        "accuracy": accuracy,
        "max_sigma": check_positive_real("--max-sigma", args.max_sigma),
        "max_evaluations": check_positive_int(
            "--max-evaluations", 20 if args.max_evaluations is None else args.max_evaluations
        ),
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


def format_sampler_calibration(result) -> str:
    """The human-readable report of a
    :class:`~accountant.learning.shuffled_calibration.SamplerCalibration`."""
    rows = [
        ("sigma (noise multiplier)", f"{result.sigma:.6g}"),
        ("certified eps at sigma", f"{result.upper:.6g} <= {result.epsilon:g}"),
        ("sigma_low (not certified)", f"{result.sigma_low:.6g}"),
        ("lower eps at sigma", f"{result.lower:.6g} (the true eps is at least this)"),
        ("Poisson eps at sigma", f"{result.poisson:.6g} (not a bound for this sampler)"),
        ("Poisson accountant's sigma", f"{result.poisson_sigma:.6g} (not a bound either)"),
        ("batches per epoch", str(result.batches_per_epoch)),
        ("PrivacyBuckets queries", str(result.evaluations)),
    ]
    noise = "the dominating Gaussian of each epoch"
    if result.cut != math.inf:
        rows.insert(-1, ("coordinates per step", str(result.dimension)))
        noise += (
            f", coupled with noise cut at +-{result.cut:g} sigma per coordinate "
            f"({result.truncation})"
        )
    width = max(len(name) for name, _ in rows) + 2
    return "\n".join(
        [
            f"noise multiplier for eps = {result.epsilon:g}, delta = {result.delta:g} after "
            f"{result.epochs} {result.sampler} epochs ({result.steps} steps, "
            f"{result.neighbours}; {noise})",
            "",
            *(f"  {name:<{width}}{value}" for name, value in rows),
        ]
    )


def _run_sampler(args: argparse.Namespace, started: float) -> int:
    """``accountant calibrate --sampler`` with an epoch sampler (``--json``: the layout of
    ``calibrate-sampler.schema.json``, the notes on stderr as well)."""
    arguments = _sampler_arguments(args)
    from accountant.learning.shuffled_calibration import calibrate_shuffled_noise_multiplier

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            result = calibrate_shuffled_noise_multiplier(**arguments)
        except AccountantError as exc:  # the same error, said in the options
            raise type(exc)(in_options(str(exc))) from None
    notes = tuple(dict.fromkeys(in_options(str(w.message)) for w in caught))
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(result.to_dict(seconds, notes), indent=2))
        for note in notes:
            print(note_line(note), file=sys.stderr)
        return 0
    print(format_sampler_calibration(result))
    for note in notes:
        print(note_line(note))
    print(f"\n(computed in {seconds:.2f} s)")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    """Run ``accountant calibrate``; returns the exit status."""
    started = time.perf_counter()
    _check_sampler_options(args)
    if args.sampler != "poisson":
        return _run_sampler(args, started)
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
