"""Compare every accountant on one truncated Gaussian: sigma 100, bound 500, step 0.5,
sensitivity 1, n = 128 releases.

Curves of delta(eps) (both directions, the larger) from

* the Extended Moments Accountant with the paper's conversion (Markov's inequality),
* the Extended Moments Accountant with the tight conversion (the default),
* PrivacyBuckets, certified lower and upper bound (a band: they nearly coincide),
* the composed distinguishing mass Omega_n (a floor no accountant can go below),
* Google's ``dp_accounting`` PLD accountant (optimistic and pessimistic estimates), fed
  the same two pmfs, when it is installed and imports; otherwise the reason is printed
  and it is skipped. It is an optional peer, never a dependency of the library.

Run from the repository root::

    python examples/compare_accountants.py          # the paper's setting
    python examples/compare_accountants.py --fast   # sigma 10, bound 50, n = 8; no peer
    python examples/compare_accountants.py --output-dir docs/figures/examples

PNG: ``compare-accountants.png`` in a new temporary directory (printed at the end) unless
``--output-dir`` is given; the last command writes the figure of the docs. How long a run
takes: ``docs/user-timings.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _support import add_output_option, output_directory, reported_warnings

from accountant import ExtendedMA, PrivacyBuckets, WorstCasePair, noise
from accountant.report.plotting import pyplot

TABLE_EPSILONS = np.array([0.1, 0.3, 0.5, 1.0])
#: Loss discretisation of dp_accounting's PLD (its default is 1e-4).
DP_INTERVAL = 1e-5


def _log_pmf(pmf: np.ndarray) -> dict[int, float]:
    """``{outcome index: ln mass}`` over the outcomes with positive mass."""
    index = np.flatnonzero(pmf > 0.0)
    return dict(zip(index.tolist(), np.log(pmf[index]).tolist(), strict=True))


def dp_accounting_deltas(
    pair: WorstCasePair, times: int, epsilons: np.ndarray
) -> tuple[dict[str, np.ndarray] | None, str]:
    """dp_accounting's optimistic and pessimistic delta(eps) for ``times`` compositions of
    ``pair``, both directions (``symmetric=False``); ``(None, reason)`` if unavailable."""
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except Exception as exc:  # ImportError, or a broken install (e.g. an attrs mismatch)
        return None, f"dp_accounting not importable ({type(exc).__name__}: {exc})"
    curves = {}
    for name, pessimistic in (("optimistic", False), ("pessimistic", True)):
        distribution = pld.from_two_probability_mass_functions(
            _log_pmf(pair.b),  # "lower" = B
            _log_pmf(pair.a),  # "upper" = A: the remove PLD has loss ln A/B under A
            pessimistic_estimate=pessimistic,
            value_discretization_interval=DP_INTERVAL,
            symmetric=False,
        )
        composed = distribution.self_compose(times)
        curves[name] = np.asarray(composed.get_delta_for_epsilon(epsilons), dtype=float)
    return curves, "ok"


def compute(
    pair: WorstCasePair, times: int, epsilons: np.ndarray, accuracy: float, use_peer: bool
) -> tuple[dict[str, np.ndarray], float, str]:
    """Every curve on ``epsilons``; the distinguishing mass; the peer's status line."""
    curves: dict[str, np.ndarray] = {
        "MA paper": np.asarray(
            ExtendedMA(conversion="paper").compose(pair, times).delta(epsilons).upper
        ),
        "MA tight": np.asarray(ExtendedMA().compose(pair, times).delta(epsilons).upper),
    }
    with reported_warnings("PrivacyBuckets"):
        bounds = PrivacyBuckets(accuracy=accuracy).compose(pair, times=times).delta(epsilons)
    curves["PB lower"], curves["PB upper"] = np.asarray(bounds.lower), np.asarray(bounds.upper)
    omega = ExtendedMA().compose(pair, times).distinguishing_mass()
    status = "skipped in --fast mode"
    if use_peer:
        peer, status = dp_accounting_deltas(pair, times, epsilons)
        if peer is not None:
            curves["dp_acc optimistic"] = peer["optimistic"]
            curves["dp_acc pessimistic"] = peer["pessimistic"]
    return curves, omega, status


