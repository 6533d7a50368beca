"""``accountant audit``: bound an existing additive-noise mechanism from the command line.

Nothing is silently ignored: an option that the chosen ``--family`` would not use is an
error (exit 2, one line), and every value and output path is checked before any work.
Options default to ``None`` so that "given" can be told from "defaulted"; the documented
defaults (:data:`DEFAULTS`) are applied here.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import time
import warnings
from collections.abc import Iterator

import attrs

from accountant.errors import InvalidInputError
from accountant.noise.quantised import MAX_BITS, MIN_BITS
from accountant.report.cli_noise import (
    FAMILY_OPTIONS,
    NOISE_DEFAULTS,
    NOISE_OPTIONS,
    PMF_FILE_FORMATS,
    add_noise_options,
    build_noise,
    build_quantised,
    check_bits,
    noise_settings,
)
from accountant.report.cli_saved import (
    add_saved_options,
    check_saved_options,
    load_audited,
    save_audited,
)
from accountant.report.terminal import check_output_path, note_line, progress_enabled
from accountant.validation import (
    check_epsilons,
    check_finite_real,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)

__all__ = ["DEFAULTS", "FAMILY_OPTIONS", "add_audit", "run_audit"]

#: Documented defaults, applied when an option that the family uses is not given.
DEFAULTS = {
    **NOISE_DEFAULTS,
    "epsilon": 0.3,
    "sensitivity": 1.0,
    "compositions": 128,
}

#: Every option that says what is composed (``dest`` -> flag): none is taken with
#: ``--accountant``, whose file already says it.
_COMPOSING = {
    dest: "-n/--compositions" if dest == "compositions" else "--" + dest.replace("_", "-")
    for dest in (
        "family",
        *NOISE_OPTIONS,
        "bits",
        "sensitivity",
        "sampling_rate",
        "compositions",
    )
}

_DESCRIPTION = (
    """\
Bound an existing additive-noise mechanism: the exact single-release values, the
Extended Moments Accountant and certified PrivacyBuckets bounds after n releases, in
both directions. With no arguments: the paper's truncated Gaussian (sigma 100, bound
500, step 0.5), sensitivity 1, n = 128, eps = 0.3.

An option that the chosen --family does not use is an error, never ignored.
--bits B audits the pmf quantised to B bits: exactly the law accountant sample --bits B
draws.

"""
    + PMF_FILE_FORMATS
)


def add_audit(subparsers) -> None:
    """Add the ``audit`` subcommand to the ``accountant`` parser."""
    audit = subparsers.add_parser(
        "audit",
        help="bound an existing additive-noise mechanism",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_noise_options(audit).add_argument(
        "--bits",
        type=int,
        metavar="B",
        help=f"audit the pmf quantised to B bits, {MIN_BITS} to {MAX_BITS}: integer weights "
        "over 2^B, the law accountant sample --bits B draws (default: the pmf as it is)",
    )
    mech = audit.add_argument_group("mechanism")
    mech.add_argument(
        "--sensitivity",
        type=float,
        help="sensitivity, or the clipping norm with --sampling-rate (default: 1)",
    )
    mech.add_argument(
        "--sampling-rate",
        type=float,
        metavar="Q",
        help="audit the DP-SGD mixture pair with Poisson sampling rate Q (default: off)",
    )
    mech.add_argument("-n", "--compositions", type=int, help="number of releases (default: 128)")
    query = audit.add_argument_group("query (one of)").add_mutually_exclusive_group()
    query.add_argument("--epsilon", type=float, help="report delta at this eps (default: 0.3)")
    query.add_argument("--target-delta", type=float, help="report the eps for this delta instead")
    output = audit.add_argument_group("output")
    output.add_argument(
        "--direction",
        choices=("max", "A/B", "B/A"),
        default="max",
        help="direction reported (default: max, the larger of both)",
    )
    output.add_argument("--json", action="store_true", help="print JSON instead of a table")
    output.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw the delta(eps) curves with their bounds (needs the [plot] extra)",
    )
    add_saved_options(audit)
    audit.set_defaults(func=run_audit)


def _settings(args: argparse.Namespace) -> dict:
    """The noise and mechanism settings, defaults applied; refuses every option that
    would be ignored and every bad value, naming the option."""
    settings = noise_settings(args)
    settings["bits"] = None if args.bits is None else check_bits(args.bits)
    sensitivity = DEFAULTS["sensitivity"] if args.sensitivity is None else args.sensitivity
    settings["sensitivity"] = check_positive_real("--sensitivity", sensitivity)
    if args.sampling_rate is not None:
        check_probability("--sampling-rate", args.sampling_rate)
    settings["sampling_rate"] = args.sampling_rate
    _compositions(args)
    return settings


def _compositions(args: argparse.Namespace) -> int:
    """``-n/--compositions``, the default applied, checked."""
    n = DEFAULTS["compositions"] if args.compositions is None else args.compositions
    return check_positive_int("-n/--compositions", n)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, a ``--plot`` that cannot be written or drawn."""
    if args.plot is None:
        return
    if not args.plot.lower().endswith(".png"):
        raise InvalidInputError(f"--plot must name a .png file, got {args.plot!r}")
    check_output_path("--plot", args.plot)
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError(
            "--plot needs matplotlib; install the [plot] extra: "
            "pip install 'truncated-noise-accountant[plot]'"
        )


