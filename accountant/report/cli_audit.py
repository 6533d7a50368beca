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
import math
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import attrs

from accountant.errors import InvalidInputError
from accountant.noise.bits import MAX_BITS, MIN_BITS
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
        "noise_multiplier",
        "steps",
        "cut",
        "dimension",
        "truncation",
        "clip",
    )
}

#: ``--truncation`` (as :data:`accountant.mechanisms.subsampled_gaussian.TRUNCATIONS`;
#: spelt out so that the parser imports no mechanism).
_TRUNCATIONS = ("renormalised", "resampled", "clamped")

#: Options of the grid-free DP-SGD audit (``dest`` -> flag), taken only with
#: ``--noise-multiplier``; ``--sampling-rate`` and ``--steps`` belong to both DP-SGD audits.
_GRID_FREE = {
    "cut": "--cut",
    "dimension": "--dimension",
    "truncation": "--truncation",
    "clip": "--clip",
}

_DESCRIPTION = (
    """\
Bound an existing additive-noise mechanism: the exact single-release values, the
Extended Moments Accountant and certified PrivacyBuckets bounds after n releases, in
both directions. With no arguments: the paper's truncated Gaussian (sigma 100, bound
500, step 0.5), sensitivity 1, n = 128, eps = 0.3.

DP-SGD: --sampling-rate Q audits the one-dimensional mixture pair of the noise grid
(an upper bound for a 1-coordinate model only; for d > 1 coordinates it is a lower
bound). --noise-multiplier S --sampling-rate Q --steps N --cut K --dimension D audits
N steps of Gaussian noise cut at +-K*S*clip on each of D coordinates, without a grid,
certified for D coordinates (accountant.DPSGDAccountant), e.g. MNIST:

  accountant audit --noise-multiplier 1.1 --sampling-rate 0.0042667 --steps 14062 \\
      --cut 10 --dimension 1000000 --target-delta 1e-5

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
    dp_sgd = audit.add_argument_group(
        "DP-SGD without a grid (with --noise-multiplier; no noise option is taken)"
    )
    dp_sgd.add_argument(
        "--noise-multiplier",
        type=float,
        metavar="S",
        help="audit DP-SGD steps of Gaussian noise with this noise multiplier (std S * clip)",
    )
    dp_sgd.add_argument(
        "--steps",
        type=int,
        metavar="N",
        help="number of DP-SGD steps (with --sampling-rate; the same as -n, give one of them)",
    )
    dp_sgd.add_argument(
        "--cut", type=float, metavar="K", help="noise cut at +-K * S * clip (inf: no cut)"
    )
    dp_sgd.add_argument(
        "--dimension",
        type=int,
        metavar="D",
        help="noised coordinates per step, each cut separately (the model's trainable "
        "parameters); required with a finite --cut",
    )
    dp_sgd.add_argument(
        "--truncation",
        choices=_TRUNCATIONS,
        help="renormalised (= resampled: redrawn until inside) or clamped (default: renormalised)",
    )
    dp_sgd.add_argument(
        "--clip", type=float, metavar="C", help="clipping norm, the unit of the noise (default: 1)"
    )
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
    """The noise and mechanism settings of an audit on a noise grid, defaults applied;
    refuses every option that would be ignored and every bad value, naming the option."""
    for dest, flag in _GRID_FREE.items():
        if getattr(args, dest) is not None:
            raise InvalidInputError(
                f"{flag} applies only to the grid-free DP-SGD audit (--noise-multiplier), "
                "not to an audit of a noise grid, which would ignore it"
                + ("; on a grid, --bound is the cut" if dest == "cut" else "")
            )
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
    """The number of releases: ``-n/--compositions`` or, for DP-SGD (``--sampling-rate``
    or ``--noise-multiplier``), its alias ``--steps``; the default applied, checked.
    Both given is refused (even when equal), as is ``--steps`` for additive noise."""
    if args.steps is not None:
        if args.compositions is not None:
            raise InvalidInputError(
                f"give one of -n/--compositions and --steps (the same count), got "
                f"-n {args.compositions} and --steps {args.steps}"
            )
        if args.sampling_rate is None and args.noise_multiplier is None:
            raise InvalidInputError(
                "--steps counts DP-SGD steps (with --sampling-rate or --noise-multiplier); "
                "releases of additive noise are -n/--compositions"
            )
        return check_positive_int("--steps", args.steps)
    n = DEFAULTS["compositions"] if args.compositions is None else args.compositions
    return check_positive_int("-n/--compositions", n)


def _grid_free_settings(args: argparse.Namespace) -> dict:
    """The settings of the grid-free DP-SGD audit (``--noise-multiplier``), each checked
    under its option's name; refuses every noise-grid option (it would be ignored) and a
    missing ``--sampling-rate``, ``--steps``, ``--cut`` or (with a finite cut)
    ``--dimension``."""
    from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
    from accountant.report.run_file import single_segment_run

    for dest in ("family", *NOISE_OPTIONS, "bits", "sensitivity"):
        if getattr(args, dest) is not None:
            hint = {"sensitivity": "; the clipping norm is --clip", "sigma": "; S is its sigma"}
            raise InvalidInputError(
                f"{_COMPOSING[dest]} does not apply to --noise-multiplier (DP-SGD without a "
                f"noise grid), which would ignore it{hint.get(dest, '')}"
            )
    if args.plot is not None:
        raise InvalidInputError(
            "--plot does not apply to --noise-multiplier (it draws the curves of one noise's pairs)"
        )
    for dest, what in (
        ("sampling_rate", "--sampling-rate Q (the Poisson sampling rate of a step)"),
        ("cut", "--cut K (the noise is cut at +-K * S * clip; inf: no cut)"),
    ):
        if getattr(args, dest) is None:
            raise InvalidInputError(f"--noise-multiplier needs {what}")
    if args.steps is None and args.compositions is None:
        raise InvalidInputError("--noise-multiplier needs --steps N (the number of steps)")
    cut = args.cut
    if args.dimension is None and cut != math.inf:
        raise InvalidInputError(
            f"--dimension must be given with a finite --cut (--cut {cut:g}): the number of "
            "noised coordinates per step (the model's trainable parameters; 1 for one number)"
        )
    run = single_segment_run(
        noise_multiplier=args.noise_multiplier,
        sampling_rate=args.sampling_rate,
        steps=_compositions(args),
        cut=cut,
        # uncut, the Gaussian's privacy is that of one coordinate, whatever the dimension
        dimension=1 if args.dimension is None else args.dimension,
        truncation="renormalised" if args.truncation is None else args.truncation,
        clip=1.0 if args.clip is None else args.clip,
    )
    (segment,) = run.segments
    try:  # the mechanism's own checks (e.g. a cut below half the clip norm), before any work
        SubsampledTruncatedGaussian(
            sigma=segment.noise_multiplier,
            sampling_rate=segment.sampling_rate,
            cut=segment.cut,
            clip=run.clip,
            truncation=run.truncation,
        )
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"--cut {segment.cut:g} with --noise-multiplier {segment.noise_multiplier:g}: {exc}"
        ) from None
    return {
        "noise_multiplier": segment.noise_multiplier,
        "sampling_rate": segment.sampling_rate,
        "steps": segment.steps,
        "cut": "inf" if math.isinf(segment.cut) else segment.cut,
        "dimension": run.dimension,
        "truncation": run.truncation,
        "clip": run.clip,
    }


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
        self.bar: Any = None  # a tqdm bar (tqdm ships no type information)

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


#: Seconds of work before the first progress line where no bar is drawn (shorter audits
#: print none).
PROGRESS_DELAY = 10.0
#: Seconds between two progress lines.
PROGRESS_INTERVAL = 10.0


class ProgressLines:
    """Progress where no bar is drawn (stderr a file, a pipe, CI): once the work has run
    :data:`PROGRESS_DELAY` seconds, a line ``<label>: <elapsed> s, <status>`` every
    :data:`PROGRESS_INTERVAL` seconds (both read when it starts). A daemon thread writes
    them, so a stage that runs for minutes is reported too; :meth:`update` sets the status
    and writes at once when a line is due. Use as a context manager; ``clock`` (seconds)
    is ``time.monotonic`` unless a test passes its own."""

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.status = "starting"
        self.interval = PROGRESS_INTERVAL
        self.started = clock()
        self.due = self.started + PROGRESS_DELAY
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressLines:
        self._thread = threading.Thread(target=self._run, name="progress-lines", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def update(self, status: str) -> None:
        """The work is now at ``status``; a line is written if one is due."""
        self.status = status
        self._write_if_due()

    def _write_if_due(self) -> None:
        with self._lock:
            now = self.clock()
            if now < self.due or self._stop.is_set():
                return
            self.due = now + self.interval
            try:
                self.stream.write(f"{self.label}: {now - self.started:.0f} s, {self.status}\n")
                self.stream.flush()
            except (OSError, ValueError):  # a closed or broken stream: stop writing
                self._stop.set()

    def _run(self) -> None:
        tick = min(1.0, max(self.interval, 1e-3))
        while not self._stop.wait(tick):
            self._write_if_due()


class _Progress:
    """The audit's ``progress(stage, done, total)``: the running stage, remembered (a
    refusal during the PrivacyBuckets stages is about the number of releases), drawn as
    a bar on an interactive terminal (:class:`_StageBar`), else written as a line every
    few seconds once the audit has run long (:class:`ProgressLines`)."""

    def __init__(self, extra: int, lines: ProgressLines | None) -> None:
        self.bar = _StageBar(extra) if lines is None else None
        self.lines = lines
        self.extra = extra
        self.stage = ""
        self.total = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.stage, self.total = stage, total
        if self.bar is not None:
            self.bar(stage, done, total)
        if self.lines is not None:
            self.lines.update(f"stage {done + 1}/{total + self.extra}: {stage}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def _progress(extra: int) -> Iterator[_Progress]:
    """The audit's progress (:class:`_Progress`); ``extra`` stages follow the audit's."""
    if progress_enabled(sys.stderr):
        progress = _Progress(extra, None)
        try:
            yield progress
        finally:
            progress.close()
        return
    with ProgressLines("accountant audit", sys.stderr) as lines:
        yield _Progress(extra, lines)


def run_audit(args: argparse.Namespace) -> int:
    """Run ``accountant audit``; returns the exit status."""
    from accountant.report.audit import one_coordinate_note
    from accountant.report.audit_saved import audit_accountant

    started = time.perf_counter()
    check_saved_options(args, _COMPOSING)
    settings = grid_free = None
    if args.accountant is None and args.run is None:
        if args.noise_multiplier is not None:
            grid_free = _grid_free_settings(args)
        else:
            settings = _settings(args)
    if args.epsilon is not None:
        check_epsilons("--epsilon", check_finite_real("--epsilon", args.epsilon))
    if args.target_delta is not None:
        check_target_delta("--target-delta", args.target_delta)
    _check_outputs(args)
    epsilon = args.epsilon
    if epsilon is None and args.target_delta is None:
        epsilon = DEFAULTS["epsilon"]
    query = {"epsilon": epsilon, "target_delta": args.target_delta, "direction": args.direction}
    if settings is not None:
        return _audit_grid(args, settings, query, started)
    if grid_free is not None:
        accountant, path, origin = _grid_free_accountant(grid_free), None, "DP-SGD"
    else:
        accountant, path, origin = load_audited(args)
    if grid_free is not None:
        count = _count_flag(args)
    else:
        count = f"{'--run' if args.run is not None else '--accountant'} {path}"
    with warnings.catch_warnings(record=True) as caught, _progress(0) as progress:
        warnings.simplefilter("always", UserWarning)
        with _count_refusals(progress, count, accountant.releases):
            report = audit_accountant(
                accountant, path=path, progress=progress, origin=origin, **query
            )
    mechanism = attrs.evolve(report.mechanism, upper_bound_dimension=_dimension_of(accountant))
    note = one_coordinate_note()
    if grid_free is not None:
        d = accountant.dimension
        coordinates = f"{d} coordinate{'' if d == 1 else 's'}"
        mechanism = attrs.evolve(
            mechanism,
            shifts=f"DP-SGD without a grid: {coordinates} per step, each cut separately, "
            f"composed in a DPSGDAccountant (certified for {coordinates})",
            settings=grid_free,
        )
        note = one_coordinate_note(_grid_free_options(grid_free))
    if mechanism.upper_bound_dimension == 1:
        report = attrs.evolve(report, notes=(note, *report.notes))
    return _finish(args, report, caught, mechanism, accountant, started)


def _grid_free_options(settings: dict) -> str:
    """The grid-free audit's options with the values of ``settings`` (but ``--dimension``)."""
    cut = settings["cut"]
    options = (
        f"--noise-multiplier {settings['noise_multiplier']:.6g} --sampling-rate "
        f"{settings['sampling_rate']:g} --steps {settings['steps']} --cut "
        + (cut if isinstance(cut, str) else f"{cut:.6g}")
    )
    if settings.get("truncation", "renormalised") != "renormalised":
        options += f" --truncation {settings['truncation']}"
    return options


