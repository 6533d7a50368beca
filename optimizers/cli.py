"""``accountant learn``: learn truncated noise, certify it, compare it with the best
truncated Gaussian (registered in the ``accountant.commands`` entry-point group).

With no arguments it reproduces the paper's staircase experiment: one release, eps =
0.3, noise on [-5, 5] with step 0.05, sensitivity 1, L1 utility, target delta 0.0503;
the single-release optimum of the linear program is printed as the yardstick. Any other
problem needs its own ``--target-delta`` (0 for the paper's objective).

The schedule's defaults are :class:`optimizers.problem.Schedule`'s, read from it here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import attrs

from accountant.errors import CertificationWarning, InvalidInputError
from accountant.learning.optimal import optimal_noise
from accountant.report.terminal import check_output_path, note_line, progress_enabled
from optimizers.cli_output import print_result
from optimizers.learner import learn
from optimizers.problem import MODELS, UTILITIES, WARM_STARTS, LearningProblem, Schedule
from optimizers.results import LearnedNoise, LearningWarning

__all__ = ["register"]

DESCRIPTION = (
    "Learn symmetric, monotone truncated noise by gradient descent, certify its delta "
    "with PrivacyBuckets and compare it with the best truncated Gaussian of the same "
    "range and grid. With no arguments: the paper's staircase experiment (n = 1, "
    "eps = 0.3, range [-5, 5], step 0.05), with the linear-programming optimum as the "
    "yardstick."
)
EPILOG = (
    "Exit status: 0 when the returned noise meets the target delta (or there is no "
    "target); 1 when it misses it (the result is still printed and saved, and a note "
    "says so); 2 for bad arguments; 130 when stopped by Ctrl-C or SIGTERM (the best "
    "noise so far is certified, printed and saved). When the learned noise does not beat "
    "the best truncated Gaussian, the Gaussian is returned and a note says so."
)
TARGET_HELP = (
    "certified delta to learn for: the training bound is held just below it, and the "
    "result says whether its certified delta met it; 0: no target, the paper's objective "
    "bound + w_t * utility (default: 0.0503, the paper's staircase figure, for the default "
    "problem only: n = 1, eps 0.3, range [-5, 5], step 0.05, sensitivity 1, additive; "
    "any other problem needs a target)"
)
#: The default target: the paper's staircase experiment (delta 0.0503 at eps 0.3, n = 1).
PAPER_TARGET = 0.0503
#: The problem :data:`PAPER_TARGET` belongs to: argument name -> (flag, default value).
DEFAULT_PROBLEM = {
    "epsilon": ("--epsilon", 0.3),
    "times": ("-n", 1),
    "bound": ("--bound", 5.0),
    "step": ("--step", 0.05),
    "sensitivity": ("--sensitivity", 1.0),
    "sampling_rate": ("--sampling-rate", None),
}


class _HelpFormatter(argparse.HelpFormatter):
    """Shows ``(default: X)`` once, for every option that takes a value and has one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.nargs == 0:
            return text
        if action.default is None or action.default is argparse.SUPPRESS:
            return text
        return f"{text} (default: %(default)s)"


def _default(name: str):
    return DEFAULT_PROBLEM[name][1]


