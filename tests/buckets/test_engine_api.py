"""PrivacyBuckets public API: results, caching, warnings and clear errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
    InfeasibleTargetError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    noise,
)


@pytest.fixture(scope="module")
def gaussian_pair() -> WorstCasePair:
    return WorstCasePair.additive(noise.truncated_gaussian(3.0, 12.0, 0.5), 1.0)


# eps = 0 and 0.5 sit exactly on loss atoms (L = (1 - 2x)/18): whether P[L > eps] counts
# them is decided by rounding, so the PDP bracket honestly contains both answers and
# the engine warns that 1e-6 was not reached.
@pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")
def test_single_release_brackets_the_exact_values(gaussian_pair):
    buckets = PrivacyBuckets(accuracy=1e-6).compose(gaussian_pair)
    for eps in (0.0, 0.05, 0.2, 0.5):
        adp = buckets.delta(eps)
        assert adp.lower <= exact_delta(gaussian_pair, eps) <= adp.upper
        pdp = buckets.delta_pdp(eps)
        assert pdp.lower <= exact_delta_pdp(gaussian_pair, eps) <= pdp.upper
    eps = buckets.epsilon(1e-3)
    assert eps.lower <= exact_epsilon(gaussian_pair, 1e-3) <= eps.upper


def test_bounds_unpack_and_carry_their_context(gaussian_pair):
    bounds = PrivacyBuckets().compose(gaussian_pair, times=10).delta(0.5)
    lower, upper = bounds
    assert lower == bounds.lower and upper == bounds.upper
    assert bounds.releases == 10 and bounds.kind == "ADP" and bounds.direction == "max"
    assert bounds.achieved_accuracy <= bounds.accuracy
    assert bounds.bucket_width > 0


def test_vectorised_eps_give_arrays(gaussian_pair):
    buckets = PrivacyBuckets().compose(gaussian_pair, times=10)
    eps = np.array([[0.1, 0.5], [1.0, 2.0]])
    bounds = buckets.delta(eps)
    assert bounds.lower.shape == (2, 2) and bounds.upper.shape == (2, 2)
    assert np.all(bounds.lower <= bounds.upper)
    single = buckets.delta(1.0)
    assert bounds.lower[1, 0] == pytest.approx(single.lower, rel=1e-12)


def test_composition_is_lazy_immutable_and_merges_counts(gaussian_pair):
    empty = PrivacyBuckets()
    five = empty.compose(gaussian_pair, times=2).compose(gaussian_pair, times=3)
    assert empty.releases == 0 and five.releases == 5 and len(five.components) == 1
    at_once = PrivacyBuckets().compose(gaussian_pair, times=5)
    a, b = five.delta(0.7), at_once.delta(0.7)
    assert a.lower == b.lower and a.upper == b.upper


def test_no_release_leaks_nothing():
    bounds = PrivacyBuckets().delta(0.0)
    assert bounds.lower == 0.0 and bounds.upper == 0.0


def test_unreachable_accuracy_warns_with_the_achieved_figure(gaussian_pair):
    buckets = PrivacyBuckets(accuracy=1e-15).compose(gaussian_pair, times=64)
    with pytest.warns(CertificationWarning, match="relative bracket of"):
        bounds = buckets.delta(1.0)
    assert bounds.lower <= bounds.upper and bounds.achieved_accuracy > 1e-15


def test_default_accuracy_is_met_quietly(gaussian_pair):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CertificationWarning)
        PrivacyBuckets().compose(gaussian_pair, times=64).delta(1.0)


def test_infeasible_target_below_distinguishing_mass():
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 3.0, 0.5), 1.0)
    buckets = PrivacyBuckets().compose(pair, times=50)
    with pytest.raises(InfeasibleTargetError, match="distinguishing mass"):
        buckets.epsilon(1e-6)
