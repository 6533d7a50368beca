"""Analytic mechanisms through PrivacyBuckets, end to end: closed forms and quadrature
lie inside the certified brackets."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import log_ndtr

from accountant.buckets import PrivacyBuckets
from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TruncatedGaussianMechanism,
    TruncatedLaplaceMechanism,
)
from accountant.moments.extended_ma import ExtendedMA
from tests.buckets.test_analytic import (
    LAPLACES,
    TRUNCATED,
    U,
    _bound,
    _is_gaussian,
)

# -- end to end through PrivacyBuckets ---------------------------------------------------------


def test_truncated_gaussian_against_grid_pair_and_extended_ma():
    mechanism = TruncatedGaussianMechanism(2.0, 6.0, 1.0)
    eps = np.array([0.1, 0.5, 1.0, 2.0])
    analytic = PrivacyBuckets(accuracy=1e-3).compose(mechanism, times=8).delta(eps)
    grid = PrivacyBuckets(accuracy=1e-3).compose(mechanism.pair(step=1e-3), times=8).delta(eps)
    assert np.all(analytic.lower <= analytic.upper)
    assert np.all((analytic.upper - analytic.lower) <= 2e-3 * analytic.upper)
    np.testing.assert_allclose(analytic.upper, grid.upper, rtol=1e-2)
    np.testing.assert_allclose(analytic.lower, grid.lower, rtol=1e-2)
    moments = ExtendedMA().compose(mechanism, times=8).delta(eps).upper
    assert np.all(moments >= analytic.lower)


def _gaussian_delta(sigma: float, releases: int, eps: float) -> float:
    """``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` in log space (no cancellation of
    the tiny tails: ``e^x (1 - e^(y - x))`` by ``expm1``)."""
    mu = math.sqrt(releases) / sigma
    first = float(log_ndtr(-eps / mu + mu / 2.0))
    second = eps + float(log_ndtr(-eps / mu - mu / 2.0))
    return math.exp(first) * -math.expm1(second - first)


#: (sigma, releases, [(eps, largest relative bracket accepted)]): about three times the
#: brackets observed (1.0: soundness only). The engine refines the width for the worst
#: eps only, and after FFT composition the round-off of the B-masses, scaled by e^eps,
#: leaves the largest eps with lower bound 0; both limit the brackets here, not the masses.
GAUSSIAN_CASES = [
    (1.0, 1, [(0.5, 2e-3), (1.0, 2e-3), (2.0, 2e-3), (4.0, 2e-3), (6.0, 2e-3), (8.0, 2e-3)]),
    (1.0, 2, [(1.0, 1e-3), (4.0, 1e-3), (8.0, 2e-2), (10.0, 0.15)]),
    (1.0, 10, [(1.0, 1e-3), (4.0, 1e-3), (8.0, 3e-3), (16.0, 0.2), (20.0, 0.25)]),
    (10.0, 1000, [(1.0, 1.2e-2), (4.0, 4e-2), (8.0, 0.1), (16.0, 0.8), (24.0, 1.0), (30.0, 1.0)]),
]


@pytest.mark.parametrize(("sigma", "releases", "cases"), GAUSSIAN_CASES)
def test_composed_gaussian_brackets_the_closed_form(sigma, releases, cases):
    """THE soundness test: n Gaussian releases have the PLD N(n mu^2/2, n mu^2), hence the
    closed form; deltas from ~0.8 down to ~4e-16 must lie in the certified bracket."""
    eps = np.array([e for e, _ in cases])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the accuracy warning at the largest eps
        bounds = PrivacyBuckets(accuracy=1e-3).compose(GaussianMechanism(sigma), releases)
        bounds = bounds.delta(eps)
    for (e, accepted), lower, upper in zip(cases, bounds.lower, bounds.upper, strict=True):
        truth = _gaussian_delta(sigma, releases, e)
        assert lower <= truth <= upper, (e, lower, truth, upper)
        assert upper - lower <= accepted * upper, (e, lower, truth, upper)


def _laplace_single(eps: float, t: float) -> float:
    """One Laplace release, ``t = s/b``: the point mass ``1/2`` at loss ``t`` gives
    ``(1 - e^(eps-t))/2``; the density ``e^((l-t)/2)/4`` on ``(eps, t)`` gives
    ``1/2 - e^((eps-t)/2) + e^(eps-t)/2``; together ``1 - e^((eps - t)/2)`` for
    ``-t <= eps < t`` (0 above; ``1 - e^eps`` below ``-t``, where every outcome counts)."""
    if eps >= t:
        return 0.0
    return -math.expm1((eps - t) / 2.0) if eps >= -t else -math.expm1(eps)


def _laplace_single_by_quadrature(mechanism, eps: float) -> float:
    """``∫ max(0, a(x) - e^eps b(x)) dx`` for any (truncated) Laplace (omega included:
    where ``b = 0`` the integrand is ``a``)."""
    s, r, scale = mechanism.sensitivity, _bound(mechanism), mechanism.scale
    z = 1.0 if math.isinf(r) else -math.expm1(-r / scale)

    def density(x, centre):
        return stats.laplace.pdf(x, centre, scale) / z if abs(x - centre) <= r else 0.0

    lo, hi = max(-r, -60.0 * scale), min(r, s + 60.0 * scale)
    crossing = (s - eps * scale) / 2.0
    points = sorted({p for p in (0.0, s, s - r, crossing) if lo < p < hi})
    value, _ = integrate.quad(
        lambda x: max(0.0, density(x, 0.0) - math.exp(eps) * density(x, s)),
        lo,
        hi,
        points=points,
        epsabs=1e-14,
        epsrel=1e-12,
        limit=200,
    )
    return value


@pytest.mark.parametrize("scale", [1.0, 0.5, 3.0])
def test_laplace_single_release_exact(scale):
    mechanism = LaplaceMechanism(scale)
    t = 1.0 / scale
    eps = np.array([0.0, 0.1, 0.5 * t, 0.9 * t, 0.99 * t])
    exact = np.array([_laplace_single(e, t) for e in eps])
    quadrature = np.array([_laplace_single_by_quadrature(mechanism, e) for e in eps])
    np.testing.assert_allclose(exact, quadrature, rtol=1e-9, atol=1e-14)  # the derivation
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a bracket of ~1.2e-4 where 1e-4 was asked
        bounds = PrivacyBuckets(accuracy=1e-4).compose(mechanism).delta(eps)
    assert np.all(bounds.lower <= exact) and np.all(exact <= bounds.upper)
    assert np.all(bounds.upper - bounds.lower <= 2e-4 * exact)
    above = PrivacyBuckets(accuracy=1e-4).compose(mechanism).delta(1.5 * t)
    assert above.lower == 0.0 and above.upper <= 1e-300  # no loss exceeds t


@pytest.mark.parametrize("scale", [1.0, 0.5, 3.0])
def test_laplace_two_releases_against_quadrature(scale):
    """Two releases: ``delta_2(eps) = E_{L1}[delta_1(eps - L1)]`` over the single-release
    loss law (points 1/2 at t, e^-t/2 at -t, density e^((u-t)/2)/4 between)."""
    t = 1.0 / scale

    def composed(eps):
        def inner(u):
            return _laplace_single(eps - u, t)

        kinks = sorted({p for p in (eps - t, eps + t) if -t < p < t})
        middle, _ = integrate.quad(
            lambda u: math.exp((u - t) / 2.0) / 4.0 * inner(u),
            -t,
            t,
            points=kinks or None,
            epsabs=0.0,
            epsrel=1e-13,
            limit=200,
        )
        return 0.5 * inner(t) + 0.5 * math.exp(-t) * inner(-t) + middle

    eps = np.array([0.05, 0.3, 0.9 * t, 1.5 * t, 1.95 * t])
    exact = np.array([composed(e) for e in eps])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bounds = PrivacyBuckets(accuracy=1e-4).compose(LaplaceMechanism(scale), 2).delta(eps)
    assert np.all(bounds.lower <= exact) and np.all(exact <= bounds.upper)
    assert np.all(bounds.upper - bounds.lower <= 1e-3 * exact)


@pytest.mark.parametrize("mechanism", TRUNCATED, ids=str)
def test_truncated_single_release_against_quadrature(mechanism):
    """One release of a truncated mechanism: quad of ``max(0, a - e^eps b)`` plus omega."""
    s, r = mechanism.sensitivity, _bound(mechanism)
    omega = mechanism.distinguishing_mass("A/B")
    pld = mechanism.bucket_release().bucket("A/B", 0.01, 0.0, 1e-24)
    assert pld.distinguishing_mass == pytest.approx(omega, rel=4.0 * U)
    eps = np.array([0.0, 0.05, 0.3, 1.0])
    exact = []
    for e in eps:
        if _is_gaussian(mechanism):
            sigma = mechanism.sigma
            z = stats.norm.cdf(r / sigma) - stats.norm.cdf(-r / sigma)

            def a(x, sigma=sigma, z=z):
                return stats.norm.pdf(x, 0.0, sigma) / z if abs(x) <= r else 0.0

            def b(x, sigma=sigma, z=z):
                return stats.norm.pdf(x, s, sigma) / z if abs(x - s) <= r else 0.0

            crossing = s / 2.0 - e * sigma**2 / s
            points = sorted({p for p in (s - r, crossing) if s - r < p < r})
            value, _ = integrate.quad(
                lambda x, e=e, a=a, b=b: max(0.0, a(x) - math.exp(e) * b(x)),
                s - r,
                r,
                points=points or None,
                epsabs=1e-14,
                epsrel=1e-12,
            )
            exact.append(omega + value)
        else:
            exact.append(_laplace_single_by_quadrature(mechanism, e))
    exact = np.array(exact)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a bracket of ~1.2e-4 where 1e-4 was asked
        bounds = PrivacyBuckets(accuracy=1e-4).compose(mechanism).delta(eps)
    assert np.all(bounds.lower <= exact * (1 + 1e-9)) and np.all(exact <= bounds.upper * (1 + 1e-9))
    assert np.all(bounds.upper - bounds.lower <= 2e-4 * bounds.upper)


@pytest.mark.parametrize("mechanism", [m for m in LAPLACES if hasattr(m, "bound")], ids=str)
def test_truncated_laplace_distinguishing_mass(mechanism):
    """omega of the buckets is the mechanism's; beyond the largest finite loss the composed
    delta is exactly ``1 - (1 - omega)^n``."""
    omega = mechanism.distinguishing_mass("A/B")
    release = mechanism.bucket_release()
    for direction in ("A/B", "B/A"):
        pld = release.bucket(direction, 0.01, 0.0, 1e-24)
        assert pld.distinguishing_mass == pytest.approx(omega, rel=4.0 * U)
    top = 3 * mechanism.max_finite_loss("A/B") + 0.1
    bounds = PrivacyBuckets(accuracy=1e-4).compose(mechanism, times=3).delta(top)
    composed = -math.expm1(3 * math.log1p(-omega))
    assert bounds.lower <= composed <= bounds.upper
    assert bounds.upper == pytest.approx(composed, rel=1e-9)


@pytest.mark.parametrize(
    "mechanism",
    [
        TruncatedGaussianMechanism(0.01, 1.0, 1.9),  # finite part ~e^-4000: all underflows
        LaplaceMechanism(0.001),  # t = 1000: point mass e^-1000 underflows
        GaussianMechanism(1e-3),  # mu = 1000
        GaussianMechanism(1e3),  # mu = 1e-3
        TruncatedLaplaceMechanism(1.0, 30.0, 1e-3),  # omega ~ 5e-17
    ],
    ids=str,
)
def test_extreme_parameters_stay_finite_and_ordered(mechanism):
    release = mechanism.bucket_release()
    stats_ = release.statistics("A/B", 1e-24)
    assert math.isfinite(stats_.mean) and stats_.variance >= 0.0 and stats_.low <= stats_.high
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        bounds = PrivacyBuckets(accuracy=1e-3).compose(mechanism, times=2).delta([0.0, 1.0, 10.0])
    assert np.all(np.isfinite(bounds.lower)) and np.all(np.isfinite(bounds.upper))
    assert np.all(bounds.lower >= 0.0) and np.all(bounds.lower <= bounds.upper)
    assert np.all(bounds.upper <= 1.0)