def _grid_free_accountant(settings: dict):
    """The DPSGDAccountant of ``settings`` (:func:`_grid_free_settings`): the steps of a
    one-segment run, built and composed as ``--run`` builds a run."""
    from accountant.report.run_file import run_accountant, single_segment_run

    run = single_segment_run(**{**settings, "cut": float(settings["cut"])})
    return run_accountant(run)


def _dimension_of(accountant) -> int | None:
    """The ``upper_bound_dimension`` of an accountant's audit: the number of coordinates
    per step its upper bounds are certified for when that number matters, that is when
    the DP-SGD noise is cut (uncut, the Gaussian's bounds hold for any number). A
    DPSGDAccountant's dimension; 1 for a PrivacyBuckets or Extended MA that composed a
    one-dimensional DP-SGD step (a cut
    :class:`~accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian`, or a
    DP-SGD mixture pair of a noise grid); ``None`` otherwise."""
    from accountant.dpsgd import DPSGDAccountant
    from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
    from accountant.pairs.worst_case import WorstCasePair
    from accountant.report.audit import is_dp_sgd_pair

    def cut(mechanism) -> bool:
        if isinstance(mechanism, SubsampledTruncatedGaussian):
            return not math.isinf(mechanism.cut)
        return isinstance(mechanism, WorstCasePair) and is_dp_sgd_pair(mechanism)

    if not any(cut(component.mechanism) for component in accountant.components):
        return None
    return accountant.dimension if isinstance(accountant, DPSGDAccountant) else 1


