"""DPSGDAccountant: certified on many coordinates, identical to PrivacyBuckets on one.

Brute force: a two-coordinate step whose clipped gradient is spread over both axes
(``v = (1, 1) / sqrt(2)``), its delta(eps) integrated on a fine product grid. That
delta is above the one-dimensional pair's certified upper bound (the gap this
accountant closes) and below DPSGDAccountant(dimension=2)'s."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm

from accountant import (
    CertificationWarning,
    InfeasibleTargetError,
    InvalidInputError,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
)
from accountant.dpsgd import DPSGDAccountant

SIGMA, CUT = 1.0, 2.0


def _two_coordinate_delta(eps: float, shift: tuple[float, float], q: float) -> float:
    """max over directions of the integral of (a - e^eps b)_+ on a 2401^2 midpoint grid."""
    r = CUT * SIGMA
    x = np.linspace(-r, r + max(shift), 2401)
    h = x[1] - x[0]
    z = norm.cdf(CUT) - norm.cdf(-CUT)

    def density(s: float) -> np.ndarray:
        y = x - s
        return np.where(np.abs(y) <= r, norm.pdf(y / SIGMA) / (SIGMA * z), 0.0)

    a = np.outer(density(0.0), density(0.0))
    b = (1 - q) * a + q * np.outer(density(shift[0]), density(shift[1]))
    return max(
        float(np.maximum(a - math.exp(eps) * b, 0.0).sum() * h * h),
        float(np.maximum(b - math.exp(eps) * a, 0.0).sum() * h * h),
    )


@pytest.mark.parametrize("q", [1.0, 0.5])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_a_spread_gradient_is_bounded_where_the_one_dimensional_pair_is_not(q, eps):
    step = SubsampledTruncatedGaussian(sigma=SIGMA, sampling_rate=q, cut=CUT)
    spread = _two_coordinate_delta(eps, (1 / math.sqrt(2),) * 2, q)
    on_axis = _two_coordinate_delta(eps, (1.0, 0.0), q)
    one = PrivacyBuckets(accuracy=1e-4).compose(step).delta(eps)
    two = DPSGDAccountant(dimension=2).compose(step).delta(eps)
    # the grid integral is good to about 1e-3 relative (the cut falls between points)
    assert one.lower <= on_axis * 1.01 and on_axis <= one.upper * 1.01
    assert spread > one.upper * 1.02  # the one-dimensional certificate undercuts d = 2
    assert two.lower <= spread and spread * 1.01 <= two.upper


@pytest.mark.slow
def test_one_dimension_is_privacy_buckets_on_the_truncated_pair():
    step = SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.02, cut=6.0)
    ours = DPSGDAccountant(dimension=1, accuracy=1e-3).compose(step, 50)
    theirs = PrivacyBuckets(accuracy=1e-3).compose(step, 50)
    assert ours.delta(1.0).upper == theirs.delta(1.0).upper
    assert ours.epsilon(1e-5).upper == theirs.epsilon(1e-5).upper


@pytest.mark.slow
def test_more_coordinates_widen_only_the_upper_bound():
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.01, cut=6.0)
    bounds = [
        DPSGDAccountant(dimension=d, accuracy=1e-3).compose(step, 100).delta(np.array([0.5, 1.0]))
        for d in (2, 10**3, 10**6)
    ]
    for earlier, later in itertools.pairwise(bounds):
        assert np.array_equal(earlier.lower, later.lower)
        assert np.all(earlier.upper < later.upper)
    gaussian = PrivacyBuckets(accuracy=1e-3).compose(
        SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.01, cut=math.inf), 100
    )
    assert np.all(bounds[0].upper >= gaussian.delta(np.array([0.5, 1.0])).upper)


def test_epsilon_is_certified_by_the_delta_bound_and_brackets_the_truth():
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.05, cut=8.0)
    accountant = DPSGDAccountant(dimension=10**4, accuracy=1e-3).compose(step, 200)
    found = accountant.epsilon(1e-5)
    assert found.lower <= found.upper
    # checked at a finer accuracy: a delta query at 1e-3 aims its widths at 1e-3 and may
    # bracket delta(upper) across the target (both certified)
    finer = DPSGDAccountant(dimension=10**4, accuracy=1e-5).compose(step, 200)
    assert finer.delta(found.upper).upper <= 1e-5
    assert finer.delta(found.lower * 0.99).lower > 1e-5 or found.lower == 0.0
    many = accountant.epsilon(np.array([1e-5, 1e-4]))
    assert many.upper[0] == found.upper and many.upper[1] < found.upper


def _composed_anything(buckets: PrivacyBuckets) -> bool:
    """Whether ``buckets`` (or an accountant it derived for a target's tail mass) composed."""
    memo = buckets._memo
    return bool(memo.composed) or any(bool(t._memo.composed) for t in memo.tails.values())


def test_a_far_cut_takes_its_lower_bound_from_the_uncut_run():
    """Cut at 9 sigma: the coupling's penalty is far below the delta, so the lower end comes
    from the uncut run (the cut run is never composed), and it lies within the truncated
    pair's own certified bracket (and below the upper end); at 5 sigma it does not apply."""
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.02, cut=9.0)
    accountant = DPSGDAccountant(dimension=10**3, accuracy=1e-3).compose(step, 300)
    found = accountant.epsilon(1e-5)
    assert not _composed_anything(accountant.truncated)  # one composition: the uncut run's
    assert _composed_anything(accountant.gaussian)
    own = PrivacyBuckets(accuracy=1e-3).compose(step, 300).epsilon(1e-5)
    assert found.lower <= own.upper and found.lower >= own.lower * (1 - 1e-3)
    assert found.lower <= found.upper
    near = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.02, cut=5.0)
    close = DPSGDAccountant(dimension=2, accuracy=1e-3).compose(near, 300)
    close.epsilon(1e-2)
    assert _composed_anything(close.truncated)  # the cut run's own lower bound
    bounds = accountant.delta(np.array([1.0, 2.0]))
    theirs = PrivacyBuckets(accuracy=1e-3).compose(step, 300).delta(np.array([1.0, 2.0]))
    assert np.all(bounds.lower <= theirs.upper) and np.all(bounds.lower <= bounds.upper)


