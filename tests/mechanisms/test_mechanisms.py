"""Analytic mechanisms (SPEC section 3) against closed forms, quadrature and fine grids.

Oracles: ``scipy.integrate.quad`` of the defining integrals
``Gamma_lambda = ln ∫_{a,b>0} a^(1+lambda) b^(-lambda)`` and ``omega = ∫_{a>0=b} a``,
the grid discretisation through :class:`PairLogMoments`, finite differences, and (where
installed) mpmath at 50 digits for the exactness of slopes at large lambda.
"""

from __future__ import annotations

import itertools
import math
import warnings

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TruncatedGaussianMechanism,
    TruncatedLaplaceMechanism,
)
from accountant.moments.log_moments import LogMomentSource, PairLogMoments
from accountant.pairs.worst_case import WorstCasePair

DIRECTIONS = ("A/B", "B/A")

# A spread of shapes: overlap wide or narrow, s < r and s > r, bound/sigma up to 40.
TRUNCATED_GAUSSIANS = [(2.0, 6.0, 1.0), (1.0, 3.0, 0.5), (5.0, 2.0, 3.0), (1.0, 1.0, 1.5)]
TRUNCATED_LAPLACES = [(2.0, 6.0, 1.0), (1.0, 3.0, 0.5), (5.0, 2.0, 3.0), (0.5, 3.0, 2.0)]
ALL_MECHANISMS = [
    GaussianMechanism(2.0),
    GaussianMechanism(0.7, sensitivity=1.5),
    LaplaceMechanism(1.0),
    LaplaceMechanism(0.3, sensitivity=2.0),
    *(TruncatedGaussianMechanism(*p) for p in TRUNCATED_GAUSSIANS),
    TruncatedGaussianMechanism(1.0, 40.0, 1.0),
    TruncatedGaussianMechanism(10.0, 1.0, 1.0),
    TruncatedGaussianMechanism(1.0, 1.0, 1.999),
    *(TruncatedLaplaceMechanism(*p) for p in TRUNCATED_LAPLACES),
    TruncatedLaplaceMechanism(1.0, 40.0, 1.0),
    TruncatedLaplaceMechanism(1.0, 1.0, 1.999),
]
MECHANISM_IDS = [m.description for m in ALL_MECHANISMS]


def quad_log_moment(log_a, log_b, lo, hi, lam, points=()):
    """``ln ∫_lo^hi a^(1+lam) b^(-lam) dx`` by adaptive quadrature, split at ``points``."""
    edges = [lo, *sorted(p for p in points if lo < p < hi), hi]
    total = 0.0
    for left, right in itertools.pairwise(edges):
        value, _ = integrate.quad(
            lambda x: math.exp((1 + lam) * log_a(x) - lam * log_b(x)),
            left,
            right,
            epsabs=0.0,
            epsrel=1e-13,
            limit=200,
        )
        total += value
    return math.log(total)


def truncated_gaussian_log_densities(sigma, bound, s):
    log_z = math.log(stats.norm.cdf(bound / sigma) - stats.norm.cdf(-bound / sigma))
    return (
        lambda x: stats.norm.logpdf(x, 0.0, sigma) - log_z,
        lambda x: stats.norm.logpdf(x, s, sigma) - log_z,
        log_z,
    )


def truncated_laplace_log_densities(scale, bound, s):
    log_norm = math.log(2 * scale * (1 - math.exp(-bound / scale)))
    return (
        lambda x: -abs(x) / scale - log_norm,
        lambda x: -abs(x - s) / scale - log_norm,
        log_norm,
    )


# ---------------------------------------------------------------- closed forms and quadrature


@given(
    sigma=st.floats(0.05, 1e3),
    s=st.floats(0.01, 10.0),
    lam=st.floats(0.0, 1e4),
    direction=st.sampled_from(DIRECTIONS),
)
def test_gaussian_is_its_closed_form(sigma, s, lam, direction):
    mechanism = GaussianMechanism(sigma, sensitivity=s)
    rate = s**2 / (2 * sigma**2)
    assert mechanism.log_moment(lam, direction) == pytest.approx(lam * (lam + 1) * rate, rel=1e-14)
    assert mechanism.log_moment_slope(lam, direction) == pytest.approx(
        (2 * lam + 1) * rate, rel=1e-14
    )
    assert mechanism.distinguishing_mass(direction) == 0.0
    assert mechanism.max_finite_loss(direction) == math.inf


