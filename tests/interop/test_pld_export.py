"""The dp_accounting export of a pair is pessimistic (never below the exact delta), maps our
directions onto dp_accounting's add/remove pmfs, and agrees with our certified bounds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("dp_accounting")  # the [dp-accounting] extra; CI installs it

from dp_accounting.pld import privacy_loss_distribution as dp_pld

from accountant import (
    CertificationWarning,
    InvalidInputError,
    PrivacyBuckets,
    PrivacyLossDistribution,
    WorstCasePair,
    exact_delta,
    noise,
    privacy_loss_distribution,
)
from accountant.interop import GridLosses, round_up_to_grid, to_dp_accounting_pld

EPSILONS = np.array([0.0, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0])
#: Within this relative distance of our certified upper bound (dp_accounting's rounding of
#: h = 1e-4 per release, and our bracket, are far inside it where delta > 1e-8).
AGREEMENT = 0.01


@pytest.fixture(scope="module")
def additive() -> WorstCasePair:
    return WorstCasePair.additive(noise.truncated_gaussian(2.0, 10.0, 0.05), sensitivity=1.0)


@pytest.fixture(scope="module")
def subsampled() -> WorstCasePair:
    p = noise.truncated_gaussian(1.0, 8.0, 0.02)
    return WorstCasePair.subsampled(p, q=0.05, clip=1.0)


def _check_against_certified(pair: WorstCasePair, times: int, interval: float = 1e-4):
    exported = to_dp_accounting_pld(pair, value_discretization_interval=interval, times=times)
    theirs = np.asarray(exported.get_delta_for_epsilon(EPSILONS))
    with warnings.catch_warnings():  # a bracket wider than asked is still certified
        warnings.simplefilter("ignore", CertificationWarning)
        ours = PrivacyBuckets(accuracy=1e-3).compose(pair, times).delta(EPSILONS)
    assert (theirs >= ours.lower).all(), (theirs, ours.lower)
    relevant = ours.upper > 1e-8
    assert relevant.sum() >= 3
    relative = np.abs(theirs[relevant] / ours.upper[relevant] - 1.0)
    assert (relative <= AGREEMENT).all(), relative
    return theirs, ours


@pytest.mark.parametrize("name", ["additive", "subsampled"])
def test_one_release_is_pessimistic_and_close_to_exact(name, request):
    pair = request.getfixturevalue(name)
    theirs = np.asarray(to_dp_accounting_pld(pair).get_delta_for_epsilon(EPSILONS))
    exact = exact_delta(pair, EPSILONS)
    assert (theirs >= exact).all(), theirs - exact
    relevant = exact > 1e-8
    assert (theirs[relevant] <= exact[relevant] * (1 + AGREEMENT)).all()
    # far beyond every finite loss only the distinguishing mass is left, also pessimistic
    assert to_dp_accounting_pld(pair).get_delta_for_epsilon(50.0) >= exact_delta(pair, 50.0)


@pytest.mark.parametrize("name", ["additive", "subsampled"])
@pytest.mark.parametrize("times", [1, 10])
def test_composed_by_dp_accounting_lies_within_our_certified_bounds(name, times, request):
    _check_against_certified(request.getfixturevalue(name), times)


@pytest.mark.slow
def test_composed_100_times(additive, subsampled):
    _check_against_certified(additive, 100)
    # rounding every loss up by up to h, 100 times, costs about 1.6% at h = 1e-4 here
    _check_against_certified(subsampled, 100, interval=2e-5)


def test_directions_are_dp_accountings_add_and_remove(subsampled):
    """A = p (without the record), B the mixture (with it): "A/B" is dp_accounting's add
    pmf, "B/A" its remove pmf; dp_accounting's own subsampled Gaussian agrees."""
    exported = to_dp_accounting_pld(subsampled)
    reference = dp_pld.from_gaussian_mechanism(1.0, sampling_prob=0.05)
    eps = np.array([0.0, 0.3, 0.5, 1.0])
    for direction, pmf in (("A/B", "_pmf_add"), ("B/A", "_pmf_remove")):
        grid = round_up_to_grid(privacy_loss_distribution(subsampled, direction), 1e-4, direction)
        assert grid.dp_accounting_pmf == pmf.lstrip("_")
        ours = np.array([grid.delta(e) for e in eps])
        np.testing.assert_allclose(getattr(exported, pmf).get_delta_for_epsilon(eps), ours)
        assert (ours >= exact_delta(subsampled, eps, direction)).all()
        expected = getattr(reference, pmf).get_delta_for_epsilon(eps)
        # the grid noise cut at 8 sigma is close to the Gaussian: within 1% or 1e-12
        np.testing.assert_allclose(ours, expected, rtol=AGREEMENT, atol=1e-12)
    # the directions differ: add ends at loss -ln(1 - q) ~ 0.05, remove does not
    assert exported._pmf_add.get_delta_for_epsilon(0.3) < 1e-12
    assert exported._pmf_remove.get_delta_for_epsilon(0.3) > 1e-4


