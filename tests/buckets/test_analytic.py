"""Analytic releases (:mod:`accountant.buckets.analytic_release`) against independent oracles.

Oracles: scipy distributions in the noise coordinate ``x`` (masses of the finite-loss
outcomes, ``A`` centred at 0 and ``B`` at ``s``), mpmath at 50 digits (bucket masses and
the normal-mass routine), closed forms (composed Gaussian:
``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, ``mu = sqrt(n) s/sigma``;
one Laplace release: ``delta(eps) = 1 - e^((eps - t)/2)`` for ``eps < t = s/b``),
quadrature of ``max(0, a - e^eps b)``, fine grid pairs and the Extended MA.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from accountant.buckets.analytic_release import BASE_ERROR
from accountant.errors import InvalidInputError
from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TruncatedGaussianMechanism,
    TruncatedLaplaceMechanism,
)
from accountant.numerics.gaussian import log_gauss_mass
from accountant.pairs.pld import exact_delta
from accountant.protocol import AnalyticMechanism

U = 2.0**-53
GAUSSIANS = [
    GaussianMechanism(1.0),
    GaussianMechanism(0.3, sensitivity=2.5),
    GaussianMechanism(10.0),
    TruncatedGaussianMechanism(2.0, 6.0, 1.0),
    TruncatedGaussianMechanism(5.0, 2.0, 3.0),
    TruncatedGaussianMechanism(1.0, 1.0, 1.5),
    TruncatedGaussianMechanism(0.2, 8.0, 1.0),
]
LAPLACES = [
    LaplaceMechanism(1.0),
    LaplaceMechanism(0.05, sensitivity=2.0),
    TruncatedLaplaceMechanism(2.0, 6.0, 1.0),
    TruncatedLaplaceMechanism(5.0, 2.0, 3.0),
    TruncatedLaplaceMechanism(0.5, 3.0, 2.0),
    TruncatedLaplaceMechanism(1.0, 1.0, 1.0),
]
MECHANISMS = GAUSSIANS + LAPLACES
TRUNCATED = [m for m in MECHANISMS if hasattr(m, "bound")]


def _is_gaussian(mechanism) -> bool:
    return isinstance(mechanism, GaussianMechanism | TruncatedGaussianMechanism)


def _bound(mechanism) -> float:
    return getattr(mechanism, "bound", math.inf)


# -- oracle: masses in the noise coordinate x ------------------------------------------


def _noise_mass(mechanism, side: str, lo: float, hi: float) -> float:
    """Mass under ``side`` (A: noise at 0, B: at s; truncated and renormalised) of [lo, hi]."""
    centre = 0.0 if side == "A" else mechanism.sensitivity
    r = _bound(mechanism)
    lo, hi = max(lo, centre - r), min(hi, centre + r)
    if hi <= lo:
        return 0.0
    if _is_gaussian(mechanism):
        dist = stats.norm(centre, mechanism.sigma)
    else:
        dist = stats.laplace(centre, mechanism.scale)
    mass = dist.sf(lo) - dist.sf(hi) if lo > centre else dist.cdf(hi) - dist.cdf(lo)
    return mass / (1.0 if math.isinf(r) else dist.cdf(centre + r) - dist.cdf(centre - r))


def _finite_mass(mechanism, side: str, lo: float, hi: float) -> float:
    """As :func:`_noise_mass`, restricted to the finite-loss outcomes ``[s - r, r]``."""
    s, r = mechanism.sensitivity, _bound(mechanism)
    return _noise_mass(mechanism, side, max(lo, s - r), min(hi, r))


def _x_of_loss(mechanism, level: float | Fraction, strict: bool = False) -> float:
    """``x_l`` with ``{finite L <= level} = {x >= x_l}`` (``L < level`` with ``strict``); the
    loss falls in x. Laplace point masses are compared with ``level`` exactly."""
    s = mechanism.sensitivity
    if _is_gaussian(mechanism):
        return s / 2.0 - float(level) * mechanism.sigma**2 / s
    t = Fraction(s) / Fraction(mechanism.scale)
    level = Fraction(level)
    if level > t or (level == t and not strict):
        return -math.inf
    if level < -t or (level == -t and strict):
        return math.inf
    return (s - float(level) * mechanism.scale) / 2.0


def _cut_masses(mechanism, pld, side: str) -> float:
    """Mass under ``side`` of the finite losses below the first and above the last bucket
    (exact bucket edges)."""
    anchor, width = (Fraction(v) for v in _bucket_frame[id(pld)])
    low = anchor + (pld.first_index - 1) * width
    high = anchor + (pld.first_index + pld.size - 1) * width
    below = _finite_mass(mechanism, side, _x_of_loss(mechanism, low), math.inf)
    above = _finite_mass(mechanism, side, -math.inf, _x_of_loss(mechanism, high))
    return below + above


_bucket_frame: dict[int, tuple[float, float]] = {}


def _bucket(mechanism, width: float, anchor: float, tail: float, direction: str = "A/B"):
    pld = mechanism.bucket_release().bucket(direction, width, anchor, tail)
    _bucket_frame[id(pld)] = (anchor, width)
    return pld


# -- the release interface ---------------------------------------------------------------


def test_the_four_mechanisms_are_analytic_mechanisms_and_a_pair_is_not():
    for mechanism in MECHANISMS:
        assert isinstance(mechanism, AnalyticMechanism)
        release = mechanism.bucket_release()
        for method in ("statistics", "bucket", "same_directions"):
            assert callable(getattr(release, method))
        assert release.description == mechanism.description
    assert not isinstance(object(), AnalyticMechanism)
    assert not isinstance(GaussianMechanism(1.0).pair(0.1), AnalyticMechanism)
    with pytest.raises(InvalidInputError, match="direction"):
        GaussianMechanism(1.0).bucket_release().statistics("max", 1e-24)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=str)
@pytest.mark.parametrize(
    ("width", "anchor", "tail"), [(0.01, 0.0, 1e-24), (0.37, 0.123, 1e-12), (0.0137, -0.05, 0.0)]
)
def test_bucket_masses_add_up_to_one(mechanism, width, anchor, tail):
    """A: buckets + cut tails + omega = 1; B: buckets + cut tails + B-only mass = 1, with the
    cut tails and the distinguishing masses from scipy in the noise coordinate."""
    pld = _bucket(mechanism, width, anchor, tail)
    s, r = mechanism.sensitivity, _bound(mechanism)
    omega = _noise_mass(mechanism, "A", -math.inf, s - r) if math.isfinite(r) else 0.0
    b_only = _noise_mass(mechanism, "B", r, math.inf) if math.isfinite(r) else 0.0
    cut_a = _cut_masses(mechanism, pld, "A")
    cut_b = _cut_masses(mechanism, pld, "B")
    assert math.fsum(pld.mass_a) + cut_a + omega == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(pld.mass_b) + cut_b + b_only == pytest.approx(1.0, abs=1e-12)
    assert b_only == pytest.approx(omega, rel=1e-9, abs=1e-300)  # reflection x -> s - x
    assert pld.distinguishing_mass == pytest.approx(omega, rel=1e-9, abs=1e-300)
    # the cut A-mass is counted as lost, and each cut tail holds at most tail_mass
    assert cut_a * (1.0 - 1e-9) <= pld.lost_a <= 2.0 * max(tail, 1e-300) * (1.0 + 1e-5)
    assert np.all(pld.mass_a >= 0.0) and np.all(pld.mass_b >= 0.0)
    assert pld.offset_low <= anchor - width and pld.offset_high >= anchor
    assert pld.offset_high - pld.offset_low <= width * (1.0 + 1e-12)
    # (only the smallest normal floats of entries that may have underflowed)
    assert pld.error_a <= 1e-300 and pld.error_b <= 1e-300


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=str)
def test_both_directions_share_one_loss_distribution(mechanism):
    """``same_directions()``: the law of ``-L`` under B equals the law of ``L`` under A, so the
    B-mass of bucket ``1 - J`` (losses in ``(-J w, (1-J) w]``) equals the A-mass of bucket
    ``J`` (anchor 0; no Laplace point mass on an edge for this width)."""
    release = mechanism.bucket_release()
    assert release.same_directions()
    width = 0.0123
    pld = _bucket(mechanism, width, 0.0, 1e-24)
    index = pld.first_index + np.arange(pld.size)
    mirror = 1 - index - pld.first_index
    inside = (mirror >= 0) & (mirror < pld.size)
    assert np.count_nonzero(inside) > 0.3 * pld.size
    np.testing.assert_allclose(
        pld.mass_b[mirror[inside]], pld.mass_a[inside], rtol=1e-11, atol=1e-300
    )
    # the premise, independent of this module: the grid discretisation of the noise has
    # equal exact deltas in both directions
    pair = mechanism.pair(0.01 if _is_gaussian(mechanism) else 0.005)
    eps = np.array([0.0, 0.1, 0.5, 1.0])
    np.testing.assert_allclose(
        exact_delta(pair, eps, "A/B"), exact_delta(pair, eps, "B/A"), rtol=1e-9, atol=1e-15
    )


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=str)
def test_statistics_match_quadrature(mechanism):
    """Mean and variance of L under the normalised finite part of A, by scipy quad in x
    (Laplace point masses added by hand); the range leaves <= tail_mass on each side."""
    tail = 1e-24
    stats_ = mechanism.bucket_release().statistics("A/B", tail)
    s, r = mechanism.sensitivity, _bound(mechanism)
    lo, hi = max(s - r, -60.0 * s), min(r, 60.0 * s)
    if _is_gaussian(mechanism):
        sigma = mechanism.sigma
        lo, hi = max(lo, -45.0 * sigma), min(hi, 45.0 * sigma)

        def loss(x):
            return (s * s - 2.0 * x * s) / (2.0 * sigma**2)

        def density(x):
            return stats.norm.pdf(x, 0.0, sigma)

        points = None
    else:
        b = mechanism.scale

        def loss(x):
            return (abs(x - s) - abs(x)) / b

        def density(x):
            return stats.laplace.pdf(x, 0.0, b)

        points = [p for p in (0.0, s) if lo < p < hi]
    moments = [
        integrate.quad(lambda x, k=k: loss(x) ** k * density(x), lo, hi, points=points)[0]
        for k in range(3)
    ]
    mean = moments[1] / moments[0]
    variance = moments[2] / moments[0] - mean**2
    assert stats_.mean == pytest.approx(mean, rel=1e-7, abs=1e-9)
    assert stats_.variance == pytest.approx(variance, rel=1e-6)
    assert (stats_.anchor, stats_.lattice) == (0.0, None)
    below = _finite_mass(mechanism, "A", _x_of_loss(mechanism, stats_.low, True), math.inf)
    above = _finite_mass(mechanism, "A", -math.inf, _x_of_loss(mechanism, stats_.high))
    assert below <= tail * (1.0 + 1e-6) and above <= tail * (1.0 + 1e-6)


# -- accuracy of the masses: mpmath at 50 digits -------------------------------------------


def _mp_normal(lo, hi):
    """``Phi(hi) - Phi(lo)`` without cancellation (upper tails right of 0)."""
    if lo + hi > 0:
        return mpmath.ncdf(-lo) - mpmath.ncdf(-hi)
    return mpmath.ncdf(hi) - mpmath.ncdf(lo)


def _mp_bucket_mass(mechanism, side: str, lo, hi):
    """Exact mass under ``side`` of the finite losses in ``(lo, hi]`` (mpf loss edges)."""
    s = mpmath.mpf(mechanism.sensitivity)
    bound = _bound(mechanism)
    if _is_gaussian(mechanism):
        mu = s / mpmath.mpf(mechanism.sigma)
        beta = -mu / 2 if side == "A" else mu / 2
        a, b = lo / mu + beta, hi / mu + beta
        if math.isinf(bound):
            return _mp_normal(a, b)
        rho = mpmath.mpf(bound) / mpmath.mpf(mechanism.sigma)
        edge_lo, edge_hi = (-rho, rho - mu) if side == "A" else (mu - rho, rho)
        a, b = max(a, edge_lo), min(b, edge_hi)
        return _mp_normal(a, b) / _mp_normal(-rho, rho) if b > a else mpmath.mpf(0)
    scale = mpmath.mpf(mechanism.scale)
    t = s / scale
    z, top, side_mass = mpmath.mpf(1), t, mpmath.mpf(1) / 2
    if math.isfinite(bound):
        r = mpmath.mpf(bound)
        z = 1 - mpmath.exp(-r / scale)
        top = min(t, (2 * r - s) / scale)
        side_mass = (1 - mpmath.exp(-(r - s) / scale)) / (2 * z) if s < r else 0
    a, b = max(lo, -top), min(hi, top)
    mass = mpmath.mpf(0)
    if b > a:
        edge = mpmath.exp((b - t) / 2) if side == "A" else mpmath.exp(-(a + t) / 2)
        mass = edge * -mpmath.expm1(-(b - a) / 2) / (2 * z)
    for point, weight_a, weight_b in ((t, 1, mpmath.exp(-t)), (-t, mpmath.exp(-t), 1)):
        if lo < point <= hi:
            mass += side_mass * (weight_a if side == "A" else weight_b)
    return mass


MP_CASES = [
    (GaussianMechanism(1.0), 0.01, 1e-300),
    (GaussianMechanism(1.0), 0.37, 1e-24),
    (GaussianMechanism(0.3, sensitivity=2.5), 0.05, 1e-300),
    (GaussianMechanism(10.0), 1e-4, 1e-300),
    (GaussianMechanism(3.0, sensitivity=0.1), 1e-4, 1e-24),
    (TruncatedGaussianMechanism(2.0, 6.0, 1.0), 1e-4, 1e-24),
    (TruncatedGaussianMechanism(5.0, 2.0, 3.0), 0.01, 0.0),
    (TruncatedGaussianMechanism(1.0, 1.0, 1.5), 0.0037, 0.0),
    (TruncatedGaussianMechanism(0.2, 8.0, 1.0), 0.05, 1e-300),
    (LaplaceMechanism(1.0), 1e-3, 1e-24),
    (LaplaceMechanism(0.05, sensitivity=2.0), 0.01, 1e-24),
    (LaplaceMechanism(30.0), 1e-4, 0.0),
    (TruncatedLaplaceMechanism(2.0, 6.0, 1.0), 1e-4, 1e-24),
    (TruncatedLaplaceMechanism(5.0, 2.0, 3.0), 0.01, 0.0),
    (TruncatedLaplaceMechanism(0.5, 3.0, 2.0), 0.01, 0.0),
    (TruncatedLaplaceMechanism(1.0, 1.0, 1.0), 0.37, 0.0),
]


@pytest.mark.parametrize(("mechanism", "width", "tail"), MP_CASES, ids=str)
def test_bucket_masses_within_the_stated_relative_error(mechanism, width, tail):
    """Each stored mass is within ``relative_error`` of the exact mass of the exact bucket
    (50 digits), over a sample of buckets including both ends (masses down to ~1e-300);
    the stated figure stays below 5e-12 (tail cut at 1e-24), 5e-11 (masses down to 1e-300)."""
    anchor = 0.0071
    pld = _bucket(mechanism, width, anchor, tail)
    assert pld.relative_error <= (5e-12 if tail >= 1e-24 else 5e-11)
    rng = np.random.default_rng(len(MP_CASES))
    ends = [np.arange(min(4, pld.size)), np.arange(max(0, pld.size - 4), pld.size)]
    sample = np.unique(np.concatenate([*ends, rng.integers(0, pld.size, 40)]))
    worst = 0.0
    with mpmath.workdps(50):
        for i in sample:
            lo = mpmath.mpf(anchor) + (pld.first_index + int(i) - 1) * mpmath.mpf(width)
            hi = lo + mpmath.mpf(width)
            for side, stored, error in (("A", pld.mass_a, pld.error_a), ("B", pld.mass_b, 0.0)):
                exact = _mp_bucket_mass(mechanism, side, lo, hi)
                deviation = abs(mpmath.mpf(float(stored[i])) - exact)
                assert deviation <= pld.relative_error * exact + error + 1e-320
                if exact > 1e-300:
                    worst = max(worst, float(deviation / exact))
    assert worst <= pld.relative_error


def test_normal_mass_routine_against_mpmath():
    """``log_gauss_mass`` on float arguments, every branch (narrow, upper tail, across 0),
    ``|z|`` up to 38 (masses ~1e-315): relative error <= BASE_ERROR + 16 u z^2."""
    rng = np.random.default_rng(7)
    lo = np.concatenate([rng.uniform(-38.0, 38.0, 150), rng.normal(0.0, 2.0, 150)])
    width = 10.0 ** rng.uniform(-9.0, 1.5, lo.size)
    got = log_gauss_mass(lo, lo + width, width)
    with mpmath.workdps(50):
        for a, w, value in zip(lo, width, got, strict=True):
            exact = _mp_normal(mpmath.mpf(a), mpmath.mpf(a) + mpmath.mpf(w))
            relative = abs(mpmath.exp(mpmath.mpf(float(value))) / exact - 1)
            z = max(abs(a), abs(a + w))
            assert relative <= BASE_ERROR + 16.0 * U * z * z