@pytest.mark.parametrize(("scale", "s"), [(1.0, 1.0), (0.5, 1.0), (3.0, 0.2), (1.0, 4.0)])
@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0, 4.0, 12.0])
def test_laplace_matches_quadrature(scale, s, lam):
    mechanism = LaplaceMechanism(scale, sensitivity=s)
    log_norm = math.log(2 * scale)
    expected = quad_log_moment(
        lambda x: -abs(x) / scale - log_norm,
        lambda x: -abs(x - s) / scale - log_norm,
        -math.inf,
        math.inf,
        lam,
        points=(0.0, s),
    )
    assert mechanism.log_moment(lam, "A/B") == pytest.approx(expected, rel=1e-9, abs=1e-13)
    assert mechanism.max_finite_loss("B/A") == pytest.approx(s / scale, rel=1e-15)
    assert mechanism.distinguishing_mass("A/B") == 0.0


@pytest.mark.parametrize(("sigma", "bound", "s"), TRUNCATED_GAUSSIANS)
@pytest.mark.parametrize("lam", [0.0, 0.5, 2.0, 10.0])
def test_truncated_gaussian_matches_quadrature(sigma, bound, s, lam):
    mechanism = TruncatedGaussianMechanism(sigma, bound, sensitivity=s)
    log_a, log_b, _ = truncated_gaussian_log_densities(sigma, bound, s)
    expected = quad_log_moment(log_a, log_b, s - bound, bound, lam)
    for direction in DIRECTIONS:
        assert mechanism.log_moment(lam, direction) == pytest.approx(expected, rel=1e-8)
    omega, _ = integrate.quad(lambda x: math.exp(log_a(x)), -bound, s - bound, epsrel=1e-13)
    assert mechanism.distinguishing_mass("A/B") == pytest.approx(omega, rel=1e-8, abs=0.0)
    losses = [log_a(x) - log_b(x) for x in np.linspace(s - bound, bound, 101)]
    assert mechanism.max_finite_loss("A/B") == pytest.approx(max(losses), rel=1e-12)


@pytest.mark.parametrize(("scale", "bound", "s"), TRUNCATED_LAPLACES)
@pytest.mark.parametrize("lam", [0.0, 0.5, 2.0, 10.0])
def test_truncated_laplace_matches_quadrature(scale, bound, s, lam):
    mechanism = TruncatedLaplaceMechanism(scale, bound, sensitivity=s)
    log_a, log_b, _ = truncated_laplace_log_densities(scale, bound, s)
    expected = quad_log_moment(log_a, log_b, s - bound, bound, lam, points=(0.0, s))
    for direction in DIRECTIONS:
        assert mechanism.log_moment(lam, direction) == pytest.approx(expected, rel=1e-8)
    omega = quad_log_moment(log_a, log_a, -bound, s - bound, 0.0, points=(0.0,))
    assert mechanism.distinguishing_mass("B/A") == pytest.approx(math.exp(omega), rel=1e-8, abs=0.0)
    losses = [log_a(x) - log_b(x) for x in np.linspace(s - bound, bound, 101)]
    assert mechanism.max_finite_loss("A/B") == pytest.approx(max(losses), rel=1e-12)


# ---------------------------------------------------------------- against the grid


def relative_errors(mechanism, pair_factory, steps, lams):
    """Largest relative error of Gamma over ``lams`` and of omega, per grid step."""
    errors = []
    for step in steps:
        grid = PairLogMoments(pair_factory(step))
        gamma_error = max(
            abs(grid.log_moment(lam, "A/B") / mechanism.log_moment(lam, "A/B") - 1) for lam in lams
        )
        omega = mechanism.distinguishing_mass("A/B")
        omega_error = abs(grid.distinguishing_mass("A/B") / omega - 1) if omega else 0.0
        errors.append((gamma_error, omega_error))
    return errors


@pytest.mark.parametrize(
    ("mechanism", "tolerance"),
    [
        (TruncatedGaussianMechanism(2.0, 6.0, 1.0), 1e-3),
        (TruncatedLaplaceMechanism(1.0, 4.0, 1.0), 1e-3),
        # s > r: the overlap [0.5, 1.5] is narrow, so its end points weigh more.
        (TruncatedLaplaceMechanism(1.0, 1.5, 2.0), 1e-2),
    ],
    ids=lambda m: getattr(m, "description", str(m)),
)
def test_fine_grid_converges_to_the_analytic_values(mechanism, tolerance):
    # pmf_i ≈ step * density(x_i), so sum A^(1+lam) B^(-lam) ≈ ∫ a^(1+lam) b^(-lam):
    # no ln(step) offset; Riemann sums with point masses at the ends err by O(step).
    (coarse_gamma, coarse_omega), (fine_gamma, fine_omega) = relative_errors(
        mechanism, mechanism.pair, steps=(0.01, 0.001), lams=(0.5, 2.0, 8.0)
    )
    assert fine_gamma < tolerance and fine_omega < tolerance
    assert fine_gamma < coarse_gamma / 5 and fine_omega < coarse_omega / 5


