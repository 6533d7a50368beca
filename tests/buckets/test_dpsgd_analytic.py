"""The subsampled truncated Gaussian through PrivacyBuckets, bucketed from CDFs: each
bucket mass within its error bound of mpmath, certified brackets around the exact delta
of one release, the Gaussian closed form for ``q = 1`` without a cut, and fine-grid pairs
composed exactly."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from accountant import ExtendedMA, PrivacyBuckets, WorstCasePair, exact_delta
from accountant.errors import CertificationWarning, InvalidInputError
from accountant.mechanisms import GaussianMechanism
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.mechanisms.subsampled_gaussian_masses import BASE_ERROR, U, edge_ell, narrow_masses
from accountant.mechanisms.subsampled_gaussian_release import SubsampledGaussianRelease
from tests import dpsgd_reference as ref
from tests.buckets.test_analytic_end_to_end import _gaussian_delta

S = SubsampledTruncatedGaussian
DIRECTIONS = ("A/B", "B/A")
MECHANISMS = [
    S(sigma=1.1, sampling_rate=0.004, cut=8.0),
    S(sigma=0.8, sampling_rate=0.3, cut=3.0, truncation="clamped"),
    S(sigma=1.0, sampling_rate=0.5, cut=math.inf),
    S(sigma=2.0, sampling_rate=1.0, cut=3.0),
    S(sigma=0.3, sampling_rate=0.1, cut=10.0),  # l* = 27.8 > 25: an unresolved top
]
IDS = [m.description for m in MECHANISMS]


def test_its_bucket_release_is_the_subsampled_gaussian_release():
    release = MECHANISMS[0].bucket_release()
    assert isinstance(release, SubsampledGaussianRelease)
    assert release.description == MECHANISMS[0].description
    assert not release.same_directions()
    with pytest.raises(InvalidInputError, match="direction"):
        release.statistics("max", 1e-24)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_one_release_brackets_the_exact_delta(mechanism, direction):
    eps = np.array([0.0, 0.001, 0.01, 0.1, 0.3, 1.0])
    with warnings.catch_warnings():
        # reported where the bracket is [0, tiny] (no loss above eps): checked below
        warnings.simplefilter("ignore", CertificationWarning)
        bounds = PrivacyBuckets(accuracy=1e-4).compose(mechanism).delta(eps, direction=direction)
    for e, lower, upper in zip(eps, bounds.lower, bounds.upper, strict=True):
        exact = float(ref.exact_delta(mechanism, e, direction))
        assert lower <= exact <= upper, (e, lower, exact, upper)
        if exact > 1e-9:
            assert upper - lower <= 1e-3 * upper, (e, lower, exact, upper)
        elif exact > 0.0:  # ~1e-13: the engine stops refining at a few 1e-3 (it says so)
            assert upper - lower <= 1e-2 * upper, (e, lower, exact, upper)
        else:
            assert upper <= 1e-20  # only cut tails and rounding above an exact 0


def _exact_bucket_masses(mechanism, direction, pld, indices):
    """Exact masses of buckets ``(anchor + (J - 1) w, anchor + J w]`` (anchor 0) of ``pld``."""
    masses = []
    for j in indices:
        low = (pld.first_index + int(j) - 1) * Fraction(pld.width)
        masses.append(ref.interval_masses(mechanism, direction, low, low + Fraction(pld.width)))
    return masses


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_bucket_masses_within_their_error_bounds(mechanism, direction):
    """``|stored - exact| <= rho exact + e_j`` with ``|e|_2 <= error_a`` (``error_b``) for
    buckets across the range, at the support's ends, at the atom and the unresolved top."""
    release = mechanism.bucket_release()
    stats = release.statistics(direction, 1e-24)
    pld = release.bucket(direction, (stats.high - stats.low) / 5000.0, 0.0, 1e-24)
    heavy = np.flatnonzero(pld.mass_a > 1e-6 * pld.mass_a.max())
    picks = np.unique(
        np.concatenate([np.linspace(0, pld.size - 1, 25).astype(int), heavy[:3], heavy[-3:]])
    )
    picks = np.unique(np.concatenate([picks, [0, 1, pld.size - 2, pld.size - 1]]))
    exact = _exact_bucket_masses(mechanism, direction, pld, picks)
    rho = pld.relative_error
    for j, (mass_a, mass_b) in zip(picks, exact, strict=True):
        assert abs(pld.mass_a[j] - mass_a) <= rho * mass_a + pld.error_a, (j, mass_a)
        assert abs(pld.mass_b[j] - mass_b) <= rho * mass_b + pld.error_b, (j, mass_b)
    assert rho <= 1e-10  # the bound is meaningful
    total = math.fsum(pld.mass_a) + mechanism.distinguishing_mass(direction)
    assert 1.0 - pld.lost_a - 1e-12 <= total <= 1.0 + 1e-12