def _audit_grid(args: argparse.Namespace, settings: dict, query: dict, started: float) -> int:
    """The audit of a noise grid (``settings``: :func:`_settings`): additive, or the
    one-dimensional DP-SGD mixture pair with ``--sampling-rate``."""
    from accountant.pairs.worst_case import WorstCasePair, additive_shift_pairs
    from accountant.report.audit import audit_additive, audit_pairs, audited_accountant

    q, sensitivity = settings["sampling_rate"], settings["sensitivity"]
    times = _compositions(args)
    with (
        warnings.catch_warnings(record=True) as caught,
        _memory_refusals(settings),
        _progress(1 if args.plot else 0) as progress,
        _count_refusals(progress, _count_flag(args), times),
    ):
        warnings.simplefilter("always", UserWarning)  # CertificationWarning and others
        if settings["bits"] is None:
            chosen, description = build_noise(settings)
        else:
            quantised, description = build_quantised(settings, settings["bits"])
            chosen = quantised.noise
        if q is not None:
            pairs: WorstCasePair | tuple[WorstCasePair, ...]
            pairs = WorstCasePair.subsampled(chosen, q, sensitivity)
            report = audit_pairs(
                pairs,
                times,
                shift_note="DP-SGD mixture pair (both directions)",
                progress=progress,
                **query,
            )
            description = f"DP-SGD with {description}, q {q:g}, clip {sensitivity:g}"
            report = _with_grid_free_command(report, settings, times)
        else:
            pairs = additive_shift_pairs(chosen, sensitivity)
            report = audit_additive(chosen, sensitivity, times, progress=progress, **query)
            description = f"{description}, sensitivity {sensitivity:g}"
        if args.plot is not None:
            progress("plot: delta(eps) curves", progress.total, progress.total)
            _plot(args.plot, pairs, report, description)
    mechanism = attrs.evolve(report.mechanism, description=description, settings=settings)
    audited = audited_accountant(pairs, times) if args.save is not None else None
    return _finish(args, report, caught, mechanism, audited, started)