def test_untruncated_pairs_match_the_analytic_values():
    gaussian, laplace = GaussianMechanism(2.0), LaplaceMechanism(1.0)
    for mechanism, step, tolerance in ((gaussian, 0.01, 1e-9), (laplace, 0.01, 1e-4)):
        pair = mechanism.pair(step)
        assert isinstance(pair, WorstCasePair)
        grid = PairLogMoments(pair)
        for lam in (0.5, 3.0):
            assert grid.log_moment(lam, "A/B") == pytest.approx(
                mechanism.log_moment(lam, "A/B"), rel=tolerance
            )
    # The Gaussian grid covers 40 sigma on each side, the Laplace grid 60 scales.
    assert gaussian.pair(0.01).size == 2 * 8000 + 1 + 100
    assert laplace.pair(0.25).size == 2 * 240 + 1 + 4


# ---------------------------------------------------------------- slopes


def five_point_derivative(f, x, h):
    return (-f(x + 2 * h) + 8 * f(x + h) - 8 * f(x - h) + f(x - 2 * h)) / (12 * h)


@pytest.mark.parametrize("mechanism", ALL_MECHANISMS, ids=MECHANISM_IDS)
@pytest.mark.parametrize("lam", [0.05, 0.7, 3.0, 40.0, 2000.0])
def test_slope_matches_finite_differences(mechanism, lam):
    h = 1e-3 * lam
    numeric = five_point_derivative(lambda x: mechanism.log_moment(x, "A/B"), lam, h)
    slope = mechanism.log_moment_slope(lam, "B/A")
    assert slope == pytest.approx(numeric, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize(
    ("sigma", "bound", "s"),
    [
        (2.0, 6.0, 1.0),
        (1.0, 30.0, 1.0),  # bound/sigma large
        (1.0, 1.0, 1.999),  # narrow overlap
        (10.0, 1.0, 1.0),  # sigma > bound: close to uniform
        (97.2, 0.00238, 0.000786),  # sigma >> bound
    ],
)
def test_truncated_gaussian_is_exact_to_high_precision(sigma, bound, s):
    import mpmath as mp

    with mp.workdps(50):
        big_sigma, big_bound, big_s = mp.mpf(sigma), mp.mpf(bound), mp.mpf(s)
        log_z = mp.log(mp.ncdf(big_bound / big_sigma) - mp.ncdf(-big_bound / big_sigma))

        def gamma(lam):
            u1 = (big_bound + lam * big_s) / big_sigma
            u2 = (big_s - big_bound + lam * big_s) / big_sigma
            quadratic = lam * (lam + 1) * big_s**2 / (2 * big_sigma**2)
            return quadratic + mp.log(mp.ncdf(-u2) - mp.ncdf(-u1)) - log_z

        mechanism = TruncatedGaussianMechanism(sigma, bound, s)
        omega = mp.ncdf((big_s - big_bound) / big_sigma) - mp.ncdf(-big_bound / big_sigma)
        assert mechanism.distinguishing_mass("A/B") == pytest.approx(
            float(omega / mp.exp(log_z)), rel=1e-13, abs=0.0
        )
        for lam in (0.0, 0.3, 10.0, 1e6, 1e9):
            exact = float(gamma(mp.mpf(lam)))
            assert mechanism.log_moment(lam, "A/B") == pytest.approx(exact, rel=1e-13, abs=1e-15)
            slope = float(mp.diff(gamma, mp.mpf(lam)))
            assert mechanism.log_moment_slope(lam, "A/B") == pytest.approx(
                slope, rel=1e-11, abs=0.0
            )


# ---------------------------------------------------------------- structural properties


@pytest.mark.parametrize("mechanism", ALL_MECHANISMS, ids=MECHANISM_IDS)
def test_is_a_log_moment_source_with_equal_directions(mechanism):
    assert isinstance(mechanism, LogMomentSource)
    assert isinstance(mechanism.description, str) and "sensitivity" in mechanism.description
    for lam in (0.0, 1.5, 1e4):
        assert mechanism.log_moment(lam, "A/B") == mechanism.log_moment(lam, "B/A")
    assert mechanism.distinguishing_mass("A/B") == mechanism.distinguishing_mass("B/A")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        mechanism.sensitivity = 0.5


def test_description_reads_well():
    assert (
        TruncatedGaussianMechanism(sigma=100.0, bound=500.0).description
        == "truncated Gaussian (sigma=100, bound=500), sensitivity 1"
    )


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, len(ALL_MECHANISMS) - 1),
    lam1=st.floats(0.0, 200.0),
    lam2=st.floats(0.0, 200.0),
)
def test_convex_in_lambda_with_increasing_bounded_slope(index, lam1, lam2):
    mechanism = ALL_MECHANISMS[index]
    gamma = lambda x: mechanism.log_moment(x, "A/B")  # noqa: E731
    middle = gamma((lam1 + lam2) / 2)
    assert middle <= (gamma(lam1) + gamma(lam2)) / 2 + 1e-12 * (1 + abs(middle))
    low, high = sorted((lam1, lam2))
    slope_low = mechanism.log_moment_slope(low, "A/B")
    slope_high = mechanism.log_moment_slope(high, "A/B")
    assert slope_low <= slope_high + 1e-12 * (1 + abs(slope_high))
    assert slope_high <= mechanism.max_finite_loss("A/B")