@pytest.mark.slow
def test_a_cut_too_close_for_the_coordinates_is_refused_not_guessed():
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.01, cut=8.0)
    accountant = DPSGDAccountant(dimension=10**6).compose(step, 1000)
    assert accountant.escape_probability > 1e-6
    with pytest.raises(InfeasibleTargetError, match=r"delta=1e-05 cannot be certified"):
        accountant.epsilon(1e-5)


@pytest.mark.slow
def test_pdp_for_many_coordinates_is_certified_from_below_only_and_says_so():
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.1, cut=5.0)
    accountant = DPSGDAccountant(dimension=3).compose(step, 4)
    one = PrivacyBuckets().compose(step, 4)
    with pytest.warns(CertificationWarning, match="PDP is certified only from below"):
        bounds = accountant.delta_pdp(np.array([0.5, 1.0]))
    assert np.array_equal(bounds.lower, one.delta_pdp(np.array([0.5, 1.0])).lower)
    assert np.all(bounds.upper == 1.0) and bounds.achieved_accuracy == 1.0
    with pytest.warns(CertificationWarning, match="PDP is certified only from below"):
        found = accountant.epsilon(1e-2, kind="PDP")
    assert found.lower == one.epsilon(1e-2, kind="PDP").lower and found.upper == math.inf


def test_mixed_truncations_are_refused():
    cut = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.1, cut=5.0)
    clamped = SubsampledTruncatedGaussian(
        sigma=1.0, sampling_rate=0.1, cut=5.0, truncation="clamped"
    )
    with pytest.raises(InvalidInputError, match="one truncation"):
        DPSGDAccountant(dimension=3).compose(cut).compose(clamped)


