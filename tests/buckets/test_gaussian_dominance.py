"""The dominating Gaussian pair (accountant.buckets.gaussian_dominance): its closed form
against 50-digit arithmetic, the domination against exact integrals and against the
engine's own certified lower bounds, and its use by PrivacyBuckets (issue 26)."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accountant import PrivacyBuckets, SubsampledTruncatedGaussian
from accountant.buckets import walks
from accountant.buckets.gaussian_dominance import (
    ComposedGaussian,
    composed_gaussian,
    gaussian_delta_bounds,
    gaussian_epsilon_bounds,
)
from accountant.composition import Component
from accountant.errors import CertificationWarning
from accountant.mechanisms import GaussianMechanism

mpmath.mp.dps = 50


def _exact_delta(mu: float, eps: float) -> mpmath.mpf:
    """``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` at 50 digits."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def _exact_epsilon(mu: float, delta: float) -> mpmath.mpf:
    """The eps where the 50-digit delta crosses ``delta``, by 200 bisection steps."""
    low, high = mpmath.mpf(0), mpmath.mpf(4 * mu * mu + 60 * mu + 60)
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if _exact_delta(mu, middle) > delta else (low, middle)
    return (low + high) / 2


@given(
    st.floats(-3.0, 3.0).map(lambda x: 10.0**x),
    st.floats(0.0, 1.0),
)
def test_closed_form_brackets_fifty_digits(mu, share):
    eps = share * (mu * mu + 40.0 * mu)
    lower, upper = gaussian_delta_bounds(mu, eps)
    truth = _exact_delta(mu, eps)
    assert lower <= truth <= upper
    # relative to the larger term: Phi(a) - e^eps Phi(b) cancels where eps/mu is large
    assert upper - lower <= 1e-9 * float(mpmath.ncdf(mu / 2 - eps / mu)) + 1e-300


@pytest.mark.parametrize(("mu", "delta"), [(5.0, 1e-6), (0.1, 1e-5), (30.0, 1e-18), (1e3, 1e-10)])
def test_closed_form_epsilon_brackets_fifty_digits(mu, delta):
    pair = ComposedGaussian(mu, mu, exact=True)
    lower, upper = gaussian_epsilon_bounds(pair, delta)
    truth = _exact_epsilon(mu, delta)
    assert lower <= truth <= upper
    assert upper - lower <= 1e-10 * upper
    assert gaussian_epsilon_bounds(ComposedGaussian(mu, mu, exact=False), delta) == (0.0, upper)


def _subsampled_delta(sigma: float, q: float, eps: float, direction: str) -> mpmath.mpf:
    """Exact delta of one Poisson-subsampled Gaussian, ``P = (1-q) N(0, s^2) + q N(1, s^2)``
    against ``Q = N(0, s^2)`` (A/B) or reversed (B/A), at 50 digits: the loss is monotone
    in the output ``x``, so ``int max(0, num - e^eps den)`` is a difference of normal tails
    beyond the ``x`` where ``P/Q = e^(+-eps)``."""
    s, q, eps = mpmath.mpf(sigma), mpmath.mpf(q), mpmath.mpf(eps)
    ratio = mpmath.exp(eps) if direction == "A/B" else mpmath.exp(-eps)
    inner = (ratio - 1 + q) / q  # P/Q = 1 - q + q e^((2x - 1) / (2 s^2)) = ratio there
    if direction == "A/B":  # P > e^eps Q above the crossing
        x = s * s * mpmath.log(inner) + mpmath.mpf(1) / 2
        tail = lambda m: 1 - mpmath.ncdf((x - m) / s)  # noqa: E731
        return (1 - q) * tail(0) + q * tail(1) - mpmath.exp(eps) * tail(0)
    # inner <= 0: Q > e^eps P everywhere (e^-eps below 1 - q)
    x = mpmath.inf if inner <= 0 else s * s * mpmath.log(inner) + mpmath.mpf(1) / 2
    head = lambda m: mpmath.ncdf((x - m) / s)  # noqa: E731
    return head(0) - mpmath.exp(eps) * ((1 - q) * head(0) + q * head(1))


@pytest.mark.parametrize(
    ("sigma", "q", "eps"),
    [(0.5, 0.3, 0.5), (1.0, 0.01, 0.01), (1.0, 0.9, 1.0), (2.0, 0.999, 0.2), (0.8, 1.0, 2.0)],
)
def test_one_subsampled_gaussian_lies_below_its_dominating_pair(sigma, q, eps):
    mechanism = SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=math.inf)
    declared = mechanism.gaussian_domination
    assert declared.exact == (q == 1.0)
    upper = gaussian_delta_bounds(declared.mu, eps)[1]
    for direction in ("A/B", "B/A"):
        exact = _subsampled_delta(sigma, q, eps, direction)
        assert exact <= upper * (1 + 1e-12)
        if q == 1.0:
            assert abs(exact - upper) <= 1e-9 * upper


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "eps"),
    [(1.0, 0.5, 20, 2.0), (0.7, 0.9, 30, 4.0), (2.0, 0.99, 200, 3.0), (1.5, 0.2, 300, 1.0)],
)
def test_the_engines_own_lower_bound_never_exceeds_the_dominating_pair(
    monkeypatch, sigma, q, steps, eps
):
    """Without the closed form (patched out), the engine's certified lower bound on delta
    of the subsampled composition is an independent oracle: domination says it cannot
    exceed the closed form of ``mu = sqrt(steps) / sigma``."""
    mechanism = SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=math.inf)
    accountant = PrivacyBuckets(accuracy=1e-6).compose(mechanism, steps)
    pair = composed_gaussian(accountant.components)
    monkeypatch.setattr(walks, "composed_gaussian", lambda components: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        engine = accountant.delta(eps)
    assert pair is not None and abs(pair.mu_high - math.sqrt(steps) / sigma) < 1e-12
    assert engine.lower <= pair.delta_bounds(eps)[1]


def test_a_rate_near_one_is_as_tight_as_the_closed_form():
    """q = 1 - 1e-12 (PERFORMANCE.md): the upper end is the closed form of mu = 5, at most
    dp_accounting's pessimistic estimate would be, and the lower end the engine's."""
    mechanism = SubsampledTruncatedGaussian(sigma=2.0, sampling_rate=1.0 - 1e-12, cut=math.inf)
    bounds = PrivacyBuckets().compose(mechanism, 100).epsilon(1e-6)
    truth_q1 = _exact_epsilon(5.0, 1e-6)
    assert bounds.lower <= bounds.upper
    assert truth_q1 <= bounds.upper <= truth_q1 * (1 + 1e-12)
    assert (bounds.upper - bounds.lower) / bounds.upper <= 1e-4
    assert bounds.bucket_width > 0.0  # not exact: the engine gave the lower end


def test_gaussian_compositions_are_answered_in_closed_form():
    """The Gaussian mechanism is its own pair: eps and delta from the closed form alone,
    even where the buckets could not resolve them (eps(1e-18) after 10^6 releases)."""
    accountant = PrivacyBuckets().compose(GaussianMechanism(300.0), 10**6)
    mu = 1000.0 / 300.0
    eps = accountant.epsilon(1e-18)
    assert eps.bucket_width == 0.0
    assert eps.lower <= _exact_epsilon(mu, 1e-18) <= eps.upper
    assert eps.upper - eps.lower <= 1e-10 * eps.upper
    delta = accountant.delta(np.array([1.0, 10.0]))
    assert delta.bucket_width == 0.0
    for e, lo, hi in zip([1.0, 10.0], delta.lower, delta.upper, strict=True):
        assert lo <= _exact_delta(mu, e) <= hi


def test_only_whole_gaussian_compositions_are_dominated():
    uncut = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.1, cut=math.inf)
    cut = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.1, cut=8.0)
    assert cut.gaussian_domination is None
    assert composed_gaussian([]) is None
    assert composed_gaussian([Component(uncut, None, 3), Component(cut, None, 1)]) is None
    gaussian = GaussianMechanism(2.0)
    both = composed_gaussian([Component(uncut, None, 3), Component(gaussian, None, 4)])
    assert both is not None and not both.exact
    assert both.mu_low <= math.sqrt(3 + 4 / 4) <= both.mu_high


def test_pdp_queries_do_not_use_the_closed_form():
    """Domination by post-processing holds for ADP, not for P[L > eps]: PDP queries
    compose buckets even for the Gaussian mechanism."""
    accountant = PrivacyBuckets().compose(GaussianMechanism(1.0), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        assert accountant.delta_pdp(1.0).bucket_width > 0.0
        assert accountant.epsilon(1e-3, kind="PDP").bucket_width > 0.0
