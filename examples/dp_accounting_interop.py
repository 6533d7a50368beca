"""Use this library with Google's dp_accounting (the ``dp-accounting`` extra).

1. Export a truncated-Gaussian pair to a dp_accounting ``PrivacyLossDistribution``
   (pessimistic: losses rounded up, distinguishing mass at +inf) and compare
   dp_accounting's answer with the exact delta and with certified PrivacyBuckets bounds.
2. Account dp_accounting events (a DP-SGD run with truncated noise, plus a Gaussian query)
   with ``CertifiedAccountant``, next to dp_accounting's own PLDAccountant.
3. Poisson-sampled Laplace events, and a DP-SGD run sampling batches without replacement
   under replace-one neighbours (``NeighboringRelation.REPLACE_ONE``).
4. Export the composed accountant as a pessimistic dp_accounting PLD and go on composing
   it in dp_accounting.

    python examples/dp_accounting_interop.py          # 100 compositions
    python examples/dp_accounting_interop.py --fast   # 10, for the test suite
"""

from __future__ import annotations

import argparse

from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation

from accountant import PrivacyBuckets, WorstCasePair, exact_delta, noise
from accountant.interop import CertifiedAccountant, TruncatedNoiseDpEvent, to_dp_accounting_pld


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fast", action="store_true", help="10 compositions, quick run")
    args = parser.parse_args(argv)
    times = 10 if args.fast else 100
    p = noise.truncated_gaussian(sigma=5.0, bound=30.0, step=0.1)
    pair = WorstCasePair.additive(p, sensitivity=1.0)

    print(f"1. export of {pair.description}")
    exported = to_dp_accounting_pld(pair, value_discretization_interval=1e-4)
    composed = to_dp_accounting_pld(pair, times=times)  # dp_accounting's self_compose
    certified = PrivacyBuckets(accuracy=1e-3).compose(pair, times)
    header = f"n={times}: certified [lower, upper]  export"
    print(f"{'eps':>5} {'exact (n=1)':>12} {'export (n=1)':>12}   {header}")
    for eps in (0.5, 1.0, 2.0):
        bounds = certified.delta(eps)
        single = (exact_delta(pair, eps), exported.get_delta_for_epsilon(eps))
        print(
            f"{eps:5.1f} {single[0]:12.4e} {single[1]:12.4e}   [{bounds.lower:.5e}, "
            f"{bounds.upper:.5e}]  {composed.get_delta_for_epsilon(eps):.5e}"
        )

    print("\n2. dp_accounting events, certified")
    dp_sgd_noise = noise.truncated_gaussian(sigma=1.0, bound=8.0, step=0.02)  # cut at 8 sigma
    step = dp_event.PoissonSampledDpEvent(0.01, TruncatedNoiseDpEvent(dp_sgd_noise, 1.0))
    event = dp_event.ComposedDpEvent(
        [dp_event.SelfComposedDpEvent(step, 10 * times), dp_event.GaussianDpEvent(20.0)]
    )
    ours = CertifiedAccountant(accuracy=1e-3).compose(event)
    print(f"history: {ours.buckets.history}")
    bounds = ours.epsilon_bounds(1e-5)
    print(f"eps at delta=1e-5: certified [{bounds.lower:.4f}, {bounds.upper:.4f}]")
    print(f"get_epsilon(1e-5) = {ours.get_epsilon(1e-5):.4f} (the certified upper bound)")
    gaussian = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(10.0), times)
    theirs = PLDAccountant().compose(gaussian).get_delta(1.0)
    mine = CertifiedAccountant(accuracy=1e-3).compose(gaussian).delta_bounds(1.0)
    print(
        f"{times} Gaussian releases (sigma 10), delta at eps=1: dp_accounting {theirs:.5e}, "
        f"certified [{mine.lower:.5e}, {mine.upper:.5e}]"
    )

    print("\n3. Poisson-sampled Laplace; sampling without replacement (replace-one)")
    laplace = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.1, dp_event.LaplaceDpEvent(2.0)), 3 * times
    )
    theirs = PLDAccountant().compose(laplace).get_delta(0.5)
    mine = CertifiedAccountant(accuracy=1e-3).compose(laplace).delta_bounds(0.5)
    print(
        f"{3 * times} Laplace steps (scale 2, q 0.1), delta at eps=0.5: dp_accounting "
        f"{theirs:.5e}, certified [{mine.lower:.5e}, {mine.upper:.5e}]"
    )
    batches = dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(60000, 600, dp_event.GaussianDpEvent(1.0)),
        10 * times,
    )
    replace = CertifiedAccountant(NeighboringRelation.REPLACE_ONE, accuracy=1e-3)
    bounds = replace.compose(batches).epsilon_bounds(1e-5)
    print(
        f"{10 * times} batches of 600 of 60000 without replacement (sigma 1, replace-one): "
        f"eps at delta=1e-5 in [{bounds.lower:.4f}, {bounds.upper:.4f}]"
    )

    print("\n4. the composition exported to dp_accounting, composed further there")
    exported = ours.to_dp_accounting_pld()
    more = exported.compose(dp_pld.from_gaussian_mechanism(30.0))
    print(
        f"delta at eps=2: exported {exported.get_delta_for_epsilon(2.0):.5e} "
        f"(certified upper {ours.get_delta(2.0):.5e}); with one more Gaussian release "
        f"(sigma 30) composed by dp_accounting: {more.get_delta_for_epsilon(2.0):.5e}"
    )


if __name__ == "__main__":
    main()