def test_series_masses_against_mpmath():
    rng = np.random.default_rng(7)
    centre = np.concatenate([rng.uniform(-38.0, 38.0, 300), rng.uniform(-2.0, 2.0, 100)])
    half = np.exp(rng.uniform(math.log(1e-12), math.log(0.6), centre.size))
    masses = narrow_masses(centre, half)
    mp.mp.dps = 50
    for m, h, value in zip(centre, half, masses, strict=True):
        exact = ref.normal_mass(mp.mpf(m) - mp.mpf(h), mp.mpf(m) + mp.mpf(h))
        z = abs(m) + h
        if exact > 1e-300:
            assert abs(value - exact) <= (BASE_ERROR + 16.0 * U * z * z) * exact, (m, h)


@pytest.mark.parametrize("q", [0.004, 0.3, 1.0])
def test_edge_error_bound_covers_moved_edges(q):
    """``|l - h(P')| <= d`` for every exact ``P'`` within ``dP`` of the float edge ``P``."""
    top = -math.log1p(-q) if q < 1 else 30.0
    losses = np.concatenate(
        [np.linspace(-40.0, 0.99 * top, 60), top * (1 - np.geomspace(1e-2, 1e-9, 20))]
    )
    d_loss = 4.0 * U * (np.abs(losses) + 1e-3)
    ell, d = edge_ell(losses, d_loss, q)
    mp.mp.dps = 50
    for loss, dl, value, bound in zip(losses, d_loss, ell, d, strict=True):
        for moved in (mp.mpf(loss) - mp.mpf(dl), mp.mpf(loss), mp.mpf(loss) + mp.mpf(dl)):
            exact = moved if q == 1 else -mp.log((mp.e ** (-moved) - 1 + q) / q)
            assert abs(value - exact) <= bound, (loss, value, exact, bound)


@pytest.mark.parametrize("releases", [1, 10, 300])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_sampling_rate_one_without_cut_is_the_gaussian_mechanism(releases, direction):
    sigma = 2.0
    eps = np.array([0.1, 0.5, 1.0, 3.0])
    mechanism = S(sigma=sigma, sampling_rate=1.0, cut=math.inf)
    bounds = PrivacyBuckets(accuracy=1e-3).compose(mechanism, releases).delta(eps, direction)
    for e, lower, upper in zip(eps, bounds.lower, bounds.upper, strict=True):
        truth = _gaussian_delta(sigma, releases, e)
        assert lower <= truth <= upper, (e, lower, truth, upper)
        assert upper - lower <= 1e-2 * upper


def test_a_large_cut_is_nearly_no_cut():
    eps = np.array([0.2, 0.5, 1.0])
    cut, uncut = (
        PrivacyBuckets(accuracy=1e-3)
        .compose(S(sigma=1.0, sampling_rate=0.05, cut=k), 60)
        .delta(eps)
        for k in (10.0, math.inf)
    )
    # the cut at 10 sigma moves delta by far less than the brackets' width: they overlap
    assert np.all(cut.lower <= uncut.upper) and np.all(uncut.lower <= cut.upper)
    np.testing.assert_allclose(cut.upper, uncut.upper, rtol=2e-3)