@settings(max_examples=150, deadline=None)
@given(
    log_noise=st.floats(-3.0, 3.0),
    log_bound=st.floats(-3.0, 3.0),
    overlap=st.floats(0.001, 0.9999),
    gaussian=st.booleans(),
)
def test_any_parameters_give_finite_consistent_values(log_noise, log_bound, overlap, gaussian):
    """Sigma or scale and bound from 1e-3 to 1e3, sensitivity anywhere in (0, 2 bound)."""
    bound = 10.0**log_bound
    kind = TruncatedGaussianMechanism if gaussian else TruncatedLaplaceMechanism
    mechanism = kind(10.0**log_noise, bound, sensitivity=2 * bound * overlap)
    omega, max_loss = mechanism.distinguishing_mass("A/B"), mechanism.max_finite_loss("A/B")
    assert 0.0 <= omega <= 1.0 and 0.0 < max_loss < math.inf
    assert math.exp(mechanism.log_moment(0.0, "A/B")) == pytest.approx(1 - omega, abs=1e-13)
    previous = -max_loss
    for lam in (0.0, 0.01, 1.0, 10.0, 1e3, 1e6, 1e9, 1e12):
        gamma, slope = mechanism.log_moment(lam, "A/B"), mechanism.log_moment_slope(lam, "A/B")
        assert math.isfinite(gamma) and gamma <= lam * max_loss * (1 + 1e-12) + 1e-15
        assert previous - 1e-9 * abs(previous) <= slope <= max_loss
        previous = slope


@pytest.mark.parametrize("mechanism", ALL_MECHANISMS, ids=MECHANISM_IDS)
def test_gamma_zero_is_log_of_the_finite_mass(mechanism):
    omega = mechanism.distinguishing_mass("A/B")
    assert 0.0 <= omega < 1.0
    # Gamma_0 = ln(1 - omega); compared as masses, since ln(1 - omega) from a float omega near
    # 1 (narrow overlaps) is less accurate than Gamma_0 itself.
    assert math.exp(mechanism.log_moment(0.0, "A/B")) == pytest.approx(1.0 - omega, abs=1e-15)


@pytest.mark.parametrize("mechanism", ALL_MECHANISMS, ids=MECHANISM_IDS)
def test_large_lambda_is_finite_and_approaches_the_maximal_loss(mechanism):
    max_loss = mechanism.max_finite_loss("A/B")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for lam in (1e3, 1e6, 1e9, 1e12):
            gamma = mechanism.log_moment(lam, "A/B")
            slope = mechanism.log_moment_slope(lam, "A/B")
            assert math.isfinite(gamma) and math.isfinite(slope)
            # Gamma <= lambda sup L + ln(1 - omega), and Gamma / lambda -> sup L.
            if math.isfinite(max_loss):
                assert gamma <= lam * max_loss + 1e-12 * lam * max_loss
                assert slope <= max_loss
        if math.isfinite(max_loss):
            assert gamma / 1e12 == pytest.approx(max_loss, rel=1e-6)
            assert slope == pytest.approx(max_loss, rel=1e-6)


