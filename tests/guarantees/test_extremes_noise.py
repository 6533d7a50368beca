"""Numerical extremes of the public API, part 2: the noise itself.

Guarantee checked (as in ``test_extremes.py``): each case is answered with certified
bounds (reference inside the bracket, no NaN, no RuntimeWarning, a CertificationWarning
with the achieved figure exactly when the accuracy is missed) or refused with a specific
exception naming the argument and its value.

* sensitivity close to the noise range (one overlapping outcome left), equal to it, and
  beyond it: a pair whose supports do not overlap has delta = 1 at every eps (that is the
  truth, so it is reported, not refused), and no eps reaches any target below 1; the
  analytic truncated mechanisms refuse ``sensitivity >= 2 * bound`` by name;
* noise with edge masses below 1e-300 (underflowed to 0 or subnormal);
* nearly degenerate noise (mass 1 - 1e-12 at 0) up to 10^6 releases, and one-point noise.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from numpy.typing import ArrayLike
from scipy import integrate, stats

from accountant import (
    Bounds,
    ExtendedMA,
    InvalidInputError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    noise,
)
from accountant.mechanisms import TruncatedGaussianMechanism, TruncatedLaplaceMechanism
from tests import brute_force
from tests.buckets.test_soundness import exact_all
from tests.guarantees.test_extremes import (
    CONVERSIONS,
    certified,
    epsilon_warned_iff_missed,
    infeasible,
    recorded,
    warned_iff_missed,
)

DIRECTIONS = ("A/B", "B/A", "max")
KINDS = ("ADP", "PDP")


def _query(
    accountant: PrivacyBuckets, kind: str, eps: ArrayLike, direction: str = "max"
) -> tuple[Bounds, list[str]]:
    """``(bounds, CertificationWarning messages)`` of ``delta`` or ``delta_pdp``, with any
    RuntimeWarning (overflow, NaN) turned into an error."""
    query = accountant.delta if kind == "ADP" else accountant.delta_pdp
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return recorded(lambda: query(np.asarray(eps, dtype=float), direction))


def _check_against_brute_force(pair: WorstCasePair, times: int, eps: tuple[float, ...]) -> None:
    """PrivacyBuckets brackets the exact composition, the Extended MA lies above it, and
    (one release) the exact functions equal it, for ADP and PDP in every direction."""
    exact = exact_all([(pair.a, pair.b, times)], eps)
    total = brute_force.total_mass_bound([(pair.a, pair.b, times)])
    accountant = PrivacyBuckets().compose(pair, times=times)
    for direction in DIRECTIONS:
        for kind in KINDS:
            truth = [float(v) for v in exact[(kind, direction)]]
            bounds, messages = _query(accountant, kind, eps, direction)
            certified(bounds, truth, total=total)
            warned_iff_missed(bounds, messages)
        truth = np.array([float(v) for v in exact[("ADP", direction)]])
        for conversion in CONVERSIONS:
            ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
            assert (ma.delta(np.array(eps), direction).upper >= truth * (1.0 - 1e-12)).all()
        if times == 1:
            for query, kind in ((exact_delta, "ADP"), (exact_delta_pdp, "PDP")):
                values = query(pair, np.array(eps), direction)
                reference = [float(v) for v in exact[(kind, direction)]]
                np.testing.assert_allclose(values, reference, rtol=1e-9, atol=1e-300)


# ---------------------------------------------------------------------------------------
# sensitivity close to, equal to and beyond the noise range

#: 9 grid points on [-2, 2]: the noise range is 4.
RANGE_NOISE = noise.truncated_gaussian(1.0, 2.0, 0.5)


@pytest.mark.parametrize("times", [1, 2])
@pytest.mark.parametrize("sensitivity", [3.5, 4.0])
def test_sensitivity_up_to_the_noise_range(sensitivity: float, times: int) -> None:
    """Range minus one step leaves two overlapping outcomes, the range itself one."""
    pair = WorstCasePair.additive(RANGE_NOISE, sensitivity)
    overlap = int(((pair.a > 0) & (pair.b > 0)).sum())
    assert overlap == round((4.0 - sensitivity) / 0.5) + 1
    _check_against_brute_force(pair, times, (0.0, 1.0, 50.0))


@pytest.mark.parametrize("sensitivity", [4.5, 100.0])
def test_sensitivity_beyond_the_noise_range_gives_delta_one(sensitivity: float) -> None:
    """Disjoint supports: every outcome tells the inputs apart, so delta is the total mass of
    the masses as given, ``S^n`` (``S`` the exact sum of the pmf's floats: never renormalised,
    never rounded up to 1). The families make ``S <= 1`` within a few ulps;
    this test does not depend on where the last bit of ``exp`` lands on a machine."""
    pair = WorstCasePair.additive(RANGE_NOISE, sensitivity)
    assert not ((pair.a > 0) & (pair.b > 0)).any()
    total = mpmath.fsum([mpmath.mpf(x) for x in pair.a])  # exact
    assert 1 - 1e-15 <= total <= 1
    eps = np.array([0.0, 50.0, 1e3])
    accountant = PrivacyBuckets().compose(pair, times=3)
    for direction in DIRECTIONS:
        for kind in KINDS:
            bounds, messages = _query(accountant, kind, eps, direction)
            assert (bounds.lower <= total**3).all() and (bounds.upper >= total**3).all()
            assert (bounds.lower >= 1.0 - 1e-12).all() and (bounds.upper <= 1.0).all()
            assert messages == []
        for conversion in CONVERSIONS:
            ma = ExtendedMA(conversion=conversion).compose(pair, times=3)
            assert (ma.delta(eps, direction).upper >= total**3).all()
            assert (ma.delta(eps, direction).upper <= 1.0).all()
        # one release, exact: the total mass itself, to the last bit
        assert (exact_delta(pair, eps, direction) == math.fsum(pair.a.tolist())).all()
        assert (exact_delta_pdp(pair, eps, direction) == math.fsum(pair.a.tolist())).all()
    infeasible(lambda: accountant.epsilon(0.999), 0.999)
    infeasible(lambda: ExtendedMA().compose(pair, times=3).epsilon(0.999).upper, 0.999)
    infeasible(lambda: exact_epsilon(pair, 0.999), 0.999)


def _truncated_gaussian_delta(mechanism: TruncatedGaussianMechanism, eps: float) -> float:
    """``omega + ∫_{s-r}^{r} max(0, a - e^eps b) dx`` by quadrature (one release)."""
    sigma, r, s = mechanism.sigma, mechanism.bound, mechanism.sensitivity
    z = stats.norm.cdf(r / sigma) - stats.norm.cdf(-r / sigma)
    omega = (stats.norm.cdf((s - r) / sigma) - stats.norm.cdf(-r / sigma)) / z

    def excess(x: float) -> float:
        a = stats.norm.pdf(x, 0.0, sigma) / z
        return max(0.0, a - math.exp(eps) * stats.norm.pdf(x, s, sigma) / z)

    finite, _ = integrate.quad(excess, s - r, r, epsabs=1e-15, epsrel=1e-12, limit=200)
    return float(omega + finite)


@pytest.mark.parametrize("sensitivity", [3.9, 3.999])
def test_analytic_truncated_gaussian_near_twice_the_bound(sensitivity: float) -> None:
    mechanism = TruncatedGaussianMechanism(sigma=1.0, bound=2.0, sensitivity=sensitivity)
    eps = np.array([0.0, 1.0, 50.0])
    truth = np.array([_truncated_gaussian_delta(mechanism, e) for e in eps])
    bounds, messages = _query(PrivacyBuckets().compose(mechanism), "ADP", eps)
    certified(bounds, truth, rtol=1e-9)
    warned_iff_missed(bounds, messages)
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(mechanism)
        assert (ma.delta(eps).upper >= truth * (1.0 - 1e-9)).all(), conversion


@pytest.mark.parametrize("mechanism", [TruncatedGaussianMechanism, TruncatedLaplaceMechanism])
@pytest.mark.parametrize("sensitivity", [4.0, 9.0])
def test_analytic_mechanisms_refuse_sensitivity_of_twice_the_bound(
    mechanism: type, sensitivity: float
) -> None:
    with pytest.raises(InvalidInputError, match=rf"sensitivity.*{sensitivity!r}"):
        mechanism(1.0, 2.0, sensitivity)


# ---------------------------------------------------------------------------------------
# masses below 1e-300 at the edges

#: sigma 1 cut at 40 sigma: the pmf underflows to 0 and to subnormals near the edges.
EDGE_NOISE = noise.truncated_gaussian(1.0, 40.0, 0.5)
#: The same noise cut at 20 sigma: a loss lattice (tight brackets), and the A- and
#: B-masses of both differ by far less than 1e-80 (e^-200 and below is cut).
INNER_NOISE = noise.truncated_gaussian(1.0, 20.0, 0.5)
#: Explicit subnormal masses (1e-310) next to normal ones: losses ln(0.25 / 1e-305) ~ 700.
SUBNORMAL = np.array([1e-310, 1e-305, 0.25, 0.5, 0.25, 1e-305, 1e-310])


def test_edge_noise_really_holds_underflowed_masses() -> None:
    assert (EDGE_NOISE.pmf == 0.0).any()
    tiny = EDGE_NOISE.pmf[EDGE_NOISE.pmf > 0.0]
    assert tiny.min() < np.finfo(float).tiny  # subnormal
    assert EDGE_NOISE.is_symmetric() and EDGE_NOISE.is_monotone()


def test_edge_masses_single_release_against_exact() -> None:
    pair = WorstCasePair.additive(EDGE_NOISE, 1.0)
    eps = np.array([0.0, 0.25, 1.0, 8.25, 50.0])
    accountant = PrivacyBuckets().compose(pair)
    for kind, query in (("ADP", exact_delta), ("PDP", exact_delta_pdp)):
        truth = query(pair, eps)
        bounds, messages = _query(accountant, kind, eps)
        certified(bounds, truth, rtol=1e-12, atol=1e-320)
        warned_iff_missed(bounds, messages)
        if kind == "ADP":
            # delta(50) ~ 5e-315 is below the tail mass, so its bracket is [~0, 1e-24] and
            # the warning says 1; that must not stop the refinement at the other eps
            # (it did: 9e-3 at eps = 0 in this vector query, 6e-13 when asked alone)
            visible = truth > 1e-10
            widths = (bounds.upper - bounds.lower)[visible] / bounds.upper[visible]
            assert (widths <= accountant.accuracy).all(), (eps[visible], widths)
    found, messages = recorded(lambda: accountant.epsilon(1e-15))
    epsilon_warned_iff_missed(found, messages)
    truth = exact_epsilon(pair, 1e-15)
    assert found.lower - 1e-12 <= truth <= found.upper + 1e-12, (found, truth)


def test_edge_masses_ten_releases_against_the_lattice_noise() -> None:
    """Both noises have the same delta up to 1e-80, so their certified brackets (the
    inner one on a loss lattice, tight) must overlap within that."""
    eps = np.array([0.0, 1.0, 5.0, 20.0])
    edge = PrivacyBuckets().compose(WorstCasePair.additive(EDGE_NOISE, 1.0), times=10)
    inner = PrivacyBuckets().compose(WorstCasePair.additive(INNER_NOISE, 1.0), times=10)
    for kind in KINDS:
        first, messages = _query(edge, kind, eps)
        certified(first)
        warned_iff_missed(first, messages)
        second, _ = _query(inner, kind, eps)
        assert (first.lower <= second.upper + 1e-80).all(), (first, second)
        assert (second.lower <= first.upper + 1e-80).all(), (first, second)
    adp, _ = _query(edge, "ADP", eps)
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(WorstCasePair.additive(EDGE_NOISE, 1.0), 10)
        assert (ma.delta(eps).upper >= adp.lower).all(), conversion
    found, messages = recorded(lambda: edge.epsilon(1e-15))
    epsilon_warned_iff_missed(found, messages)
    assert 0.0 < found.lower <= found.upper < 50.0
    assert _query(inner, "ADP", found.upper)[0].lower <= 1e-15 + 1e-80


@pytest.mark.parametrize("times", [1, 2, 3])
def test_explicit_subnormal_masses_against_brute_force(times: int) -> None:
    pair = WorstCasePair.additive(noise.from_array(SUBNORMAL, 1.0), 1.0)
    _check_against_brute_force(pair, times, (0.0, 1.0, 50.0, 699.0, 1500.0))


def test_explicit_subnormal_masses_epsilon_beyond_the_float_exponent() -> None:
    """delta = 1e-15 needs eps ~ 1400 here (two releases with losses ~700), where e^eps
    overflows: this raised OverflowError before the fix in ``buckets/bounds.py``."""
    pair = WorstCasePair.additive(noise.from_array(SUBNORMAL, 1.0), 1.0)
    target = 1e-15
    found, messages = recorded(lambda: PrivacyBuckets().compose(pair, times=2).epsilon(target))
    epsilon_warned_iff_missed(found, messages)
    assert 700.0 < found.lower <= found.upper
    exact = exact_all([(pair.a, pair.b, 2)], (found.upper, found.lower * (1.0 - 1e-9)))
    assert exact[("ADP", "max")][0] <= target < exact[("ADP", "max")][1], (found, exact)
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(pair, times=2)
        assert ma.epsilon(target).upper >= found.lower, conversion
    single = exact_epsilon(pair, target)
    assert exact_delta(pair, single) <= target and 700.0 < single < 710.0


@pytest.mark.parametrize("times", [64, 70, 500])
def test_a_finite_part_that_underflows_under_composition(times: int) -> None:
    """One finite outcome of A-mass 1e-300 (the rest distinguishing): after 64 or more
    releases its composed A-mass is far below the tail mass, the Chernoff window of the
    rounded composition is empty, and this raised OverflowError before the fix in
    ``buckets/rounded_plan.py``. Both directions are all distinguishing mass but for
    ``1e-300 ** times`` (A/B) or ``1 - (1 - 1e-300) ** times`` (B/A): delta is 1 at every
    eps to double precision."""
    pair = WorstCasePair(a=np.array([1.0, 1e-300, 0.0]), b=np.array([0.0, 1.0, 1e-300]))
    found = PrivacyBuckets(accuracy=1e-2).compose(pair, times).delta(np.array([0.0, 5.0]))
    assert (found.lower <= 1.0).all() and (found.upper >= 1.0 - 1e-15).all(), found
    assert (found.lower >= 1.0 - 1e-12).all(), found


# ---------------------------------------------------------------------------------------
# nearly degenerate noise (1 - 1e-12 at 0) and one-point noise

DEGENERATE = np.array([0.5e-12, 1.0 - 1e-12, 0.5e-12])


def _degenerate_delta(times: int, eps: float, kind: str) -> float:
    """Exact delta of ``times`` releases of the degenerate pair ``A = (w, P, w, 0)``,
    ``B = (0, w, P, w)`` (either direction, by symmetry): with no distinguishing outcome,
    ``j`` outcomes of loss ``+c = ln(P/w)`` and ``k = n - j`` of loss ``-c``;
    ``C(n,k) (P^j w^k - e^eps w^j P^k)`` (ADP) or ``C(n,k) P^j w^k`` (PDP) where
    ``(j - k) c > eps``, plus the distinguishing mass ``(P + 2w)^n - (P + w)^n``. Terms with
    k > 40 are below 1e-320 and left out."""
    w, p = (mpmath.mpf(float(v)) for v in DEGENERATE[:2])
    with mpmath.workprec(200):
        # distinguishing part, masses as given (P + 2w = 1 + 2.2e-17 exactly, not 1)
        total = (p + 2 * w) ** times - (p + w) ** times
        scale, loss = mpmath.exp(mpmath.mpf(eps)), mpmath.log(p / w)
        for k in range(min(times, 40) + 1):
            j = times - k
            if (j - k) * loss <= eps:
                break
            term = p**j * w**k - (scale * w**j * p**k if kind == "ADP" else 0)
            total += mpmath.binomial(times, k) * term
        return float(min(1, total))


@pytest.mark.parametrize("times", [1, 4])
def test_nearly_degenerate_noise_against_brute_force(times: int) -> None:
    pair = WorstCasePair.additive(noise.from_array(DEGENERATE, 1.0), 1.0)
    _check_against_brute_force(pair, times, (0.0, 1.0, 28.0, 50.0, 200.0))


@pytest.mark.parametrize("times", [1, 100, 10**4, 10**6])
def test_nearly_degenerate_noise_up_to_a_million_releases(times: int) -> None:
    pair = WorstCasePair.additive(noise.from_array(DEGENERATE, 1.0), 1.0)
    top = times * math.log(DEGENERATE[1] / DEGENERATE[0])  # the largest loss
    eps = np.array([0.0, 50.0, top - 0.5, top + 1.0])
    accountant = PrivacyBuckets().compose(pair, times=times)
    total = brute_force.total_mass_bound([(pair.a, pair.b, times)])  # 1 + 2.2e-11 at 10^6
    for kind in KINDS:
        truth = [_degenerate_delta(times, e, kind) for e in eps]
        bounds, messages = _query(accountant, kind, eps)
        certified(bounds, truth, rtol=1e-12, total=total)
        warned_iff_missed(bounds, messages)
    truth = np.array([_degenerate_delta(times, e, "ADP") for e in eps])
    # The Extended MA rounds up to the last bit: never below the exact delta.
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
        assert (ma.delta(eps).upper >= truth).all(), conversion
        assert (ma.delta(eps).upper >= _query(accountant, "ADP", eps)[0].lower).all(), conversion
    # omega = 5e-13 per release: 1e-15 is out of reach, for every accountant
    infeasible(lambda: accountant.epsilon(1e-15), 1e-15)
    infeasible(lambda: ExtendedMA().compose(pair, times=times).epsilon(1e-15).upper, 1e-15)
    if times == 1:
        infeasible(lambda: exact_epsilon(pair, 1e-15), 1e-15)
        found, _ = recorded(lambda: accountant.epsilon(1e-11))
        truth = exact_epsilon(pair, 1e-11)
        assert found.lower - 1e-12 <= truth <= found.upper + 1e-12, (found, truth)


def test_one_point_noise_gives_delta_one() -> None:
    """All mass on one grid point: any shift separates the inputs completely."""
    pair = WorstCasePair.additive(noise.from_array(np.array([1.0]), 0.5), 0.5)
    np.testing.assert_array_equal(pair.a, [1.0, 0.0])
    _check_against_brute_force(pair, 3, (0.0, 50.0))
    bounds, _ = _query(PrivacyBuckets().compose(pair, times=10**6), "ADP", [0.0, 50.0])
    assert (bounds.lower >= 1.0 - 1e-12).all() and (bounds.upper == 1.0).all()
    infeasible(lambda: PrivacyBuckets().compose(pair).epsilon(0.5), 0.5)
