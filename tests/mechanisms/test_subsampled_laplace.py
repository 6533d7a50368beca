"""The Poisson-subsampled Laplace mechanism against brute force in mpmath: the exact delta
of one release from the densities in ``x`` (SPEC section 1), of two releases from the exact
privacy-loss distribution (atoms and density of ``l``), the log moments, and the lattice
split masses; through the lattice (many releases) against dp_accounting's own PLD."""

from __future__ import annotations

import contextlib
import math
import warnings

import mpmath as mp
import numpy as np
import pytest

from accountant import CertificationWarning, ExtendedMA, InvalidInputError, PrivacyBuckets
from accountant.buckets.engine import ROUNDING_RELEASES
from accountant.mechanisms import LaplaceMechanism, SubsampledLaplace
from accountant.mechanisms.subsampled_laplace import ExponentialSplit

mp.mp.dps = 30
DIRECTIONS = ("A/B", "B/A")
#: (scale, q): the DP-SGD regime, a small scale (wide loss range), q above 1/2 (log form).
SETTINGS = [(2.0, 0.1), (0.5, 0.01), (1.0, 0.6)]
IDS = [f"b={b:g},q={q:g}" for b, q in SETTINGS]


def _laplace(x, centre, b):
    return mp.exp(-abs(x - centre) / b) / (2 * b)


def exact_delta_one(b: float, q: float, eps: float, direction: str):
    """``sum max(0, num - e^eps den)`` as an integral over ``x`` of the pair's densities:
    ``A = Lap(0, b)``, ``B = (1 - q) A + q Lap(1, b)``, from the definition."""
    b, q = mp.mpf(b), mp.mpf(q)

    def a(x):
        return _laplace(x, 0, b)

    def bb(x):
        return (1 - q) * a(x) + q * _laplace(x, 1, b)

    num, den = (a, bb) if direction == "A/B" else (bb, a)
    factor = mp.exp(eps)

    def gap(x):
        return num(x) - factor * den(x)

    points = [-mp.inf, mp.mpf(0)]
    if gap(mp.mpf("1e-30")) * gap(1 - mp.mpf("1e-30")) < 0:  # the crossing inside (0, 1)
        points.append(mp.findroot(gap, (mp.mpf("1e-30"), 1 - mp.mpf("1e-30")), solver="bisect"))
    points += [mp.mpf(1), mp.inf]
    return mp.quad(lambda x: max(gap(x), 0), points)


def _law(b: float, q: float, direction: str):
    """The exact PLD of one release in ``direction``: atoms ``[(loss, numerator mass)]``, the
    numerator density of ``l`` on ``(-t, t)`` and the loss map (module docstring)."""
    b, q = mp.mpf(b), mp.mpf(q)
    t = 1 / b
    weights = (1, 0) if direction == "A/B" else (1 - q, q)
    sign = -1 if direction == "A/B" else 1

    def loss(ell):
        return sign * mp.log(1 - q + q * mp.exp(-ell))

    def density(ell):
        return (weights[0] * mp.exp((ell - t) / 2) + weights[1] * mp.exp(-(ell + t) / 2)) / 4

    atoms = [
        (loss(t), (weights[0] + weights[1] * mp.exp(-t)) / 2),
        (loss(-t), (weights[0] * mp.exp(-t) + weights[1]) / 2),
    ]
    return t, atoms, density, loss


def _crossing(loss, level, t):
    """The ``l`` in ``(-t, t)`` with ``L(l) = level``, or ``None`` (``L`` is monotone)."""
    with contextlib.suppress(ValueError, ZeroDivisionError):
        return mp.findroot(lambda u: loss(u) - level, (-t, t), solver="bisect")
    return None


def _h1(law, eps):
    """``E_num[(1 - e^(eps - L))^+]`` for any real eps (one release)."""
    t, atoms, density, loss = law
    total = mp.fsum(m * max(0, 1 - mp.exp(eps - x)) for x, m in atoms)
    cross = _crossing(loss, eps, t)
    points = [-t, t] if cross is None else [-t, cross, t]
    total += mp.quad(lambda u: density(u) * max(0, 1 - mp.exp(eps - loss(u))), points)
    return total


def exact_delta_two(b: float, q: float, eps: float, direction: str):
    """Two releases: ``sum over the first release's outcomes of h1(eps - L)``, nested
    quadrature over the exact PLD."""
    law = _law(b, q, direction)
    t, atoms, density, loss = law
    total = mp.fsum(m * _h1(law, eps - x) for x, m in atoms)
    kinks = [_crossing(loss, eps - x, t) for x, _ in atoms]  # eps - L(l) meets an atom
    points = [-t, *sorted(k for k in kinks if k is not None), t]
    total += mp.quad(lambda u: density(u) * _h1(law, eps - loss(u)), points, maxdegree=6)
    return total