def test_stable_for_a_large_bound_to_sigma_ratio():
    # omega = [Phi(-29) - Phi(-30)] / Z ~ 1e-185: computed in log space, not as 1 - 1.
    expected = (stats.norm.cdf(-29.0) - stats.norm.cdf(-30.0)) / (1 - 2 * stats.norm.cdf(-30.0))
    assert TruncatedGaussianMechanism(1.0, 30.0).distinguishing_mass("A/B") == pytest.approx(
        expected, rel=1e-10, abs=0.0
    )
    mechanism = TruncatedGaussianMechanism(sigma=1.0, bound=40.0)
    assert 0.0 <= mechanism.distinguishing_mass("A/B") < 1e-300
    assert 39.5 <= mechanism.max_finite_loss("A/B") <= 39.5 * (1 + 1e-14)  # rounded up
    for lam in (1.0, 30.0, 38.0, 45.0, 1e6):
        gamma = mechanism.log_moment(lam, "A/B")
        assert math.isfinite(gamma)
        assert gamma <= lam * (lam + 1) / 2 + 1e-9  # truncation can only lower the moment
    # Far past lambda = 38.5 the truncation dominates: with u2 = (s - r + lambda s)/sigma,
    # Gamma = lambda sup L - (s-r)^2/(2 sigma^2) - ln(u2 sqrt(2 pi)) + O(u2^-2).
    u2 = 1.0 - 40.0 + 1e6
    expected = 39.5e6 - 39.0**2 / 2 - math.log(u2 * math.sqrt(2 * math.pi))
    assert mechanism.log_moment(1e6, "A/B") == pytest.approx(expected, rel=1e-15)


def test_masses_near_zero_and_near_one_keep_their_relative_accuracy():
    # omega ~ 2e-8: Gamma_0 = ln(1 - omega) ≈ -omega must be accurate relative to omega.
    mechanism = TruncatedGaussianMechanism(1.0, 6.0, 0.5)
    omega = mechanism.distinguishing_mass("A/B")
    expected = (stats.norm.sf(5.5) - stats.norm.sf(6.0)) / (1 - 2 * stats.norm.sf(6.0))
    assert omega == pytest.approx(expected, rel=1e-12, abs=0.0)
    assert mechanism.log_moment(0.0, "A/B") == pytest.approx(math.log1p(-omega), rel=1e-12, abs=0.0)
    # omega = 1 - 2.4e-6 (overlap [9.9, 10]): the small finite mass 1 - omega stays exact,
    # and omega is its complement (compared without forming 1 - omega in the test).
    mechanism = TruncatedLaplaceMechanism(1.0, 10.0, 19.9)
    finite = math.exp(-9.9) * -math.expm1(-0.1) / (2 * -math.expm1(-10.0))
    assert math.exp(mechanism.log_moment(0.0, "A/B")) == pytest.approx(finite, rel=1e-13, abs=0.0)
    assert mechanism.distinguishing_mass("A/B") == pytest.approx(1.0 - finite, abs=1.2e-16)
    assert TruncatedLaplaceMechanism(1.0, 100.0, 150.0).distinguishing_mass("A/B") <= 1.0


def test_numerical_kernels_against_high_precision():
    import mpmath as mp

    from accountant.numerics.gaussian import exp_mean_offset, mills_complement

    with mp.workdps(60):
        for z in (-30.0, -2.0, -0.49, -0.2, -0.03, 1e-7, 0.06, 0.3, 0.499, 0.7, 5.0):
            exact = 1 / (1 - mp.exp(-mp.mpf(z))) - 1 / mp.mpf(z) - mp.mpf(1) / 2
            assert exp_mean_offset(z) == pytest.approx(float(exact), rel=1e-13, abs=0.0)
        for u in (0.0, 1.0, 3.9, 4.0, 5.0, 8.0, 30.0, 1e3, 1e8):
            big = mp.mpf(u)
            exact = 1 - big * mp.ncdf(-big) / mp.npdf(big)
            assert mills_complement(u) == pytest.approx(float(exact), rel=1e-13, abs=0.0)


@pytest.mark.parametrize("lam", [0.0, 0.5, 3.0, 20.0])
def test_huge_bound_approaches_the_untruncated_mechanisms(lam):
    gaussian, truncated = GaussianMechanism(1.5), TruncatedGaussianMechanism(1.5, 150.0)
    assert truncated.log_moment(lam, "A/B") == pytest.approx(
        gaussian.log_moment(lam, "A/B"), rel=1e-12, abs=1e-15
    )
    assert truncated.log_moment_slope(lam, "A/B") == pytest.approx(
        gaussian.log_moment_slope(lam, "A/B"), rel=1e-12
    )
    assert truncated.distinguishing_mass("A/B") < 1e-300
    laplace, truncated_laplace = LaplaceMechanism(0.8), TruncatedLaplaceMechanism(0.8, 80.0)
    assert truncated_laplace.log_moment(lam, "A/B") == pytest.approx(
        laplace.log_moment(lam, "A/B"), rel=1e-12, abs=1e-15
    )
    assert truncated_laplace.log_moment_slope(lam, "A/B") == pytest.approx(
        laplace.log_moment_slope(lam, "A/B"), rel=1e-12
    )
