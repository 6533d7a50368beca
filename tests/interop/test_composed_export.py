"""The export of a composition as a dp_accounting PLD is pessimistic at every eps (negative
ones included), stays pessimistic when dp_accounting composes it further, and is a genuine
pair; checked against the closed form of composed Gaussian mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("dp_accounting")  # the [dp-accounting] extra; CI installs it

from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from scipy.stats import norm

from accountant import InvalidInputError, PrivacyBuckets, mechanisms
from accountant.interop import CertifiedAccountant, composed_to_dp_accounting_pld
from accountant.interop.composed_export import export_profile

H = 1e-4


def gaussian_delta(eps, mu: float):
    """The exact delta of the Gaussian mechanism with ``mu = sensitivity / sigma`` (both
    directions alike), for any real eps (Balle and Wang 2018)."""
    eps = np.asarray(eps, dtype=np.float64)
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def _pmf_masses(profile):
    """``(P-mass, Q-mass)`` of an exported profile."""
    p_mass = math.fsum([profile.infinity_mass, *profile.probs.tolist()])
    q_mass = math.fsum((profile.probs * np.exp(-profile.losses)).tolist())
    return p_mass, q_mass


def test_profile_from_exact_values_is_a_pair_above_them_everywhere():
    mu = 1.3
    eps = np.rint(np.linspace(0.0, 9.0, 181) / H) * H
    exact = gaussian_delta(eps, mu)
    profile = export_profile(eps, exact, exact, H)
    p_mass, q_mass = _pmf_masses(profile)
    assert p_mass >= 1.0 and p_mass == pytest.approx(1.0, abs=1e-12)
    assert q_mass <= 1.0 + 1e-12
    fine = np.linspace(-9.0, 12.0, 4001)  # between the grid points and below eps = 0
    exported = np.array([profile.delta(float(e)) for e in fine])
    assert (exported >= gaussian_delta(fine, mu)).all()
    # the chord of a 0.05 grid: within a few per cent inside the grid (beyond its end the
    # last bound is the infinity mass)
    relevant = (gaussian_delta(fine, mu) > 1e-12) & (fine <= 9.0)
    assert (exported[relevant] <= gaussian_delta(fine[relevant], mu) * 1.05).all()


def test_profile_of_non_convex_bounds_stays_above_them_where_it_must():
    """Certified bounds are not convex in e^eps to the last digit; the hull may pass below a
    point, never below the convex minorant (itself a bound on the convex true profile)."""
    rng = np.random.default_rng(2)
    mu = 0.8
    eps = np.rint(np.linspace(0.0, 8.0, 81) / H) * H
    exact = gaussian_delta(eps, mu)
    noisy = exact * (1.0 + rng.uniform(0.0, 1e-3, eps.size))
    profile = export_profile(eps, noisy, noisy, H)
    fine = np.linspace(-8.0, 10.0, 1801)
    exported = np.array([profile.delta(float(e)) for e in fine])
    assert (exported >= gaussian_delta(fine, mu)).all()


@pytest.fixture(scope="module")
def composed():
    """Four Gaussian releases (sigma 2): exactly the Gaussian mechanism with mu = 1."""
    return PrivacyBuckets(accuracy=1e-2).compose(mechanisms.GaussianMechanism(2.0), 4)


@pytest.fixture(scope="module")
def exported(composed):
    return composed_to_dp_accounting_pld(composed, value_discretization_interval=H)


def test_export_is_above_the_exact_delta_at_every_eps(exported):
    fine = np.linspace(-6.0, 10.0, 3201)
    for pmf in (exported._pmf_add, exported._pmf_remove):
        values = np.array([pmf.get_delta_for_epsilon(float(e)) for e in fine])
        truth = gaussian_delta(fine, 1.0)
        assert (values >= truth).all()
        relevant = truth > 1e-10
        assert (values[relevant] <= truth[relevant] * 1.05).all()


def test_dp_accounting_composes_the_export_pessimistically(exported):
    other = dp_pld.from_gaussian_mechanism(3.0, value_discretization_interval=H)
    both = exported.compose(other).compose(exported)
    mu = math.sqrt(2.0 * 1.0 + 1.0 / 9.0)
    for eps in (0.0, 0.5, 1.0, 2.0, 4.0):
        value = both.get_delta_for_epsilon(eps)
        assert value >= gaussian_delta(eps, mu)
        assert value <= gaussian_delta(eps, mu) * 1.1


def test_export_is_above_our_certified_lower_bound(composed, exported):
    eps = np.array([0.0, 0.3, 1.0, 2.0, 3.0])
    lower = composed.delta(eps).lower
    assert (np.asarray(exported.get_delta_for_epsilon(eps)) >= lower).all()


def test_certified_accountant_exports_what_it_composed():
    accountant = CertifiedAccountant(accuracy=1e-2).compose(dp_event.GaussianDpEvent(2.0), 4)
    pld = accountant.to_dp_accounting_pld(value_discretization_interval=H)
    assert pld.get_delta_for_epsilon(1.0) >= gaussian_delta(1.0, 1.0)
    accountant.compose(dp_event.NonPrivateDpEvent())
    assert accountant.to_dp_accounting_pld().get_delta_for_epsilon(50.0) == 1.0
    empty = composed_to_dp_accounting_pld(PrivacyBuckets())
    assert empty.get_delta_for_epsilon(0.0) == 0.0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"value_discretization_interval": 0.0}, "value_discretization_interval"),
        ({"accuracy": -1.0}, "accuracy"),
        ({"max_points": 4}, "max_points"),
        ({"max_points": 2.5}, "max_points"),
    ],
)
def test_bad_arguments_are_refused_by_name(composed, arguments, named):
    with pytest.raises(InvalidInputError, match=named):
        composed_to_dp_accounting_pld(composed, **arguments)


def test_not_an_accountant_is_refused():
    with pytest.raises(InvalidInputError, match="accountant must be"):
        composed_to_dp_accounting_pld(mechanisms.GaussianMechanism(1.0))
