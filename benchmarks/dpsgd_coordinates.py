"""Cost and width of the certified DP-SGD bound on many coordinates
(:class:`accountant.DPSGDAccountant`) against the one-dimensional pair alone, as the
Opacus accountant uses it: ``d`` coordinates per step, noise multiplier 1, the noise cut
at ``--cut`` sigma, eps at delta 1e-5 after 80 steps (q = 1/16) and 10,000 steps
(q = 0.004)::

    python benchmarks/dpsgd_coordinates.py                 # d = 10^6, cut 10
    python benchmarks/dpsgd_coordinates.py --cut 8 --dimension 1000
    python benchmarks/dpsgd_coordinates.py --quick         # the 80-step run only

Each row: tau (the chance that some coordinate reaches its cut), the certified eps
bracket for ``d`` coordinates, the one-dimensional pair's upper bound, and the seconds of
the first eps query (composition included).
"""

from __future__ import annotations

import argparse
import time
import warnings

from accountant import (
    CertificationWarning,
    DPSGDAccountant,
    InfeasibleTargetError,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
)

RUNS = ((80, 1 / 16), (10_000, 0.004))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dimension", type=int, default=10**6)
    parser.add_argument("--cut", type=float, default=10.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--quick", action="store_true", help="the 80-step run only")
    args = parser.parse_args()
    print(f"d = {args.dimension}, cut {args.cut:g} sigma, sigma 1, delta {args.delta:g}")
    print("steps        q       tau   eps lower   eps upper   1-D upper   seconds")
    for steps, q in RUNS[:1] if args.quick else RUNS:
        step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=q, cut=args.cut)
        accountant = DPSGDAccountant(dimension=args.dimension).compose(step, steps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificationWarning)
            started = time.perf_counter()
            try:
                bounds = accountant.epsilon(args.delta)
                lower, upper = f"{bounds.lower:.6f}", f"{bounds.upper:.6f}"
            except InfeasibleTargetError:
                lower, upper = "-", "not certified"
            seconds = time.perf_counter() - started
            one = PrivacyBuckets().compose(step, steps).epsilon(args.delta).upper
        tau = accountant.escape_probability
        print(
            f"{steps:>6} {q:>8.4g} {tau:>9.3g} {lower:>11} {upper:>11} {one:>11.6f} {seconds:>9.2f}"
        )


if __name__ == "__main__":
    main()
