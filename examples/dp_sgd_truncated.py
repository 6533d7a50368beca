"""DP-SGD with truncated Gaussian noise: how far out must the noise be cut?

One DP-SGD step with Poisson sub-sampling rate q = 0.01, clipping norm 1 and noise
multiplier sigma = 1 (noise standard deviation in units of the clipping norm) is the
mixture pair ``A = p``, ``B = (1 - q) p + q (p shifted by the clip)``
(``WorstCasePair.subsampled``). Here ``p`` is a Gaussian truncated at 2, 3, 4 or 8 sigma
on a grid of step 0.02. After n = 1000 steps the script prints and plots the certified
PrivacyBuckets delta(eps) for eps in [0.5, 5].

Truncation creates distinguishing events: the outputs in ``(bound, bound + clip]``
can only come from the shifted component of ``B`` and are impossible under ``A``, so
in the direction B/A a mass ``omega = q * p(top band of width clip)`` is never
explained by ``A`` (the direction A/B has none; every delta reported is the larger of
the two). This mass composes to ``Omega_n = 1 - (1 - omega)^n``, a floor under delta
at every eps. Cut at 2 sigma
it is most of the privacy budget; at 8 sigma it is negligible.

Run from the repository root::

    python examples/dp_sgd_truncated.py          # n = 1000
    python examples/dp_sgd_truncated.py --fast   # n = 20, bounds 2 and 4 sigma
    python examples/dp_sgd_truncated.py --output-dir docs/figures/examples

Runtime: the cost is not the noise grid (step 0.05 instead of 0.02 was measured to
take as long) but the refinement of the loss buckets the certified bracket needs at
8 sigma, where the mixture's losses have no lattice. The default PrivacyBuckets
accuracy is therefore 1e-2 (a 1 % relative bracket, invisible on the log plot and in
the printed digits of the upper bound); ``--accuracy 1e-3`` takes longer.
How long a run takes: ``docs/user-timings.md``.

PNG: ``dp-sgd-truncated.png`` in a new temporary directory (printed at the end) unless
``--output-dir`` is given; the last command writes the figure of the docs.
CertificationWarnings (requested accuracy not reached; the bounds stay certified) would
be printed as notes; the defaults ask for what the engine reaches, so there is none.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _support import add_output_option, output_directory, reported_warnings

from accountant import ExtendedMA, PrivacyBuckets, WorstCasePair, noise
from accountant.report.plotting import pyplot

Q = 0.01
CLIP = 1.0
SIGMA = 1.0
TABLE_EPSILONS = np.array([0.5, 1.0, 2.0, 5.0])


def audit(
    multiple: float, step: float, times: int, epsilons: np.ndarray, accuracy: float
) -> dict[str, object]:
    """Certified delta(eps) after ``times`` steps for the Gaussian cut at ``multiple`` sigma,
    with the per-step and composed distinguishing masses."""
    start = time.perf_counter()
    p = noise.truncated_gaussian(SIGMA, multiple * SIGMA, step)
    pair = WorstCasePair.subsampled(p, q=Q, clip=CLIP)
    buckets = PrivacyBuckets(accuracy=accuracy).compose(pair, times=times)
    label = f"bound {multiple:g} sigma"
    with reported_warnings(label):
        curve = buckets.delta(epsilons)
    with reported_warnings(f"{label}, table"):
        table = buckets.delta(TABLE_EPSILONS)
    return {
        "multiple": multiple,
        "points": p.size,
        "omega_1": ExtendedMA().compose(pair, 1).distinguishing_mass(),
        "omega_n": ExtendedMA().compose(pair, times).distinguishing_mass(),
        "curve": curve,
        "table": table,
        "seconds": time.perf_counter() - start,
    }


def plot(results: list[dict], epsilons: np.ndarray, step: float, times: int, path: Path) -> None:
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    floor = 1.0
    for k, result in enumerate(results):
        colour = f"C{k}"
        curve = result["curve"]
        label = f"cut at {result['multiple']:g} sigma (Omega_n = {result['omega_n']:.2g})"
        axes.plot(epsilons, curve.upper, color=colour, lw=1.7, label=label)
        axes.fill_between(
            epsilons, np.maximum(curve.lower, 1e-300), curve.upper, color=colour, alpha=0.25, lw=0
        )
        if result["omega_n"] > 0:
            axes.axhline(result["omega_n"], color=colour, lw=0.9, ls=":")
            floor = min(floor, result["omega_n"])
        floor = min(floor, float(np.min(curve.upper)))
    axes.plot([], [], color="black", lw=0.9, ls=":", label="distinguishing mass Omega_n")
    axes.plot([], [], color="grey", lw=6, alpha=0.3, label="certified lower..upper band")
    axes.set_yscale("log")
    axes.set_ylim(bottom=max(floor / 10.0, 1e-14), top=1.5)
    axes.set_xlim(epsilons[0], epsilons[-1])
    axes.set_xlabel("epsilon")
    axes.set_ylabel("certified delta(epsilon)")
    axes.set_title(
        f"DP-SGD with truncated Gaussian noise after n = {times} steps\n"
        f"q = {Q:g}, clip {CLIP:g}, noise multiplier sigma = {SIGMA:g}, grid step {step:g}",
        fontsize=11,
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="center right")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fast", action="store_true", help="n = 20, bounds 2 and 4 sigma")
    add_output_option(parser)
    parser.add_argument("--step", type=float, default=0.02, help="grid step (default 0.02)")
    parser.add_argument(
        "--accuracy", type=float, default=1e-2, help="PrivacyBuckets accuracy (default 1e-2)"
    )
    args = parser.parse_args(argv)
    # --fast asks for what it reaches: cut at 8 sigma, 20 steps have deltas down to
    # 1e-13 at eps >= 2, below the engine's round-off floor (about 2e-11), where no
    # relative accuracy is certified; cut at 4 sigma, delta stays above Omega_n = 2.5e-4.
    # (1000 steps at 8 sigma reach 1e-2 at every eps of the plot.)
    times, multiples = (20, (2.0, 4.0)) if args.fast else (1000, (2.0, 3.0, 4.0, 8.0))
    directory = output_directory(args)
    epsilons = np.linspace(0.5, 5.0, 46)
    print(
        f"DP-SGD: q = {Q:g}, clip {CLIP:g}, noise multiplier sigma {SIGMA:g}, grid step "
        f"{args.step:g}, n = {times} steps; PrivacyBuckets accuracy {args.accuracy:g}"
    )
    results = [audit(m, args.step, times, epsilons, args.accuracy) for m in multiples]

    print("\ndistinguishing mass (direction B/A: outputs possible under B, impossible under A)")
    print(f"{'bound':>9} {'grid pts':>9} {'omega (1 step)':>15} {'Omega_n':>11} {'time':>7}")
    for r in results:
        print(
            f"{r['multiple']:>7g} s {r['points']:>9d} {r['omega_1']:>15.3e} "
            f"{r['omega_n']:>11.3e} {r['seconds']:>6.1f}s"
        )
    print(f"\ncertified delta(eps) after n = {times}: upper [lower]")
    print(f"{'bound':>9}" + "".join(f"{'eps=' + format(e, 'g'):>25}" for e in TABLE_EPSILONS))
    for r in results:
        table = r["table"]
        cells = "".join(
            f"{up:>12.3e} [{lo:10.3e}]" for lo, up in zip(table.lower, table.upper, strict=True)
        )
        print(f"{r['multiple']:>7g} s{cells}")

    path = directory / "dp-sgd-truncated.png"
    plot(results, epsilons, args.step, times, path)
    print(f"\nwrote:\n  {path}")


if __name__ == "__main__":
    main()