def _composed_twice(pair: WorstCasePair) -> WorstCasePair:
    """The exact two-fold product of a pair (outcomes (i, j), masses multiplied)."""
    return WorstCasePair(np.outer(pair.a, pair.a).ravel(), np.outer(pair.b, pair.b).ravel())


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_two_releases_agree_with_exactly_composed_fine_grids(truncation):
    """Grid pairs composed exactly converge to the continuous delta linearly in the step
    (the cut and the atoms sit on cell boundaries): the extrapolation ``2 fine - coarse``
    lies within a fifth of ``|fine - coarse|`` of the analytic bracket."""
    mechanism = S(sigma=1.0, sampling_rate=0.2, cut=3.0, truncation=truncation)
    bounds = PrivacyBuckets(accuracy=1e-4).compose(mechanism, 2)
    for direction in DIRECTIONS:
        for eps in (0.05, 0.3):
            coarse, fine = (
                exact_delta(_composed_twice(mechanism.pair(step)), eps, direction=direction)
                for step in (0.02, 0.01)
            )
            bracket = bounds.delta(eps, direction=direction)
            assert abs(fine - coarse) < 1e-2 * fine
            limit, slack = 2.0 * fine - coarse, 0.2 * abs(fine - coarse)
            assert bracket.lower - slack <= limit <= bracket.upper + slack
            assert bracket.upper - bracket.lower <= 1e-3 * bracket.upper


@settings(max_examples=12, deadline=None)
@given(
    sigma=st.floats(0.4, 3.0),
    rate=st.sampled_from([1e-3, 0.01, 0.2, 0.7, 1.0]),
    cut=st.sampled_from([1.0, 2.0, 4.0, 8.0, math.inf]),
    truncation=st.sampled_from(["renormalised", "clamped"]),
    direction=st.sampled_from(DIRECTIONS),
    eps=st.sampled_from([0.0, 0.05, 0.5, 2.0]),
)
def test_property_one_release_is_bracketed(sigma, rate, cut, truncation, direction, eps):
    """Random settings: the certified bracket holds the exact delta of one release, and the
    Extended MA is never below its lower end."""
    assume(cut * sigma > 0.55)
    mechanism = S(sigma=sigma, sampling_rate=rate, cut=cut, truncation=truncation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        bounds = PrivacyBuckets(accuracy=1e-3).compose(mechanism).delta(eps, direction)
    exact = float(ref.exact_delta(mechanism, eps, direction))
    assert bounds.lower <= exact <= bounds.upper, (bounds, exact)
    moments = ExtendedMA().compose(mechanism).delta(eps, direction).upper
    assert moments >= bounds.lower


def test_heterogeneous_with_the_gaussian_mechanism():
    """``q = 1`` without a cut, composed with the Gaussian mechanism of the same sigma:
    seven Gaussian releases in all, the closed form."""
    sigma, eps = 3.0, np.array([0.2, 1.0, 2.0])
    bounds = (
        PrivacyBuckets(accuracy=1e-3)
        .compose(S(sigma=sigma, sampling_rate=1.0, cut=math.inf), 3)
        .compose(GaussianMechanism(sigma), 4)
        .delta(eps)
    )
    for e, lower, upper in zip(eps, bounds.lower, bounds.upper, strict=True):
        assert lower <= _gaussian_delta(sigma, 7, e) <= upper


@pytest.mark.parametrize("releases", [100, 1000])
def test_a_sampling_rate_a_hair_below_one_is_the_gaussian_mechanism(releases):
    """q = 1 - 1e-12: the losses were computed as log1p(q expm1(-l)), which loses
    1/(1 - q) = 1e12 ulps near the top; the drift it declared (1e-3 per release) made the
    eps bracket [0, 658] (issue 26). The logarithmic form keeps a few ulps. The pair is
    dominated by the Gaussian mechanism's (q = 1) and within total variation ``releases *
    1e-12`` of it, so ``delta_1 - releases 1e-12 (1 + e^eps) <= delta_q <= delta_1``."""
    sigma = 1.0
    eps = np.array([1.0, 5.0, 0.5 * releases])
    mechanism = S(sigma=sigma, sampling_rate=1.0 - 1e-12, cut=math.inf)
    bounds = PrivacyBuckets(accuracy=1e-3).compose(mechanism, releases).delta(eps)
    for e, lower, upper in zip(eps, bounds.lower, bounds.upper, strict=True):
        truth = _gaussian_delta(sigma, releases, e)
        slack = releases * 1e-12 * (1.0 + math.exp(min(e, 700.0)))
        assert lower <= truth and truth - slack <= upper, (e, lower, truth, upper)
        assert upper - lower <= 1e-3 * upper, (e, lower, upper)