@pytest.mark.parametrize(("scale", "q"), SETTINGS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_one_release_is_bracketed_around_the_exact_delta(scale, q, direction):
    mechanism = SubsampledLaplace(scale=scale, sampling_rate=q)
    top = mechanism.max_finite_loss(direction)
    eps = np.array([0.0, 0.3 * top, 0.7 * top])
    bounds = PrivacyBuckets(accuracy=1e-6).compose(mechanism).delta(eps, direction)
    for e, low, high in zip(eps, bounds.lower, bounds.upper, strict=True):
        exact = exact_delta_one(scale, q, float(e), direction)
        assert low <= exact <= high, (e, low, float(exact), high)
        assert high - low <= 1e-5 * exact + 1e-15


@pytest.mark.slow
@pytest.mark.parametrize(("scale", "q"), SETTINGS[:2], ids=IDS[:2])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_two_releases_are_bracketed_around_the_exact_delta(scale, q, direction):
    mechanism = SubsampledLaplace(scale=scale, sampling_rate=q)
    top = 2.0 * mechanism.max_finite_loss(direction)
    eps = np.array([0.0, 0.2 * top, 0.6 * top])
    bounds = PrivacyBuckets(accuracy=1e-5).compose(mechanism, 2).delta(eps, direction)
    for e, low, high in zip(eps, bounds.lower, bounds.upper, strict=True):
        exact = exact_delta_two(scale, q, float(e), direction)
        assert low <= exact <= high, (e, low, float(exact), high)


def exact_log_moment(b: float, q: float, lam: float, direction: str):
    """``ln E_num[e^(lambda L)]`` over the exact PLD."""
    t, atoms, density, loss = _law(b, q, direction)
    lam = mp.mpf(lam)
    total = mp.fsum(m * mp.exp(lam * x) for x, m in atoms)
    total += mp.quad(lambda u: density(u) * mp.exp(lam * loss(u)), [-t, 0, t])
    return mp.log(total)


@pytest.mark.parametrize(("scale", "q"), SETTINGS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("lam", [0.0, 0.5, 4.0, 60.0])
def test_log_moment_within_its_stated_error_of_mpmath(scale, q, direction, lam):
    mechanism = SubsampledLaplace(scale=scale, sampling_rate=q)
    exact = exact_log_moment(scale, q, lam, direction)
    value = mechanism.log_moment(lam, direction)
    error = mechanism.log_moment_error(lam, direction)
    assert abs(value - exact) <= error
    assert error <= 1e-10 * max(1.0, abs(value))
    slope = mechanism.log_moment_slope(lam, direction)
    step = 1e-5
    numeric = (exact_log_moment(scale, q, lam + step, direction) - exact) / step
    assert slope == pytest.approx(float(numeric), rel=1e-3, abs=1e-6)


@pytest.mark.parametrize(("scale", "q"), SETTINGS, ids=IDS)
def test_max_finite_loss_is_a_tight_upper_bound(scale, q):
    mechanism = SubsampledLaplace(scale=scale, sampling_rate=q)
    t = 1 / mp.mpf(scale)
    exact = {"A/B": -mp.log(1 - q + q * mp.exp(-t)), "B/A": mp.log(1 - q + q * mp.exp(t))}
    for direction, value in exact.items():
        bound = mechanism.max_finite_loss(direction)
        assert value <= bound <= value + 1e-13
        assert mechanism.distinguishing_mass(direction) == 0.0


@pytest.mark.parametrize(("scale", "q"), SETTINGS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_lattice_split_masses_within_their_errors_of_mpmath(scale, q, direction):
    """The dominating split over random intervals of ``l``: ``m+ = ∫ t p``, ``m- = ∫ (1 - t)
    p`` with ``t = (1 - e^-(L - P)) / (1 - e^-W)`` in the release's own loss scale (``-L``
    for B/A: the points swap roles), so that A- and B-masses are kept."""
    mechanism = SubsampledLaplace(scale=scale, sampling_rate=q)
    weights = (1.0, 0.0) if direction == "A/B" else (1.0 - q, q)  # the numerator's sides
    mirrored = direction == "B/A"
    part = ExponentialSplit(mechanism.geometry, weights)
    t = mechanism.geometry.t
    rng = np.random.default_rng(3)
    lo = np.sort(rng.uniform(-t, t, 12))
    hi = np.minimum(lo + rng.choice([1e-6, 1e-3, 0.3, 2.0], 12), t)
    c_lo = np.where(rng.random(12) < 0.3, 1e-4, 0.0)
    c_hi = np.zeros(12)
    plus, minus, err_plus, err_minus = part.interval_masses(lo, hi, c_lo, c_hi, mirrored)
    loss = _law(scale, q, "A/B")[3]
    w_a, w_s = (mp.mpf(w) for w in weights)
    tt = mp.mpf(t)
    sign = -1 if mirrored else 1

    def p(u):
        return (w_a * mp.exp((u - tt) / 2) + w_s * mp.exp(-(u + tt) / 2)) / 4

    def shares(u, low, high):
        """``(to Q, to P)`` of the outcome at ``u`` (module docstring)."""
        d_a, d_b, norm = loss(u) - low, high - loss(u), -mp.expm1(-(high - low))
        if mirrored:
            return mp.exp(-d_b) * -mp.expm1(-d_a) / norm, -mp.expm1(-d_b) / norm
        return -mp.expm1(-d_a) / norm, mp.exp(-d_a) * -mp.expm1(-d_b) / norm

    for i in range(12):
        a, b = mp.mpf(lo[i]), mp.mpf(hi[i])
        low, high = loss(a) - c_lo[i], loss(b) + c_hi[i]
        exact_plus = mp.quad(lambda u, low=low, high=high: shares(u, low, high)[0] * p(u), [a, b])
        exact_minus = mp.quad(lambda u, low=low, high=high: shares(u, low, high)[1] * p(u), [a, b])
        assert abs(plus[i] - exact_plus) <= err_plus[i]
        assert abs(minus[i] - exact_minus) <= err_minus[i]
        assert err_plus[i] <= 1e-12 * (plus[i] + minus[i]) + 1e-300
        # the B-mass (e^-L in the release's own scale) is the outcomes'
        b_exact = mp.quad(lambda u: mp.exp(-sign * loss(u)) * p(u), [a, b])
        b_split = minus[i] * mp.exp(-sign * low) + plus[i] * mp.exp(-sign * high)
        slack = err_minus[i] * mp.exp(-sign * low) + err_plus[i] * mp.exp(-sign * high)
        assert abs(b_split - b_exact) <= slack


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scale", "q", "times"), [(2.0, 0.1, 300), (8.0, 0.6, 100)], ids=["b=2,q=0.1", "b=8,q=0.6"]
)
def test_many_releases_through_the_lattice_bracket_dp_accountings_pld(scale, q, times):
    """Many releases are rounded onto a lattice (A- and B-masses kept); dp_accounting's
    pessimistic PLD (interval 1e-5) lies at or above our lower bound, its optimistic one at or
    below our upper bound."""
    from dp_accounting.pld import privacy_loss_distribution as dp_pld

    eps = np.array([0.5, 1.0, 2.0])
    mechanism = SubsampledLaplace(scale=scale, sampling_rate=q)
    ours = PrivacyBuckets(accuracy=1e-4).compose(mechanism, times)
    bounds = ours.delta(eps)
    assert times >= ROUNDING_RELEASES  # the lattice path
    kwargs = {"value_discretization_interval": 1e-5, "sampling_prob": q}
    pessimistic = dp_pld.from_laplace_mechanism(scale, **kwargs).self_compose(times)
    optimistic = dp_pld.from_laplace_mechanism(
        scale, pessimistic_estimate=False, use_connect_dots=False, **kwargs
    ).self_compose(times)
    above = np.asarray(pessimistic.get_delta_for_epsilon(eps))
    below = np.asarray(optimistic.get_delta_for_epsilon(eps))
    assert (bounds.lower <= above).all() and (below <= bounds.upper).all()
    assert (bounds.upper <= above * (1 + 1e-3)).all()


def test_rate_one_is_refused_and_small_rates_approach_nothing():
    with pytest.raises(InvalidInputError, match="LaplaceMechanism"):
        SubsampledLaplace(scale=1.0, sampling_rate=1.0)
    tiny = SubsampledLaplace(scale=1.0, sampling_rate=1e-9)
    with warnings.catch_warnings():  # a bracket wider than asked at delta ~ 1e-9
        warnings.simplefilter("ignore", CertificationWarning)
        assert PrivacyBuckets().compose(tiny, 3).delta(0.0).upper < 1e-8
    # q -> 1 approaches the Laplace mechanism
    near = PrivacyBuckets(accuracy=1e-4).compose(
        SubsampledLaplace(scale=1.0, sampling_rate=1 - 1e-9), 3
    )
    plain = PrivacyBuckets(accuracy=1e-4).compose(LaplaceMechanism(1.0), 3)
    assert near.delta(1.0).upper == pytest.approx(plain.delta(1.0).upper, rel=1e-4)


def test_extended_ma_is_above_the_certified_lower_bound():
    mechanism = SubsampledLaplace(scale=1.0, sampling_rate=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        lower = PrivacyBuckets(accuracy=1e-3).compose(mechanism, 50).delta(0.5).lower
    assert ExtendedMA().compose(mechanism, 50).delta(0.5).upper >= lower


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"scale": 0.0, "sampling_rate": 0.1}, "scale"),
        ({"scale": math.nan, "sampling_rate": 0.1}, "scale"),
        ({"scale": 1.0, "sampling_rate": 0.0}, "sampling_rate"),
        ({"scale": 1.0, "sampling_rate": 1.5}, "sampling_rate"),
        ({"scale": 1.0, "sampling_rate": 0.1, "clip": -1.0}, "clip"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(arguments, name):
    with pytest.raises(InvalidInputError, match=name):
        SubsampledLaplace(**arguments)
