"""``accountant learn``: learn truncated noise, certify it, compare it with the best
truncated Gaussian (registered in the ``accountant.commands`` entry-point group).

With no arguments it reproduces the paper's staircase experiment in well under a
minute: one release, eps = 0.3, noise on [-5, 5] with step 0.05, sensitivity 1, L1
utility, training bound held at delta = 0.0503; the single-release optimum of the
linear program is printed as the yardstick.
"""

from __future__ import annotations

import argparse
import json
import time

from accountant.cli import check_output_path
from accountant.optimal import optimal_noise
from optimizers.learner import learn
from optimizers.problem import MODELS, UTILITIES, WARM_STARTS, LearningProblem, Schedule
from optimizers.results import LearnedNoise

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``learn`` subcommand to the ``accountant`` parser."""
    parser = subparsers.add_parser(
        "learn",
        help="learn truncated noise by gradient descent (needs the [torch] extra)",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    problem = parser.add_argument_group("problem")
    problem.add_argument("--epsilon", type=float, default=0.3)
    problem.add_argument("-n", "--times", type=int, default=1, help="number of releases")
    problem.add_argument("--bound", type=float, default=5.0, help="noise range [-bound, bound]")
    problem.add_argument("--step", type=float, default=0.05, help="grid step")
    problem.add_argument("--sensitivity", type=float, default=1.0, help="or clipping norm")
    problem.add_argument("--sampling-rate", type=float, default=None, help="DP-SGD rate q")
    problem.add_argument("--utility", choices=UTILITIES, default="L1")
    problem.add_argument("--loss", choices=("ADP", "PDP", "MA"), default="ADP")
    problem.add_argument("--conversion", choices=("tight", "paper"), default="tight")
    problem.add_argument(
        "--target-delta",
        type=float,
        default=0.0503,
        help="hold the training bound here; 0 for the paper's bound + w_t * utility",
    )
    schedule = parser.add_argument_group("schedule")
    defaults = Schedule()
    schedule.add_argument("--epochs", type=int, default=3000)
    schedule.add_argument("--learning-rate", type=float, default=0.3)
    schedule.add_argument("--learning-rate-decay", type=float, default=0.999)
    schedule.add_argument("--utility-weight", type=float, default=defaults.utility_weight)
    schedule.add_argument("--weight-half-life", type=float, default=defaults.weight_half_life)
    schedule.add_argument("--weight-min", type=float, default=defaults.weight_min)
    schedule.add_argument("--penalty", type=float, default=defaults.penalty)
    schedule.add_argument("--model", choices=MODELS, default=defaults.model)
    schedule.add_argument("--sigmoids", type=int, default=defaults.sigmoids)
    schedule.add_argument("--warm-start", choices=WARM_STARTS, default=defaults.warm_start)
    schedule.add_argument("--seed", type=int, default=0)
    schedule.add_argument("--checkpoint-every", type=int, default=defaults.checkpoint_every)
    output = parser.add_argument_group("output")
    output.add_argument("--checkpoint", default=None, help="checkpoint file")
    output.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    output.add_argument("--output", default=None, help="directory for noise.npz, result.json")
    output.add_argument("--plot", default=None, help="PNG of the learned noise vs baselines")
    output.add_argument("--no-compare", action="store_true", help="skip the Gaussian baseline")
    output.add_argument("--no-progress", action="store_true", help="no progress bar")
    output.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def _problem(args: argparse.Namespace) -> LearningProblem:
    return LearningProblem(
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
    )


def _schedule(args: argparse.Namespace) -> Schedule:
    return Schedule(
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        learning_rate_decay=args.learning_rate_decay,
        utility_weight=args.utility_weight,
        weight_half_life=args.weight_half_life,
        weight_min=args.weight_min,
        penalty=args.penalty,
        model=args.model,
        sigmoids=args.sigmoids,
        warm_start=args.warm_start,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
    )


def _single_release_optimum(result: LearnedNoise):
    """The LP optimum at the learned noise's certified delta (n = 1, additive only)."""
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


def _report(result: LearnedNoise, optimum, seconds: float) -> dict:
    summary = result.summary()
    if optimum is not None:
        summary["lp_optimum_utility"] = optimum.utility
        summary["utility_over_lp_optimum"] = result.utility / optimum.utility
    summary["total_seconds"] = seconds
    return summary


def _print_table(result: LearnedNoise, summary: dict) -> None:
    problem = result.problem
    kind = problem.utility
    pair = "DP-SGD" if problem.q is not None else "additive"
    print(
        f"learned noise on [-{problem.bound:g}, {problem.bound:g}] (step {problem.step:g}), "
        f"{pair}, eps = {problem.epsilon:g}, n = {problem.times}, training bound {problem.loss}"
    )
    if result.stopped_by:
        print(f"stopped by {result.stopped_by} after {result.epochs_run} epochs; best kept")
    rows = [("learned noise", result.delta, result.utility)]
    if result.baseline is not None:
        base = result.baseline
        label = f"best truncated Gaussian (sigma {base.sigma:.4g})"
        rows.append((label, base.certificate.delta_upper, base.utility))
    width = max(len(r[0]) for r in rows) + 2
    print(f"{'':{width}}{'certified delta':>18}{'U_' + kind:>12}")
    for label, delta, utility in rows:
        print(f"{label:{width}}{delta:>18.6e}{utility:>12.6f}")
    if "lp_optimum_utility" in summary:
        print(
            f"{'LP optimum, same delta':{width}}{'':>18}{summary['lp_optimum_utility']:>12.6f}"
            f"   (learned / optimum = {summary['utility_over_lp_optimum']:.5f})"
        )
    if result.baseline is None:
        print(f"baseline: {result.baseline_note}")
    print(
        f"{result.epochs_run} epochs in {result.seconds:.1f} s of training, "
        f"{summary['total_seconds']:.1f} s in all (best epoch {result.best_epoch})"
    )


def _plot(result: LearnedNoise, optimum, path: str) -> None:
    from accountant.plotting import plot_noises

    noises = {f"learned (delta {result.delta:.3g})": result.noise}
    if result.baseline is not None:
        label = f"truncated Gaussian, sigma {result.baseline.sigma:.3g}"
        noises[label] = result.baseline.noise
    if optimum is not None:
        noises["LP optimum (n = 1)"] = optimum.noise
    problem = result.problem
    title = f"learned noise, eps {problem.epsilon:g}, n {problem.times}, U_{problem.utility}"
    plot_noises(noises, path, title=title)


def run(args: argparse.Namespace) -> int:
    """Run ``accountant learn``; returns the exit status."""
    started = time.perf_counter()
    # reliability fix: refuse unwritable output paths before training, not after it
    for flag, path, directory in (
        ("--checkpoint", args.checkpoint, False),
        ("--output", args.output, True),
        ("--plot", args.plot, False),
    ):
        if path is not None and not (flag == "--checkpoint" and args.resume):
            check_output_path(flag, path, directory=directory)
    result = learn(
        _problem(args),
        _schedule(args),
        checkpoint=args.checkpoint,
        resume=args.resume,
        progress=not args.no_progress,
        compare=not args.no_compare,
    )
    optimum = _single_release_optimum(result)
    summary = _report(result, optimum, time.perf_counter() - started)
    if args.output is not None:
        result.save(args.output)
    if args.plot is not None:
        _plot(result, optimum, args.plot)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_table(result, summary)
        if args.output is not None:
            print(f"saved to {args.output}")
        if args.plot is not None:
            print(f"plot written to {args.plot}")
    return 0 if result.stopped_by is None else 130