class _StageBar:
    """A one-line tqdm bar naming the running stage (only on an interactive terminal);
    drawn from the first stage on, when the number of stages is known."""

    def __init__(self, extra: int) -> None:
        self.extra = extra
        self.total = 0
        self.bar = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total + self.extra,
                file=sys.stderr,
                leave=False,
                dynamic_ncols=True,
                bar_format="audit {n_fmt}/{total_fmt} [{elapsed}] {desc}",
                delay=1e-9,  # no empty bar before the first stage is named
            )
        self.total = total
        self.bar.n = done
        self.bar.set_description_str(stage)  # refreshes

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def _progress(extra: int) -> Iterator[_StageBar | None]:
    if not progress_enabled(sys.stderr):
        yield None
        return
    bar = _StageBar(extra)
    try:
        yield bar
    finally:
        bar.close()


def run_audit(args: argparse.Namespace) -> int:
    """Run ``accountant audit``; returns the exit status."""
    from accountant.pairs.worst_case import WorstCasePair, additive_shift_pairs
    from accountant.report.audit import audit_additive, audit_pairs, audited_accountant
    from accountant.report.audit_saved import audit_accountant

    started = time.perf_counter()
    check_saved_options(args, _COMPOSING)
    settings = None if args.accountant is not None or args.run is not None else _settings(args)
    if args.epsilon is not None:
        check_epsilons("--epsilon", check_finite_real("--epsilon", args.epsilon))
    if args.target_delta is not None:
        check_target_delta("--target-delta", args.target_delta)
    _check_outputs(args)
    epsilon = args.epsilon
    if epsilon is None and args.target_delta is None:
        epsilon = DEFAULTS["epsilon"]
    query = {"epsilon": epsilon, "target_delta": args.target_delta, "direction": args.direction}
    if settings is None:
        accountant, path, origin = load_audited(args)
        with warnings.catch_warnings(record=True) as caught, _progress(0) as progress:
            warnings.simplefilter("always", UserWarning)
            report = audit_accountant(
                accountant, path=path, progress=progress, origin=origin, **query
            )
        return _finish(args, report, caught, report.mechanism, accountant, started)
    q, sensitivity = settings["sampling_rate"], settings["sensitivity"]
    times = _compositions(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # CertificationWarning and others
        if settings["bits"] is None:
            chosen, description = build_noise(settings)
        else:
            quantised, description = build_quantised(settings, settings["bits"])
            chosen = quantised.noise
        with _progress(1 if args.plot else 0) as progress:
            if q is not None:
                pairs = WorstCasePair.subsampled(chosen, q, sensitivity)
                report = audit_pairs(
                    pairs,
                    times,
                    shift_note="DP-SGD mixture pair (both directions)",
                    progress=progress,
                    **query,
                )
                description = f"DP-SGD with {description}, q {q:g}, clip {sensitivity:g}"
            else:
                pairs = additive_shift_pairs(chosen, sensitivity)
                report = audit_additive(chosen, sensitivity, times, progress=progress, **query)
                description = f"{description}, sensitivity {sensitivity:g}"
            if args.plot is not None:
                if progress is not None:
                    progress("plot: delta(eps) curves", progress.total, progress.total)
                _plot(args.plot, pairs, report, description)
    mechanism = attrs.evolve(report.mechanism, description=description, settings=settings)
    audited = audited_accountant(pairs, times) if args.save is not None else None
    return _finish(args, report, caught, mechanism, audited, started)


def _finish(args, report, caught, mechanism, audited, started: float) -> int:
    """Save the ``audited`` accountant if ``--save`` asks, add the warnings ``caught`` to
    the notes, then print the report (JSON or the table)."""
    notes = list(report.notes)
    notes += [n for n in dict.fromkeys(str(w.message) for w in caught) if n not in notes]
    if args.save is not None:
        notes.append(save_audited(args.save, audited))
    report = attrs.evolve(
        report, mechanism=mechanism, notes=tuple(notes), seconds=time.perf_counter() - started
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        for note in report.notes:
            print(note_line(note), file=sys.stderr)
        return 0
    print(report.format_table())
    if args.plot is not None:
        print(f"plot written to {args.plot}")
    print(f"\n(computed in {report.seconds:.2f} s)")
    return 0


def _plot(path: str, pairs, report, description: str) -> None:
    """The delta(eps) curves in the query's direction, with the requested eps marked (for
    an eps query: the target delta and the certified eps found for it)."""
    from accountant.report.plotting import plot_delta_curves

    query = report.query
    marks = {"mark_epsilon": query.epsilon}
    if query.epsilon is None:
        results = report.results
        found = (
            results.privacy_buckets.adp.upper
            if results.privacy_buckets is not None
            else results.extended_ma_tight.value
        )
        marks = {"mark_epsilon": found.value(query.direction), "mark_delta": query.target_delta}
    plot_delta_curves(
        pairs,
        query.compositions,
        path,
        title=description,
        direction=query.direction,
        **marks,
    )