def _add_problem(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("problem")
    group.add_argument(
        "--epsilon", type=float, default=_default("epsilon"), help="eps after all releases"
    )
    group.add_argument(
        "-n", "--times", type=int, default=_default("times"), help="number of releases"
    )
    group.add_argument(
        "--bound", type=float, default=_default("bound"), help="noise range [-bound, bound]"
    )
    group.add_argument("--step", type=float, default=_default("step"), help="grid step")
    group.add_argument(
        "--sensitivity",
        type=float,
        default=_default("sensitivity"),
        help="sensitivity, or clipping norm (DP-SGD)",
    )
    group.add_argument(
        "--sampling-rate", type=float, default=None, help="DP-SGD sampling rate q (default: off)"
    )
    group.add_argument("--utility", choices=UTILITIES, default="L1", help="utility loss")
    group.add_argument(
        "--loss",
        choices=("ADP", "PDP", "MA"),
        default="ADP",
        help="training bound: smooth PrivacyBuckets ADP or PDP delta, or Extended MA",
    )
    group.add_argument(
        "--conversion",
        choices=("tight", "paper"),
        default="tight",
        help="moments-to-delta conversion of --loss MA",
    )
    group.add_argument(
        "--bucket-width",
        type=float,
        default=None,
        help="loss width of the smooth bucket bounds of --loss ADP/PDP; finer follows many "
        "releases more closely (default: about 0.005)",
    )
    group.add_argument("--target-delta", type=float, default=None, help=TARGET_HELP)


def _add_schedule(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("schedule")
    defaults = Schedule()

    def add(flag: str, kind, help: str, **options) -> None:
        name = flag.lstrip("-").replace("-", "_")
        group.add_argument(flag, type=kind, default=getattr(defaults, name), help=help, **options)

    add("--epochs", int, "Adam steps")
    add("--learning-rate", float, "Adam learning rate at the first epoch")
    add("--learning-rate-decay", float, "learning-rate factor per epoch")
    add("--utility-weight", float, "w_0 of the paper's objective (no target)")
    add("--weight-half-life", float, "epochs in which the utility weight halves")
    add("--weight-min", float, "floor of the utility weight")
    add("--penalty", float, "weight of the squared log-excess over the target")
    add("--target-margin", float, "train the bound to target * (1 - margin)")
    add("--model", str, "noise model", choices=MODELS)
    add("--sigmoids", int, "sigmoids of --model sigmoid")
    add(
        "--warm-start",
        str,
        "gaussian: best truncated Gaussian; model: its own",
        choices=WARM_STARTS,
    )
    add("--seed", int, "random seed of the model's initialisation")
    add("--checkpoint-every", int, "epochs between checkpoints")
    add(
        "--refine-every",
        int,
        "every N epochs, halve the bucket width of --loss ADP/PDP while the training bound "
        "of the best noise is off its certified delta by more than 2%% (default: never)",
    )


def register(subparsers) -> None:
    """Add the ``learn`` subcommand to the ``accountant`` parser."""
    parser = subparsers.add_parser(
        "learn",
        help="learn truncated noise by gradient descent (needs the [torch] extra)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=_HelpFormatter,
    )
    _add_problem(parser)
    _add_schedule(parser)
    output = parser.add_argument_group("output")
    output.add_argument("--checkpoint", default=None, help="checkpoint file (default: none)")
    output.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    output.add_argument(
        "--output", default=None, help="directory for noise.npz and result.json (default: none)"
    )
    output.add_argument(
        "--plot", default=None, help="PNG of the learned noise and baselines (default: none)"
    )
    output.add_argument(
        "--no-compare", action="store_true", help="skip the truncated-Gaussian baseline"
    )
    output.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it is drawn on a terminal only)",
    )
    output.add_argument("--json", action="store_true", help="print the summary as JSON")
    output.add_argument(
        "--device",
        default="cpu",
        help="torch device of the model and the training tensors: cpu, cuda or cuda:N; the "
        "training bound and the certificate are computed on the CPU",
    )
    parser.set_defaults(func=run)


def _problem(args: argparse.Namespace) -> LearningProblem:
    """The problem of the arguments; without ``--target-delta`` the default target."""
    problem = LearningProblem(
        bound=args.bound,
        step=args.step,
        epsilon=args.epsilon,
        times=args.times,
        sensitivity=args.sensitivity,
        q=args.sampling_rate,
        utility=args.utility,
        loss=args.loss,
        conversion=args.conversion,
        target_delta=args.target_delta if args.target_delta else None,
        bucket_width=args.bucket_width,
    )
    if args.target_delta is None:
        return attrs.evolve(problem, target_delta=_default_target(args))
    return problem