def test_every_loss_is_rounded_up():
    """The grid law dominates the exact one: for every threshold t, the grid mass above t
    is at least the exact mass above t (so every finite loss moved up, none down)."""
    rng = np.random.default_rng(7)
    h = 1e-3
    losses = np.sort(np.concatenate([rng.normal(0, 1, 400), np.arange(-20, 21) * h]))
    mass_a = rng.random(losses.size)
    mass_a /= mass_a.sum() * 1.5
    pld = PrivacyLossDistribution(
        losses, mass_a, mass_a * np.exp(-losses), np.log(mass_a), 0.2, 0.0
    )
    grid = round_up_to_grid(pld, h, "A/B")
    for threshold in np.concatenate([losses, grid.losses]):
        above = math.fsum(grid.probs[grid.losses > threshold])
        exact_above = math.fsum(mass_a[losses > threshold])
        assert above >= exact_above * (1 - 1e-14)  # (up to the float sums of each grid point)
    assert grid.probs.sum() == pytest.approx(mass_a.sum(), rel=1e-12)
    # losses already on the grid are not moved a step (only their rounding margin counts)
    assert grid.losses.max() <= losses.max() + 2 * h


def test_distinguishing_and_missing_mass_go_to_infinity():
    # a sums to 1 - 5e-10 (within the mass tolerance): that missing mass is distinguishing
    a = np.array([0.25, 0.5, 0.25 - 5e-10, 0.0])
    b = np.array([0.0, 0.25, 0.5, 0.25])
    pair = WorstCasePair(a, b)
    grid = round_up_to_grid(privacy_loss_distribution(pair, "A/B"), 1e-4, "A/B")
    assert grid.infinity_mass >= 0.25 + 5e-10
    assert grid.infinity_mass == pytest.approx(0.25 + 5e-10, rel=1e-12)
    exported = to_dp_accounting_pld(pair)
    for eps in (0.0, 0.5, 1.0, 10.0):
        assert exported.get_delta_for_epsilon(eps) >= exact_delta(pair, eps) + 5e-10
    # the reverse direction: b's outcome 3 is distinguishing, a's missing mass is not b's
    back = round_up_to_grid(privacy_loss_distribution(pair, "B/A"), 1e-4, "B/A")
    assert back.infinity_mass == pytest.approx(0.25, rel=1e-15) and back.infinity_mass >= 0.25


def test_self_compose_is_dp_accountings(additive):
    once = to_dp_accounting_pld(additive)
    assert to_dp_accounting_pld(additive, times=3).get_delta_for_epsilon(1.0) == (
        once.self_compose(3).get_delta_for_epsilon(1.0)
    )


def test_grid_losses_is_frozen(additive):
    grid = round_up_to_grid(privacy_loss_distribution(additive, "B/A"), 1e-4, "B/A")
    assert isinstance(grid, GridLosses)
    with pytest.raises(AttributeError):
        grid.infinity_mass = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        grid.probs[0] = 1.0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"value_discretization_interval": 0.0}, "value_discretization_interval"),
        ({"value_discretization_interval": -1e-4}, "value_discretization_interval"),
        ({"value_discretization_interval": math.nan}, "value_discretization_interval"),
        ({"value_discretization_interval": "1e-4"}, "value_discretization_interval"),
        ({"times": 0}, "times"),
        ({"times": 2.0}, "times"),
        ({"value_discretization_interval": 1e-300}, "value_discretization_interval"),
    ],
)
def test_bad_arguments_are_refused_by_name(additive, arguments, named):
    with pytest.raises(InvalidInputError, match=named):
        to_dp_accounting_pld(additive, **arguments)


def test_not_a_pair_is_refused():
    with pytest.raises(InvalidInputError, match="pair must be a WorstCasePair"):
        to_dp_accounting_pld(noise.truncated_gaussian(2.0, 10.0, 0.05))
    with pytest.raises(InvalidInputError, match="direction"):
        round_up_to_grid(privacy_loss_distribution(WorstCasePair([1.0], [1.0])), 1e-4, "max")