def _count_flag(args: argparse.Namespace) -> str:
    """How the number of releases was given: ``--steps`` or ``-n/--compositions``."""
    return "--steps" if args.steps is not None else "-n/--compositions"


@contextlib.contextmanager
def _count_refusals(progress: _Progress, shown: str, times: int) -> Iterator[None]:
    """A refusal during the PrivacyBuckets stages (the options were checked before, so
    it is the composition of ``times`` releases outgrowing the bucket budget) named as
    the command line gave the count (``shown``)."""
    from accountant.report.audit import too_many_releases

    try:
        yield
    except InvalidInputError as exc:
        if not (progress.stage.startswith("PrivacyBuckets") and exc.__cause__ is not None):
            raise
        cause = exc.__cause__
        raise InvalidInputError(too_many_releases(f"{shown} {times}", times, cause)) from cause


@contextlib.contextmanager
def _memory_refusals(settings: dict) -> Iterator[None]:
    """Memory that runs out during the audit of a grid that passed its size check
    (:func:`accountant.noise.families.check_grid_size` covers building it, not auditing
    it), refused in one line naming the options that size the grid."""
    try:
        yield
    except MemoryError as exc:
        options = (
            "--pmf-file (a shorter pmf)"
            if settings["family"] == "file"
            else f"--step {settings['step']:g} and --bound {settings['bound']:g} (a larger "
            "--step or a smaller --bound)"
        )
        raise InvalidInputError(
            f"the audit ran out of memory ({exc or 'MemoryError'}); the grid is sized by {options}"
        ) from None


def _with_grid_free_command(report, settings: dict, times: int):
    """``report`` whose one-coordinate note names the grid-free audit of the same DP-SGD
    run when the grid is a truncated Gaussian (noise multiplier ``sigma / clip``, cut
    ``bound / sigma``)."""
    from accountant.report.audit import one_coordinate_note

    if settings["family"] != "truncated-gaussian":
        return report
    sigma, clip = settings["sigma"], settings["sensitivity"]
    options = _grid_free_options(
        {
            "noise_multiplier": sigma / clip,
            "sampling_rate": settings["sampling_rate"],
            "steps": times,
            "cut": settings["bound"] / sigma,
        }
    )
    generic = one_coordinate_note()
    notes = tuple(one_coordinate_note(options) if n == generic else n for n in report.notes)
    return attrs.evolve(report, notes=notes)


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