STYLES = {  # curve name -> (label, colour, line style, width)
    "MA paper": ("Extended MA, paper conversion", "tab:red", "--", 1.4),
    "MA tight": ("Extended MA, tight conversion", "tab:green", "-", 1.6),
    "PB upper": ("PrivacyBuckets, certified lower..upper", "tab:blue", "-", 2.2),
    "dp_acc pessimistic": ("dp_accounting PLD, pessimistic", "tab:orange", "-.", 1.2),
    "dp_acc optimistic": ("dp_accounting PLD, optimistic", "tab:purple", ":", 1.4),
}


def plot(
    epsilons: np.ndarray, curves: dict[str, np.ndarray], omega: float, title: str, path: Path
) -> None:
    """Top: delta(eps) of every accountant (log). Bottom: each divided by the certified
    PrivacyBuckets upper bound, so that the small differences can be seen."""
    plt = pyplot()
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(7.0, 6.4), dpi=120, sharex=True, gridspec_kw={"height_ratios": [2.2, 1]}
    )
    top.fill_between(
        epsilons, curves["PB lower"], curves["PB upper"], color="tab:blue", alpha=0.3, lw=0
    )
    reference = curves["PB upper"]
    for name, (label, colour, style, width) in STYLES.items():
        if name not in curves:
            continue
        top.plot(epsilons, curves[name], color=colour, ls=style, lw=width, label=label)
        bottom.plot(epsilons, curves[name] / reference, color=colour, ls=style, lw=width)
    bottom.fill_between(
        epsilons, curves["PB lower"] / reference, 1.0, color="tab:blue", alpha=0.3, lw=0
    )
    if omega > 0:
        top.axhline(omega, color="black", lw=1.0, ls=":")
        top.plot([], [], color="black", ls=":", label=f"distinguishing mass Omega_n = {omega:.2e}")
        bottom.plot(epsilons, omega / reference, color="black", lw=1.0, ls=":")
    floor = min(float(np.min(reference)), omega if omega > 0 else 1.0)
    top.set_yscale("log")
    top.set_ylim(bottom=floor / 10.0, top=1.5)
    top.set_xlim(epsilons[0], epsilons[-1])
    top.set_ylabel("delta(epsilon)\n(max over both directions)")
    top.set_title(title)
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=8, loc="upper right")
    bottom.set_yscale("log")
    largest = max(float(np.max(curves[name] / reference)) for name in STYLES if name in curves)
    bottom.set_ylim(0.5, 2.0 * largest)
    bottom.set_xlabel("epsilon")
    bottom.set_ylabel("ratio to\nPrivacyBuckets upper")
    bottom.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fast", action="store_true", help="sigma 10, bound 50, n = 8, no peer")
    add_output_option(parser)
    parser.add_argument("--accuracy", type=float, default=1e-3, help="PrivacyBuckets accuracy")
    args = parser.parse_args(argv)
    sigma, bound, step, times = (10.0, 50.0, 0.5, 8) if args.fast else (100.0, 500.0, 0.5, 128)
    directory = output_directory(args)
    pair = WorstCasePair.additive(noise.truncated_gaussian(sigma, bound, step), sensitivity=1.0)
    print(
        f"truncated Gaussian sigma {sigma:g} on [-{bound:g}, {bound:g}], step {step:g}, "
        f"sensitivity 1, n = {times}"
    )

    epsilons = np.linspace(0.0, 1.0, 101)
    curves, omega, status = compute(pair, times, epsilons, args.accuracy, not args.fast)
    print(f"dp_accounting: {status}")
    table, _, _ = compute(pair, times, TABLE_EPSILONS, args.accuracy, not args.fast)
    print(f"distinguishing mass after n releases: Omega_n = {omega:.4e}\n")
    names = list(table)
    print(f"{'eps':>5}" + "".join(f"{name:>19}" for name in names))
    for k, eps in enumerate(TABLE_EPSILONS):
        print(f"{eps:>5g}" + "".join(f"{table[name][k]:>19.4e}" for name in names))
    ratio = table["MA tight"] / table["PB upper"]
    print("\nExtended MA tight / PrivacyBuckets upper: " + ", ".join(f"{r:.2f}" for r in ratio))

    path = directory / "compare-accountants.png"
    title = f"Accountants for a truncated Gaussian, sigma {sigma:g}, bound {bound:g}, n = {times}"
    plot(epsilons, curves, omega, title, path)
    print(f"\nwrote:\n  {path}")


if __name__ == "__main__":
    main()