def _default_target(args: argparse.Namespace) -> float:
    """:data:`PAPER_TARGET` for the default problem; any other problem needs its own."""
    changed = [
        f"{flag} {getattr(args, name)!r}"
        for name, (flag, value) in DEFAULT_PROBLEM.items()
        if getattr(args, name) != value
    ]
    if changed:
        raise InvalidInputError(
            f"--target-delta is needed for this problem ({', '.join(changed)}): its default "
            f"{PAPER_TARGET:g} is the paper's staircase figure for the default problem only "
            "(n = 1, eps 0.3, range [-5, 5], step 0.05, sensitivity 1, additive); give a "
            "target delta, or 0 for the paper's objective"
        )
    return PAPER_TARGET


def _schedule(args: argparse.Namespace) -> Schedule:
    return Schedule(**{f.name: getattr(args, f.name) for f in attrs.fields(Schedule)})


def _single_release_optimum(result: LearnedNoise):
    """The LP optimum at the returned noise's certified delta (n = 1, additive only)."""
    problem = result.problem
    if problem.times != 1 or problem.q is not None or not 0.0 < result.delta < 1.0:
        return None
    return optimal_noise(
        bound=problem.bound,
        step=problem.step,
        epsilon=problem.epsilon,
        delta=result.delta,
        sensitivity=problem.sensitivity,
        utility=problem.utility,
        symmetric=True,
        monotone=True,
    )


def _report(result: LearnedNoise, optimum, seconds: float, notes: list[str]) -> dict:
    summary = result.summary()
    if optimum is not None:
        summary["lp_optimum_utility"] = optimum.utility
        summary["utility_over_lp_optimum"] = result.utility / optimum.utility
    summary["total_seconds"] = seconds
    summary["notes"] = notes
    return summary


def _plot(result: LearnedNoise, optimum, path: str) -> None:
    from accountant.report.plotting import plot_noises

    noises = {f"learned (delta {result.learned.delta_upper:.3g})": result.learned.noise}
    if result.baseline is not None:
        label = f"truncated Gaussian, sigma {result.baseline.sigma:.3g}"
        noises[label] = result.baseline.noise
    if optimum is not None:
        noises["LP optimum (n = 1)"] = optimum.noise
    problem = result.problem
    title = f"learned noise, eps {problem.epsilon:g}, n {problem.times}, U_{problem.utility}"
    plot_noises(noises, path, title=title)


def _check_paths(args: argparse.Namespace) -> None:
    """Refuse unwritable output paths before any work (the checkpoint is also written
    when resuming)."""
    for flag, path, directory in (
        ("--checkpoint", args.checkpoint, False),
        ("--output", args.output, True),
        ("--plot", args.plot, False),
    ):
        if path is not None:
            check_output_path(flag, path, directory=directory)


def _learn(args: argparse.Namespace, problem: LearningProblem, schedule: Schedule):
    """Learn, certify, compare, save and plot; every warning comes back as a note."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CertificationWarning)
        warnings.simplefilter("always", LearningWarning)
        result = learn(
            problem,
            schedule,
            checkpoint=args.checkpoint,
            resume=args.resume,
            progress=not args.no_progress and progress_enabled(sys.stderr),
            compare=not args.no_compare,
            device=args.device,
        )
        optimum = _single_release_optimum(result)
        if args.output is not None:
            result.save(args.output)
        if args.plot is not None:
            _plot(result, optimum, args.plot)
    notes = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
    return result, optimum, notes


def run(args: argparse.Namespace) -> int:
    """Run ``accountant learn``; returns the exit status (see :data:`EPILOG`)."""
    started = time.perf_counter()
    _check_paths(args)
    problem, schedule = _problem(args), _schedule(args)
    result, optimum, notes = _learn(args, problem, schedule)
    summary = _report(result, optimum, time.perf_counter() - started, notes)
    if args.json:
        print(json.dumps(summary, indent=2))
        for note in notes:
            print(note_line(note), file=sys.stderr)
    else:
        print_result(result, summary)
        for note in notes:
            print(note_line(note))
        if args.output is not None:
            print(f"saved to {args.output}")
        if args.plot is not None:
            print(f"plot written to {args.plot}")
    if result.stopped_by is not None:
        return 130
    return 1 if result.met_target is False else 0
