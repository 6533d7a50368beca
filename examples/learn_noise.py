"""Learn truncated noise with the PyTorch plugin and compare it with the best truncated
Gaussian of the same range, grid and certified delta.

Problem: n = 8 additive releases (sensitivity 1) at eps = 0.3, noise on [-500, 500] with
grid step 0.5, L1 utility loss (mean |x|), target delta 1e-6, smooth-bucket width 0.001;
the default schedule (``Schedule()``, the defaults of ``accountant learn``: 3000 Adam
epochs), warm-started from the best truncated Gaussian meeting the target. The learner
returns the noise with its *certified* PrivacyBuckets delta (never the training loss)
and the baseline: the truncated Gaussian with the smallest utility loss whose certified
delta is no larger; it says whether the target was met and which noise it returns (the
Gaussian, when the learned noise does not beat it). The script prints both and plots
their pmfs (``accountant.report.plotting.plot_noises``).

Run from the repository root::

    python examples/learn_noise.py          # the default schedule
    python examples/learn_noise.py --fast   # range [-50, 50], n = 2, 30 epochs
    python examples/learn_noise.py --output-dir docs/figures/examples

How long a run takes: ``docs/user-timings.md``.

Needs the ``torch`` extra (``pip install '.[torch]'``). Without PyTorch the script
prints one line naming that extra and exits with status 0, so that the examples run
in any installation.

PNG: ``learn-noise.png`` in a new temporary directory (printed at the end) unless
``--output-dir`` is given; the last command above writes the figure of the docs.
"""

from __future__ import annotations

import argparse
import time

from _support import add_output_option, output_directory, reported_warnings

from accountant.report.plotting import plot_noises


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fast", action="store_true", help="range 50, n = 2, 30 epochs")
    add_output_option(parser)
    parser.add_argument(
        "--epochs", type=int, default=None, help="override the epochs of Schedule()"
    )
    args = parser.parse_args(argv)
    try:
        from optimizers import LearningProblem, Schedule, learn
    except ImportError as exc:
        print(f"skipped: this example needs PyTorch, the [torch] extra ({exc})")
        return 0

    if args.fast:
        bound, times, target, epochs = 50.0, 2, 1e-3, 30
    else:
        bound, times, target, epochs = 500.0, 8, 1e-6, None
    problem = LearningProblem(
        bound=bound,
        step=0.5,
        epsilon=0.3,
        times=times,
        utility="L1",
        target_delta=target,
        bucket_width=0.001,
    )
    epochs = args.epochs or epochs
    schedule = Schedule() if epochs is None else Schedule(epochs=epochs)
    directory = output_directory(args)
    print(
        f"learning noise on [-{bound:g}, {bound:g}] (step {problem.step:g}), n = {times}, "
        f"eps = {problem.epsilon:g}, {problem.utility} utility, target delta {target:g}, "
        f"{schedule.epochs} epochs"
    )
    start = time.perf_counter()
    with reported_warnings("learn"):
        result = learn(problem, schedule, progress=False)
    seconds = time.perf_counter() - start
    print(
        f"trained {result.epochs_run} epochs in {seconds:.1f} s (best epoch {result.best_epoch}"
        f"{', stopped by ' + result.stopped_by if result.stopped_by else ''})\n"
    )

    certificate = result.learned
    rows = [("learned noise", "", certificate)]
    baseline = result.baseline
    if baseline is not None:
        rows.append(("best truncated Gaussian", f"{baseline.sigma:.4g}", baseline.certificate))
    print(
        f"{'noise':<24} {'sigma':>8} {'delta lower':>12} {'delta upper':>12} "
        f"{'U_L1':>9} {'U_L2':>9}"
    )
    for name, sigma, cert in rows:
        print(
            f"{name:<24} {sigma:>8} {cert.delta_lower:>12.4e} {cert.delta_upper:>12.4e} "
            f"{cert.utility_l1:>9.4f} {cert.utility_l2:>9.4f}"
        )
    if baseline is None:
        print(f"no truncated-Gaussian baseline: {result.baseline_note}")
    elif result.beats_baseline:
        gain = 1.0 - certificate.utility(problem.utility) / baseline.utility
        print(
            f"\nthe learned noise has {100 * gain:.1f} % smaller {problem.utility} utility "
            "loss than the best truncated Gaussian whose certified delta is no larger"
        )
    else:
        print("\nthe learned noise does not beat the best truncated Gaussian (returned)")
    met = {True: "met", False: "MISSED", None: "none"}[result.met_target]
    print(f"returned: the {result.returned} noise; target delta {target:g}: {met}")

    noises = {
        f"learned: U_L1 = {certificate.utility_l1:.3f}, delta <= {certificate.delta_upper:.3g}": (
            result.noise
        )
    }
    if baseline is not None:
        label = (
            f"truncated Gaussian sigma = {baseline.sigma:.4g}: "
            f"U_L1 = {baseline.certificate.utility_l1:.3f}, "
            f"delta <= {baseline.certificate.delta_upper:.3g}"
        )
        noises[label] = baseline.noise
    path = directory / "learn-noise.png"
    plot_noises(
        noises,
        str(path),
        title=f"Learned vs truncated Gaussian noise, n = {times}, eps = {problem.epsilon:g}",
    )
    print(f"\nwrote:\n  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
