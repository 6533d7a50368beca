"""Chernoff moments of a single release with hundreds of thousands of buckets, by Horner's
rule on the bucket lattice: upper bounds on the exact log-sum-exp sums, and within
rounding and the coarsening allowance (``ln E e^{lambda L}`` raised by at most 1e-8 for
small ``lambda``) of them where ``e^{-lambda w}`` does not underflow: at the lambdas
summed, the exact sums; between, the chords of the exact sums at their neighbours
(a log-moment-generating function is convex, so a chord bounds it)."""

from __future__ import annotations

import numpy as np
import pytest

from accountant.buckets._kernels import log_moment_generating
from accountant.buckets.bucketed import merge_tail_moments, sum_tail_moments
from accountant.buckets.tails import COMPUTED_LAMBDAS, LAMBDA_GRID, TailMoments
from accountant.mechanisms import GaussianMechanism, SubsampledTruncatedGaussian


@pytest.mark.parametrize(
    ("mechanism", "width"),
    [
        (GaussianMechanism(1.0), 5e-5),
        (SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.01, cut=8.0), 1e-4),
    ],
)
@pytest.mark.parametrize("direction", ["A/B", "B/A"])
def test_lattice_moments_bound_the_exact_ones_closely(mechanism, width, direction):
    release = mechanism.bucket_release()
    anchor = release.statistics(direction, 1e-24).anchor
    for pld in (
        release.bucket(direction, width, anchor, 1e-24),
        release.lattice(direction, width, anchor, 1e-24),
    ):
        moments = TailMoments.of(pld)
        keep = pld.mass_a > 0.0
        low, high = pld.edges()
        log_mass = np.log(pld.mass_a[keep])
        exact_high = log_moment_generating(log_mass, high[keep], LAMBDA_GRID)
        exact_low = log_moment_generating(log_mass, -low[keep], LAMBDA_GRID)
        if pld.error_a > 0.0:  # the stored masses' absolute errors, counted at the extremes
            log_error = np.log(pld.error_a * np.sqrt(pld.size))
            exact_high = np.logaddexp(exact_high, log_error + LAMBDA_GRID * high.max())
            exact_low = np.logaddexp(exact_low, log_error - LAMBDA_GRID * low.min())
        slack = 1e-9 + 1e-8 + LAMBDA_GRID * 1e-12
        for got, exact in ((moments.log_mgf_high, exact_high), (moments.log_mgf_low, exact_low)):
            finite = np.isfinite(exact)
            assert (got[finite] >= exact[finite]).all()
            # close wherever e^{-lambda w} does not underflow (beyond, the underflow floor
            # keeps the bound certified but loose, where no Chernoff minimum lies)
            close = finite & (LAMBDA_GRID * pld.width < 50.0)
            summed = np.isin(LAMBDA_GRID, COMPUTED_LAMBDAS)
            assert (got[close & summed] <= exact[close & summed] + slack[close & summed]).all()
            between = close & ~summed
            chord = np.interp(LAMBDA_GRID, COMPUTED_LAMBDAS, exact[summed])
            assert (got[between] <= chord[between] + slack[between]).all()


def test_the_chords_span_the_whole_grid_from_summed_ends():
    """Both ends of the grid are summed, so every lambda lies on a chord between two summed
    ones (an end beyond the last summed lambda would be extrapolated: no bound)."""
    assert COMPUTED_LAMBDAS[0] == LAMBDA_GRID[0] and COMPUTED_LAMBDAS[-1] == LAMBDA_GRID[-1]
    assert set(COMPUTED_LAMBDAS) <= set(LAMBDA_GRID)


def test_summed_moments_gather_counts_by_identity_and_need_every_group():
    one, two = object(), object()  # stand-ins: only identity matters here
    assert sum_tail_moments([((one, 2),), ((two, 3), (one, 5)), ((two, 1),)]) == (
        (one, 7),
        (two, 4),
    )
    # a composition of a release without moments has none: no Chernoff cut at all
    assert sum_tail_moments([((one, 2),), ()]) == ()
    assert merge_tail_moments(((one, 1),), ((one, 1),)) == ((one, 2),)
