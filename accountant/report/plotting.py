"""delta(eps) curves with their certified bounds, and noise pmfs side by side, as PNGs
(needs the ``plot`` extra)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np

from accountant.buckets import PrivacyBuckets
from accountant.errors import InfeasibleTargetError
from accountant.moments.extended_ma import ExtendedMA
from accountant.noise import NoiseDistribution
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import Direction

__all__ = ["plot_delta_curves", "plot_noises", "pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or an ImportError naming the ``[plot]``
    extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "plotting needs matplotlib; install the [plot] extra: "
            "pip install 'truncated-noise-accountant[plot]'"
        ) from exc
    return plt


def plot_delta_curves(
    pairs: WorstCasePair | Sequence[WorstCasePair],
    times: int,
    path: str,
    *,
    title: str = "",
    epsilons: np.ndarray | None = None,
    mark_epsilon: float | None = None,
    mark_delta: float | None = None,
    direction: Direction = "max",
) -> None:
    """Write a log-scale plot of delta(eps) after ``times`` releases: the certified
    PrivacyBuckets band (single pair only), the Extended MA (tight and paper) and the
    composed distinguishing mass.

    The title is ``title`` (wrapped) over a line stating n. ``mark_epsilon`` draws a
    vertical line at the requested (or found) eps, ``mark_delta`` a horizontal line at a
    target delta; the default eps range is widened to show the marked eps. ``direction``
    (``"max"``, ``"A/B"`` or ``"B/A"``) is the direction drawn, named in the title unless
    it is ``"max"``.
    """
    plt = pyplot()
    pair_list = (pairs,) if isinstance(pairs, WorstCasePair) else tuple(pairs)
    tight = ExtendedMA().compose(pair_list, times)
    paper = ExtendedMA(conversion="paper").compose(pair_list, times)
    if epsilons is None:
        top = _default_top(tight, direction)
        if mark_epsilon is not None and math.isfinite(mark_epsilon):
            top = max(top, 1.25 * mark_epsilon)
        epsilons = np.linspace(0.0, top, 200)
    figure, axes = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    if len(pair_list) == 1:
        bounds = PrivacyBuckets().compose(pair_list[0], times).delta(epsilons, direction)
        axes.fill_between(epsilons, bounds.lower, bounds.upper, color="tab:blue", alpha=0.35, lw=0)
        axes.plot(
            epsilons,
            bounds.upper,
            color="tab:blue",
            lw=1.5,
            label="PrivacyBuckets (certified lower..upper)",
        )
    axes.plot(
        epsilons,
        tight.delta(epsilons, direction).upper,
        color="tab:green",
        lw=1.5,
        label="Extended MA, tight conversion",
    )
    axes.plot(
        epsilons,
        paper.delta(epsilons, direction).upper,
        color="tab:red",
        lw=1.2,
        ls="--",
        label="Extended MA, paper conversion",
    )
    axes.axhline(
        tight.distinguishing_mass(direction),
        color="black",
        lw=1.0,
        ls=":",
        label="distinguishing mass after n releases",
    )
    heading = f"delta(epsilon) after n = {times} releases"
    if direction != "max":
        heading = f"{heading}, direction {direction}"
    if mark_epsilon is not None:
        axes.axvline(
            mark_epsilon, color="tab:purple", lw=1.2, ls="-.", label=f"eps = {mark_epsilon:.4g}"
        )
        heading += f", eps = {mark_epsilon:.4g} marked"
    if mark_delta is not None:
        heading += f" (certified for target delta {mark_delta:.3g})"
        axes.axhline(
            mark_delta,
            color="tab:orange",
            lw=1.2,
            ls="-.",
            label=f"target delta = {mark_delta:.3g}",
        )
    axes.set_yscale("log")
    axes.set_xlabel("epsilon")
    axes.set_ylabel("delta(epsilon)")
    lines = textwrap.wrap(title, width=70) if title else []
    axes.set_title("\n".join([*lines, heading]), fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _default_top(accountant: ExtendedMA, direction: Direction) -> float:
    """Upper end of the default eps range: twice the eps at which the Extended MA bound
    reaches twice the composed distinguishing mass (at least 0.5), or 1 when that
    mass leaves no room below 1."""
    floor = accountant.distinguishing_mass(direction)
    target = max(1e-10, min(2.0 * floor, 0.5 * (1.0 + floor)))
    if not target < 1.0:
        return 1.0
    try:
        return max(2.0 * accountant.epsilon(target, direction).upper, 0.5)
    except InfeasibleTargetError:
        return 1.0


def plot_noises(noises: dict[str, NoiseDistribution], path: str, *, title: str = "") -> None:
    """Write the pmfs of ``noises`` (label -> noise) on a log scale, as points per grid
    value, so a learned noise can be compared with a truncated Gaussian or the LP optimum."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    styles = ("-", "--", ":", "-.")
    for k, (label, noise) in enumerate(noises.items()):
        positive = noise.pmf > 0
        axes.plot(noise.grid[positive], noise.pmf[positive], ls=styles[k % 4], lw=1.4, label=label)
    axes.set_yscale("log")
    axes.set_xlabel("noise value x")
    axes.set_ylabel("probability mass p(x)")
    axes.set_title(title or "noise distributions")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
