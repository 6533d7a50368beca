"""CertifiedAccountant: dp_accounting's interface, answers certified by PrivacyBuckets that
bracket dp_accounting's own PLDAccountant, and the same bounds as composing directly."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("dp_accounting")  # the [dp-accounting] extra; CI installs it

from dp_accounting import dp_event
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation, UnsupportedEventError

from accountant import (
    InfeasibleTargetError,
    InvalidInputError,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
    WorstCasePair,
    mechanisms,
    noise,
)
from accountant.interop import CertifiedAccountant, TruncatedNoiseDpEvent

EPSILONS = [0.5, 1.0, 2.0]
#: dp_accounting's own discretisation error (h = 1e-4 per release) and our bracket
#: (accuracy 1e-3) are both far inside this.
SLACK = 1e-2


@pytest.fixture(scope="module")
def grid_noise():
    return noise.truncated_gaussian(2.0, 10.0, 0.05)


def _brackets_dp_accounting(event, count):
    ours = CertifiedAccountant(accuracy=1e-3).compose(event, count)
    theirs = PLDAccountant().compose(event, count)
    for eps in EPSILONS:
        bounds = ours.delta_bounds(eps)
        reference = theirs.get_delta(eps)
        assert bounds.lower <= reference * (1 + SLACK)
        assert reference <= bounds.upper * (1 + SLACK)
        assert ours.get_delta(eps) == bounds.upper
    reference = theirs.get_epsilon(1e-5)
    eps_bounds = ours.epsilon_bounds(1e-5)
    assert eps_bounds.lower <= reference * (1 + SLACK) and reference <= eps_bounds.upper * (
        1 + SLACK
    )
    assert ours.get_epsilon(1e-5) == eps_bounds.upper
    return ours, theirs


def test_gaussian_100_times_brackets_dp_accountings_answer():
    _brackets_dp_accounting(dp_event.GaussianDpEvent(10.0), 100)


def test_subsampled_gaussian_1000_times_brackets_dp_accountings_answer():
    event = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    ours, _ = _brackets_dp_accounting(dp_event.SelfComposedDpEvent(event, 1000), 1)
    (component,) = ours.buckets.components
    assert component.times == 1000
    assert component.mechanism == SubsampledTruncatedGaussian(
        sigma=1.0, sampling_rate=0.01, cut=math.inf
    )


def test_laplace_brackets_dp_accountings_answer():
    _brackets_dp_accounting(dp_event.LaplaceDpEvent(2.0), 10)


def test_mixed_composition_is_composing_the_mechanisms_directly(grid_noise):
    truncated = TruncatedNoiseDpEvent(grid_noise, sensitivity=1.0)
    sampled = dp_event.PoissonSampledDpEvent(0.1, truncated)
    event = dp_event.ComposedDpEvent(
        [dp_event.GaussianDpEvent(4.0), dp_event.SelfComposedDpEvent(truncated, 5), sampled]
    )
    ours = CertifiedAccountant(accuracy=1e-3).compose(event, 2)
    direct = (
        PrivacyBuckets(accuracy=1e-3)
        .compose(mechanisms.GaussianMechanism(4.0), 2)
        .compose(WorstCasePair.additive(grid_noise, 1.0), 10)
        .compose(WorstCasePair.subsampled(grid_noise, 0.1, clip=1.0), 2)
    )
    eps = np.array(EPSILONS)
    got, expected = ours.delta_bounds(eps), direct.delta(eps)
    np.testing.assert_array_equal(got.lower, expected.lower)
    np.testing.assert_array_equal(got.upper, expected.upper)
    assert got.releases == 14
    assert (got.lower > 1e-6).all()
    assert ours.ledger == dp_event.SelfComposedDpEvent(event, 2)


def test_the_same_event_composed_again_grows_one_component():
    accountant = CertifiedAccountant().compose(dp_event.GaussianDpEvent(3.0), 2)
    accountant.compose(dp_event.GaussianDpEvent(3.0), 3)
    (component,) = accountant.buckets.components
    assert component.times == 5


def test_no_op_non_private_and_zero_rates():
    accountant = CertifiedAccountant()
    accountant.compose(dp_event.NoOpDpEvent())
    accountant.compose(dp_event.PoissonSampledDpEvent(0.0, dp_event.GaussianDpEvent(1.0)))
    assert accountant.get_delta(0.0) == 0.0 and accountant.buckets.releases == 0
    accountant.compose(dp_event.GaussianDpEvent(5.0))
    finite = accountant.get_delta(1.0)
    assert 0.0 < finite < 1.0 and not accountant.non_private
    for event in (
        dp_event.NonPrivateDpEvent(),
        dp_event.GaussianDpEvent(0.0),
        dp_event.PoissonSampledDpEvent(0.5, dp_event.GaussianDpEvent(0.0)),
    ):
        other = CertifiedAccountant().compose(dp_event.GaussianDpEvent(5.0)).compose(event)
        assert other.non_private
        assert other.get_delta(1.0) == 1.0 and other.get_epsilon(1e-5) == math.inf
        bounds = other.delta_bounds(np.array([0.5, 1.0]))
        np.testing.assert_array_equal(bounds.upper, [1.0, 1.0])
        assert other.delta_bounds(1.0).lower <= finite


UNSUPPORTED = [
    dp_event.UnsupportedDpEvent(),
    dp_event.SampledWithoutReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)),
    dp_event.SampledWithReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)),
    dp_event.PoissonSampledDpEvent(0.1, dp_event.RandomizedResponseDpEvent(0.5, 4)),
    dp_event.RandomizedResponseDpEvent(0.5, 4),
    dp_event.ZCDpEvent(1.0, 0.0),
    dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(1.0), dp_event.UnsupportedDpEvent()]),
]


@pytest.mark.parametrize("event", UNSUPPORTED, ids=lambda e: type(e).__name__)
def test_unsupported_events_are_refused_without_changing_state(event):
    accountant = CertifiedAccountant()
    assert not accountant.supports(event)
    with pytest.raises(UnsupportedEventError):
        accountant.compose(event)
    assert accountant.buckets.releases == 0
    assert accountant.ledger == dp_event.NoOpDpEvent()


def test_supports_changes_nothing(grid_noise):
    accountant = CertifiedAccountant()
    event = dp_event.ComposedDpEvent(
        [
            dp_event.GaussianDpEvent(1.0),
            TruncatedNoiseDpEvent(grid_noise),
            dp_event.NonPrivateDpEvent(),
        ]
    )
    assert accountant.supports(event)
    assert accountant.buckets.releases == 0 and not accountant.non_private


def test_noise_that_is_not_symmetric_and_monotone_is_refused():
    lopsided = noise.from_array(np.array([0.1, 0.2, 0.3, 0.4]), start=0.0, step=1.0)
    event = TruncatedNoiseDpEvent(lopsided, sensitivity=1.0)
    accountant = CertifiedAccountant()
    assert not accountant.supports(event)
    with pytest.raises(UnsupportedEventError, match="additive_shift_pairs"):
        accountant.compose(event)


def test_a_target_below_the_distinguishing_mass_gives_inf(grid_noise):
    accountant = CertifiedAccountant().compose(TruncatedNoiseDpEvent(grid_noise), 3)
    omega = accountant.delta_bounds(40.0).upper
    assert omega > 0.0
    assert accountant.get_epsilon(omega / 10) == math.inf
    with pytest.raises(InfeasibleTargetError):
        accountant.epsilon_bounds(omega / 10)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: CertifiedAccountant(NeighboringRelation.REPLACE_SPECIAL), "neighboring_relation"),
        (lambda: CertifiedAccountant(accuracy=0.0), "accuracy"),
        (lambda: CertifiedAccountant().compose(dp_event.GaussianDpEvent(1.0), 0), "count"),
        (lambda: CertifiedAccountant().compose(dp_event.GaussianDpEvent(1.0), 1.5), "count"),
        (lambda: CertifiedAccountant().compose(dp_event.GaussianDpEvent(-1.0)), "noise_multiplier"),
        (
            lambda: CertifiedAccountant().compose(dp_event.LaplaceDpEvent(math.nan)),
            "noise_multiplier",
        ),
        (
            lambda: CertifiedAccountant().compose(
                dp_event.PoissonSampledDpEvent(1.5, dp_event.GaussianDpEvent(1.0))
            ),
            "sampling_probability",
        ),
        (
            lambda: CertifiedAccountant().compose(
                dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(1.0), -2)
            ),
            "SelfComposedDpEvent.count",
        ),
        (lambda: CertifiedAccountant().get_delta(-1.0), "target_epsilon"),
        (lambda: CertifiedAccountant().get_delta([0.5, 1.0]), "target_epsilon"),
        (lambda: CertifiedAccountant().get_epsilon(0.0), "target_delta"),
        (lambda: CertifiedAccountant().epsilon_bounds(1.5), "target_delta"),
        (lambda: CertifiedAccountant().delta_bounds("1"), "target_epsilon"),
    ],
)
def test_bad_arguments_are_refused_by_name(make, named):
    with pytest.raises(InvalidInputError, match=named):
        make()
