"""Audit a truncated Gaussian with every bound of the foundation: exact single-release
delta, the Extended Moments Accountant (tight and paper conversion) and the
distinguishing mass, over several numbers of releases.

    python examples/quick_audit.py           # the paper's setting
    python examples/quick_audit.py --fast    # a small grid, for the test suite
"""

from __future__ import annotations

import argparse

from accountant import ExtendedMA, WorstCasePair, exact_delta, noise


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fast", action="store_true", help="small grid, quick run")
    args = parser.parse_args(argv)
    sigma, bound, step = (10.0, 50.0, 0.5) if args.fast else (100.0, 500.0, 0.5)
    p = noise.truncated_gaussian(sigma=sigma, bound=bound, step=step)
    pair = WorstCasePair.additive(p, sensitivity=1.0)
    eps = 0.3
    print(f"truncated Gaussian sigma={sigma:g}, bound={bound:g}, step={step:g}; eps={eps}")
    print(f"exact single-release delta: {exact_delta(pair, eps):.4e}")
    print(f"{'n':>6} {'Omega':>11} {'MA tight':>11} {'MA paper':>11} {'lambda':>8}")
    for n in (1, 8, 128, 1024):
        tight = ExtendedMA().compose(pair, times=n)
        paper = ExtendedMA(conversion="paper").compose(pair, times=n)
        details = tight.delta_details(eps)
        print(
            f"{n:>6} {tight.distinguishing_mass():11.3e} {details.delta:11.3e} "
            f"{paper.delta(eps).upper:11.3e} {details.a_over_b.lam:8.3g}"
        )


if __name__ == "__main__":
    main()