@pytest.mark.slow
def test_history_and_state_round_trip():
    step = SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.004, cut=8.0)
    accountant = DPSGDAccountant(dimension=1000).compose(step, 10)
    assert accountant.history.startswith("10 x ")
    rebuilt = DPSGDAccountant.from_state_dict(accountant.state_dict())
    assert rebuilt.delta(1.0).upper == accountant.delta(1.0).upper


@pytest.mark.slow
def test_composing_step_after_step_builds_each_release_once(monkeypatch):
    """A heterogeneous schedule composed one setting at a time (Opacus steps, sweeps of
    thousands of settings) makes each step's releases once, at the first query, not again
    for every later step (which made 1,000 settings take minutes)."""
    from accountant.buckets import engine

    made = []
    original = engine.PrivacyBuckets.source_of

    def counting(mechanism):
        made.append(mechanism)
        return original(mechanism)

    monkeypatch.setattr(engine.PrivacyBuckets, "source_of", staticmethod(counting))
    accountant = DPSGDAccountant(dimension=3, accuracy=1e-3)
    for k in range(6):
        step = SubsampledTruncatedGaussian(sigma=1.0 + k / 10, sampling_rate=0.01, cut=4.0)
        accountant = accountant.compose(step, 2)
    assert made == []  # nothing composed before a query
    bounds = accountant.delta(1.0)
    assert len(made) == 2 * 6  # each step cut and uncut, once
    assert 0.0 <= bounds.lower <= bounds.upper
    accountant.delta(2.0)
    assert len(made) == 2 * 6


@pytest.mark.slow
def test_a_bracket_set_by_the_escape_probability_says_so():
    """When the cut is reached often (tau large), the coupled upper bound is dominated by
    tau's term: the result warns, naming tau, instead of refining the uncut run for an
    accuracy the bracket cannot reach; the bounds still hold (the cut run's certified
    delta lies inside)."""
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.05, cut=3.0)
    accountant = DPSGDAccountant(dimension=20, accuracy=1e-3).compose(step, 4)
    with pytest.warns(CertificationWarning, match="tau=") as caught:
        bounds = accountant.delta(1.0)
    assert len([w for w in caught if "tau=" in str(w.message)]) == 1
    assert bounds.achieved_accuracy > 1e-3
    one = DPSGDAccountant(dimension=1, accuracy=1e-3).compose(step, 4).delta(1.0)
    assert bounds.lower <= one.upper and one.lower <= bounds.upper


def test_an_eps_bracket_widened_by_the_escape_probability_says_so():
    """The eps of many coordinates takes its upper end from the uncut run at the delta the
    coupling leaves it: when the cut's escape probability takes a visible share of delta, the
    bracket misses the accuracy, and the result says so, naming tau and the share (it said
    nothing: sigma 2, q 1e-3, 10^5 steps, d = 1000, delta 1e-12 gave rel 2.2e-4 silently);
    a cut far enough out leaves the bracket within the accuracy, and no warning."""
    step = SubsampledTruncatedGaussian(sigma=2.0, sampling_rate=0.001, cut=10.0)
    near = DPSGDAccountant(dimension=1000, accuracy=1e-4).compose(step, 100_000)
    with pytest.warns(CertificationWarning, match=r"tau=1\.52e-15, which alone takes 0\.4"):
        bounds = near.epsilon(1e-12)
    assert (bounds.upper - bounds.lower) / bounds.upper > 1e-4
    far_step = SubsampledTruncatedGaussian(sigma=2.0, sampling_rate=0.001, cut=12.0)
    far = DPSGDAccountant(dimension=1000, accuracy=1e-4).compose(far_step, 100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CertificationWarning)
        tight = far.epsilon(1e-12)
    assert (tight.upper - tight.lower) / tight.upper <= 1e-4
