"""The guarantee of the PrivacyBuckets engine (SPEC section 2): ``lower <= true delta <= upper``
for every input, every n, every eps, in both directions, for ADP and PDP.

The true deltas come from methods independent of the engine:

(a) small pairs: enumerate every outcome tuple of the composition (the Kronecker-product
    layout of ``tests/brute_force.py``) in exact arithmetic (mpmath with enough bits that
    every product of masses is exact), then ``sum_o max(0, A - e^eps B)`` and
    ``P_A[L > eps] = A-mass{A > e^eps B}`` (SPEC section 1);
(b) discretised truncated Gaussians shifted by ``m`` grid steps: the losses
    ``L = (s^2 - 2 x s) / (2 sigma^2)`` lie on a lattice of spacing ``m h^2 / sigma^2``, so
    the composed PLD is the n-fold convolution of the lattice-indexed A- and B-masses
    (computed here in extended precision with a rigorous bound of its own rounding);
(c) randomized response ``A = (p, 1-p)``, ``B = (1-p, p)``, ``a = ln(p / (1-p))``: after n
    releases ``delta = sum_k C(n,k) p^k (1-p)^(n-k) max(0, 1 - e^(eps - (2k-n) a))``
    (the binomial formula; Kairouz, Oh & Viswanath, "The Composition Theorem for
    Differential Privacy", ICML 2015, where randomized response is the extremal
    mechanism), evaluated in mpmath.

Pmfs are float arrays whose exact sum may differ from 1 by an ulp; a sum of masses can
then exceed 1, and the comparison uses ``min(1, exact)`` (a delta is a probability and
the engine reports bounds in [0, 1]).
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accountant import ExtendedMA, PrivacyBuckets, WorstCasePair
from accountant.errors import CertificationWarning
from accountant.noise import truncated_gaussian
from tests import brute_force
from tests.strategies import epsilons, worst_case_pairs

# Bounds that do not reach the requested accuracy warn; they must still be certified,
# which is what these tests check. (pytest turns RuntimeWarning into errors.)
pytestmark = pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")

DIRECTIONS = ("A/B", "B/A", "max")
EPS_GRID = (0.0, 0.05, 0.5, 1.0, 2.0, 5.0)
#: mpmath precision: products of up to 6 float64 masses are exact (6 * 53 bits).
PRECISION = 400


# ---------------------------------------------------------------------------------------
# exact oracles


def _mp(x: float) -> mpmath.mpf:
    return mpmath.mpf(float(x))


def composed_exact(parts: list[tuple[np.ndarray, np.ndarray, int]]):
    """Every outcome tuple of the composition with its exact A- and B-mass (as in
    ``tests.brute_force.composed_arrays``, but in exact arithmetic)."""
    a_total, b_total = [mpmath.mpf(1)], [mpmath.mpf(1)]
    for a, b, times in parts:
        a_mp, b_mp = [_mp(v) for v in a], [_mp(v) for v in b]
        for _ in range(times):
            a_total = [x * y for x in a_total for y in a_mp]
            b_total = [x * y for x in b_total for y in b_mp]
    return a_total, b_total


def exact_adp(a, b, eps: float) -> mpmath.mpf:
    scale = mpmath.exp(_mp(eps))
    return min(
        mpmath.mpf(1),
        mpmath.fsum(x - scale * y for x, y in zip(a, b, strict=True) if x > scale * y),
    )


def exact_pdp(a, b, eps: float) -> mpmath.mpf:
    """``P_A[L > eps]``; ``L = +inf`` where ``B = 0 < A`` (counted), ``L = eps`` not."""
    scale = mpmath.exp(_mp(eps))
    return min(mpmath.mpf(1), mpmath.fsum(x for x, y in zip(a, b, strict=True) if x > scale * y))


def exact_all(parts, eps_values) -> dict:
    """``{(kind, direction): [exact delta per eps]}`` for ADP/PDP and every direction."""
    with mpmath.workprec(PRECISION):
        a, b = composed_exact(parts)
        out = {}
        for kind, fn in (("ADP", exact_adp), ("PDP", exact_pdp)):
            ab = [fn(a, b, e) for e in eps_values]
            ba = [fn(b, a, e) for e in eps_values]
            out[(kind, "A/B")] = ab
            out[(kind, "B/A")] = ba
            out[(kind, "max")] = [max(x, y) for x, y in zip(ab, ba, strict=True)]
    return out


def assert_brackets(bounds, exact, context="", total: float = 1.0 + 1e-12) -> None:
    """``lower <= exact <= upper`` for every eps, compared exactly (no tolerance); the
    upper bound is at most ``total``, the composed total mass (masses as given: a pmf
    normalised in floats may sum to 1 + 1e-16, see ``brute_force.total_mass_bound``)."""
    lower = np.atleast_1d(bounds.lower)
    upper = np.atleast_1d(bounds.upper)
    assert lower.shape == upper.shape == (len(exact),)
    for k, truth in enumerate(exact):
        low, high = float(lower[k]), float(upper[k])
        assert 0.0 <= low <= high <= total, (context, k, low, high)
        assert mpmath.mpf(low) <= truth, (context, k, "lower", low, float(truth), high)
        assert truth <= mpmath.mpf(high), (context, k, "upper", low, float(truth), high)


def check_against_brute_force(parts, accountant: PrivacyBuckets, eps_values) -> None:
    exact = exact_all(parts, eps_values)
    eps = np.array(eps_values)
    for direction in DIRECTIONS:
        adp = accountant.delta(eps, direction=direction)
        assert_brackets(adp, exact[("ADP", direction)], f"ADP {direction}")
        pdp = accountant.delta_pdp(eps, direction=direction)
        assert_brackets(pdp, exact[("PDP", direction)], f"PDP {direction}")


# ---------------------------------------------------------------------------------------
# (a) small pairs against brute force


def _pair(a, b) -> WorstCasePair:
    return WorstCasePair(np.array(a, dtype=float), np.array(b, dtype=float))


@settings(max_examples=100, deadline=None)
@given(pair=worst_case_pairs(max_size=6), times=st.integers(1, 3), eps=epsilons())
# one-point noise, a spike, disjoint supports, identical pmfs, tiny deltas (~1e-12, ~1e-300)
@example(pair=_pair([1.0], [1.0]), times=3, eps=0.0)
@example(pair=_pair([1.0, 0.0], [0.0, 1.0]), times=2, eps=1.0)
@example(pair=_pair([0.0, 1.0, 0.0], [0.25, 0.5, 0.25]), times=3, eps=0.5)
@example(pair=_pair([1.0 - 1e-12, 1e-12], [1.0, 0.0]), times=3, eps=0.0)
@example(pair=_pair([1.0 - 1e-12, 1e-12, 0.0], [1.0 - 2e-12, 1e-12, 1e-12]), times=3, eps=0.3)
@example(pair=_pair([1.0 - 1e-300, 1e-300], [1.0, 0.0]), times=2, eps=0.0)
@example(pair=_pair([0.5, 0.5 - 1e-13, 1e-13], [0.5, 0.5, 0.0]), times=3, eps=4.0)
# distinguishing mass 1 - 2^-54, which math.fsum rounds to exactly 1
@example(pair=_pair([0.5, 0.5 - 2.0**-54, 2.0**-54], [0.0, 0.0, 1.0]), times=2, eps=0.0)
def test_small_pairs_brute_force(pair, times, eps):
    accountant = PrivacyBuckets().compose(pair, times=times)
    check_against_brute_force([(pair.a, pair.b, times)], accountant, (*EPS_GRID, eps))


@settings(max_examples=40, deadline=None)
@given(
    first=worst_case_pairs(max_size=4),
    second=worst_case_pairs(max_size=4),
    times=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    eps=epsilons(),
)
@example(
    first=_pair([0.6, 0.4], [0.4, 0.6]),
    second=_pair([1.0 - 1e-12, 1e-12, 0.0], [0.5, 0.0, 0.5]),
    times=(2, 2),
    eps=0.7,
)
def test_heterogeneous_composition_brute_force(first, second, times, eps):
    accountant = PrivacyBuckets().compose(first, times=times[0]).compose(second, times=times[1])
    parts = [(first.a, first.b, times[0]), (second.a, second.b, times[1])]
    check_against_brute_force(parts, accountant, (*EPS_GRID, eps))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0, 0.0], [0.0, 1.0]),  # disjoint supports: delta = 1 at every eps
        ([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]),
        ([0.5, 0.5 - 2.0**-54, 2.0**-54], [0.0, 0.0, 1.0]),  # omega sums to 1 - 2^-54
    ],
)
def test_fully_distinguishing_pairs_are_tight(a, b):
    """A distinguishing mass that rounds to 1 (``ln(1 - Omega) = -inf``) once gave the
    bracket [0, 1] (an infinite margin in ``bounds._omega_bounds``); delta is 1 here."""
    pair = _pair(a, b)
    eps = np.array([0.0, 1.0, 10.0])
    exact = exact_all([(pair.a, pair.b, 3)], eps)
    accountant = PrivacyBuckets().compose(pair, times=3)
    for kind, query in (("ADP", accountant.delta), ("PDP", accountant.delta_pdp)):
        bounds = query(eps, direction="A/B")
        assert_brackets(bounds, exact[(kind, "A/B")], kind)
        assert (bounds.lower >= 1.0 - 1e-12).all(), bounds


# ---------------------------------------------------------------------------------------
# (c) randomized response: the binomial formula


class RandomizedResponse:
    """``A = (p, q)``, ``B = (q, p)`` with ``p = e^a / (1 + e^a)`` rounded to float and
    ``q = 1 - p`` (exact in float for p in [1/2, 1]); the true loss is ``ln(p/q)``."""

    def __init__(self, a: float, times: int):
        self.p = math.exp(a) / (1.0 + math.exp(a))
        self.q = 1.0 - self.p
        assert self.p + self.q == 1.0 and self.p - (1.0 - self.q) == 0.0
        self.pair = WorstCasePair(np.array([self.p, self.q]), np.array([self.q, self.p]))
        self.times = times
        # float version of the formula, only to locate eps with a given delta
        k = np.arange(times + 1)
        log_choose = np.array(
            [math.lgamma(times + 1) - math.lgamma(i + 1) - math.lgamma(times - i + 1) for i in k]
        )
        self.log_a = log_choose + k * math.log(self.p) + (times - k) * math.log(self.q)
        self.losses = (2 * k - times) * (math.log(self.p) - math.log(self.q))

    def approximate(self, eps: float) -> float:
        above = self.losses > eps
        return float(np.sum(np.exp(self.log_a[above]) * -np.expm1(eps - self.losses[above])))

    def eps_for(self, target: float) -> float | None:
        """An eps whose delta is close to ``target`` (bisection on the float formula)."""
        low, high = 0.0, float(self.losses[-1])
        if self.approximate(low) <= target:
            return None
        for _ in range(100):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if self.approximate(middle) > target else (low, middle)
        return high

    def exact(self, eps: float) -> mpmath.mpf:
        """``sum_k C(n,k) max(0, p^k q^(n-k) - e^eps q^k p^(n-k))``, both directions alike."""
        with mpmath.workprec(256):
            p, q, n = _mp(self.p), _mp(self.q), self.times
            scale = mpmath.exp(_mp(eps))
            total = mpmath.mpf(0)
            for k in range(n + 1):
                term = p**k * q ** (n - k) - scale * q**k * p ** (n - k)
                if term > 0:
                    total += mpmath.binomial(n, k) * term
            return min(mpmath.mpf(1), total)


RR_CASES = [
    (0.5, 1),
    (1.0, 10),
    (2.0, 100),
    (0.05, 1000),
    pytest.param(0.3, 500, marks=pytest.mark.slow),
    pytest.param(0.1, 1000, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("a", "times"), RR_CASES)
def test_randomized_response_binomial(a, times):
    rr = RandomizedResponse(a, times)
    eps = [0.0, 0.5, 1.0, 2.0, 5.0]
    targets = (1e-1, 1e-3, 1e-6, 1e-9, 1e-12)
    eps += [e for e in (rr.eps_for(t) for t in targets) if e is not None]
    exact = [rr.exact(e) for e in eps]
    # the eps for 1e-12 really gives a delta near 1e-12
    if rr.eps_for(1e-12) is not None:
        assert 1e-13 < exact[-1] < 1e-11
    accountant = PrivacyBuckets().compose(rr.pair, times=times)
    for direction in DIRECTIONS:  # symmetric pair: both directions are the same
        bounds = accountant.delta(np.array(eps), direction=direction)
        assert_brackets(bounds, exact, f"RR {direction}")
        for k, truth in enumerate(exact):
            low, high = float(bounds.lower[k]), float(bounds.upper[k])
            if truth >= 1e-6:  # a lattice of spacing 2a: the bracket must be tiny
                assert high - low <= 1e-6 * float(truth), (eps[k], low, float(truth), high)


# ---------------------------------------------------------------------------------------
# properties of the certified bounds


@settings(max_examples=40, deadline=None)
@given(
    pair=worst_case_pairs(max_size=12),
    times=st.integers(1, 40),
    eps=st.lists(epsilons(8.0), min_size=1, max_size=8),
)
# Without the monotone envelope of engine._query this one had a PDP B/A lower bound rising
# from 0 at eps = 0 to 1e-300 at eps = 0.3 (error terms over buckets that stop counting).
@example(
    pair=_pair(
        [0.9999991913758288, *[0.0] * 8, 8.086241711246652e-07],
        [0.9999991913758288, *[0.0] * 7, 9.999991913758288e-301, 8.086241711246652e-07],
    ),
    times=1,
    eps=[0.0],
)
def test_bounds_ordered_in_unit_interval_and_monotone(pair, times, eps):
    accountant = PrivacyBuckets().compose(pair, times=times)
    grid = np.sort(np.array([*eps, 0.0, 0.3, 1.0, 3.0]))
    for direction in DIRECTIONS:
        for bounds in (
            accountant.delta(grid, direction=direction),
            accountant.delta_pdp(grid, direction=direction),
        ):
            lower, upper = bounds.lower, bounds.upper
            assert lower.shape == upper.shape == grid.shape
            total = brute_force.total_mass_bound([(pair.a, pair.b, times)])
            assert (lower >= 0.0).all() and (upper <= total).all()
            assert (lower <= upper).all()
            # the true delta is non-increasing in eps; so is the certified lower bound
            assert (np.diff(lower) <= 0.0).all(), (direction, grid, lower)
            # the upper bound may wobble by its error terms only
            assert (np.diff(upper) <= 1e-9 * upper[:-1] + 1e-15).all(), (direction, upper)


def _overlap(first, second) -> None:
    """Two certified brackets of the same quantity must intersect."""
    low = np.maximum(np.atleast_1d(first.lower), np.atleast_1d(second.lower))
    high = np.minimum(np.atleast_1d(first.upper), np.atleast_1d(second.upper))
    assert (low <= high).all(), (first, second)


@settings(max_examples=20, deadline=None)
@given(pair=worst_case_pairs(max_size=8), times=st.integers(1, 20))
def test_vectorised_eps_equals_scalar_calls(pair, times):
    """With the same buckets, a vector query gives the scalar results tightened to their
    monotone envelope (delta is non-increasing in eps, so that is still certified):
    ``lower[k] = max_{eps_j >= eps_k} lower_j`` and ``upper[k] = min_{eps_j <= eps_k} upper_j``.
    """
    eps = np.array([1.0, 0.0, 2.5, 0.2])  # unsorted on purpose
    vectors = PrivacyBuckets().compose(pair, times=times)
    scalars = PrivacyBuckets().compose(pair, times=times)  # its own cache of compositions
    for direction in DIRECTIONS:
        vector = vectors.delta(eps, direction=direction)
        single = [scalars.delta(float(e), direction=direction) for e in eps]
        assert all(isinstance(b.lower, float) and isinstance(b.upper, float) for b in single)
        same = all(b.bucket_width == vector.bucket_width for b in single)
        for k, e in enumerate(eps):
            # always: the same truth, so the brackets intersect
            assert max(single[k].lower, vector.lower[k]) <= min(single[k].upper, vector.upper[k])
            if same and direction != "max":  # (for "max" the two widths may differ)
                assert vector.lower[k] == max(
                    b.lower for b, f in zip(single, eps, strict=True) if f >= e
                )
                assert vector.upper[k] == min(
                    b.upper for b, f in zip(single, eps, strict=True) if f <= e
                )


def test_vectorised_eps_equals_scalar_calls_on_a_lattice():
    """On a lattice the width is fixed by the lattice, so the numbers agree exactly."""
    pair = WorstCasePair.additive(truncated_gaussian(1.0, 8.0, 0.1), 1.0)
    accountant = PrivacyBuckets().compose(pair, times=12)
    eps = np.array([0.0, 0.33, 1.07, 2.5, 4.01])
    vector = accountant.delta(eps)
    matrix = accountant.delta(eps.reshape(1, -1))
    np.testing.assert_array_equal(matrix.lower.reshape(-1), vector.lower)
    fresh = PrivacyBuckets().compose(pair, times=12)
    for k, e in enumerate(eps):
        scalar = fresh.delta(float(e))
        assert scalar.lower == vector.lower[k]
        assert scalar.upper == vector.upper[k]


@settings(max_examples=15, deadline=None)
@given(
    pair=worst_case_pairs(max_size=8),
    parts=st.lists(st.integers(1, 6), min_size=2, max_size=3),
)
def test_composing_in_parts_equals_at_once(pair, parts):
    eps = np.array([0.0, 0.5, 1.0, 3.0])
    at_once = PrivacyBuckets().compose(pair, times=sum(parts))
    # separate (equal) pair objects: separate components of the composition
    in_parts = PrivacyBuckets()
    for count in parts:
        in_parts = in_parts.compose(WorstCasePair(pair.a, pair.b), times=count)
    # the same object again: its count grows (one component)
    same_object = PrivacyBuckets()
    for count in parts:
        same_object = same_object.compose(pair, times=count)
    assert in_parts.releases == same_object.releases == at_once.releases == sum(parts)
    for direction in DIRECTIONS:
        once = at_once.delta(eps, direction=direction)
        _overlap(once, in_parts.delta(eps, direction=direction))
        again = same_object.delta(eps, direction=direction)
        np.testing.assert_array_equal(again.lower, once.lower)
        np.testing.assert_array_equal(again.upper, once.upper)
        _overlap(
            at_once.delta_pdp(eps, direction=direction),
            in_parts.delta_pdp(eps, direction=direction),
        )


@settings(max_examples=25, deadline=None)
@given(pair=worst_case_pairs(max_size=8), times=st.integers(1, 12))
def test_swapping_a_and_b_swaps_the_directions(pair, times):
    eps = np.array([0.0, 0.4, 1.0, 2.0])
    forward = PrivacyBuckets().compose(pair, times=times)
    flipped = PrivacyBuckets().compose(pair.flipped(), times=times)
    for mine, theirs in (("A/B", "B/A"), ("B/A", "A/B"), ("max", "max")):
        _overlap(forward.delta(eps, direction=mine), flipped.delta(eps, direction=theirs))
        _overlap(forward.delta_pdp(eps, direction=mine), flipped.delta_pdp(eps, direction=theirs))


def test_swapping_a_and_b_on_an_asymmetric_pair():
    """An asymmetric pair (the two directions differ a lot): the brackets swap."""
    pair = _pair([0.7, 0.2, 0.1, 0.0], [0.1, 0.2, 0.3, 0.4])
    eps = np.array([0.0, 0.5, 1.5])
    forward = PrivacyBuckets().compose(pair, times=4)
    flipped = PrivacyBuckets().compose(pair.flipped(), times=4)
    ab = forward.delta(eps, direction="A/B")
    ba = forward.delta(eps, direction="B/A")
    assert (ab.lower > ba.upper).any() or (ba.lower > ab.upper).any()  # really asymmetric
    np.testing.assert_allclose(flipped.delta(eps, direction="B/A").upper, ab.upper, rtol=1e-9)
    np.testing.assert_allclose(flipped.delta(eps, direction="A/B").upper, ba.upper, rtol=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    pair=worst_case_pairs(max_size=8),
    times=st.integers(1, 30),
    eps=st.lists(epsilons(6.0), min_size=1, max_size=4),
)
@example(pair=_pair([0.6, 0.4], [0.4, 0.6]), times=30, eps=[0.0, 2.0, 6.0])
def test_extended_ma_is_above_the_certified_lower_bound(pair, times, eps):
    """The Extended MA (both conversions) is an upper bound on delta, so never below the
    certified lower bound."""
    grid = np.array(eps)
    bounds = PrivacyBuckets().compose(pair, times=times).delta(grid)
    for conversion in ("tight", "paper"):
        ma = np.atleast_1d(
            ExtendedMA(conversion=conversion).compose(pair, times=times).delta(grid).upper
        )
        assert (ma >= np.atleast_1d(bounds.lower)).all(), (conversion, ma, bounds)


def test_extended_ma_above_lower_bound_on_gaussian_and_rr():
    for pair, times in (
        (WorstCasePair.additive(truncated_gaussian(1.0, 8.0, 0.1), 1.0), 16),
        (RandomizedResponse(0.2, 200).pair, 200),
    ):
        grid = np.linspace(0.0, 6.0, 13)
        lower = PrivacyBuckets().compose(pair, times=times).delta(grid).lower
        for conversion in ("tight", "paper"):
            ma = ExtendedMA(conversion=conversion).compose(pair, times=times).delta(grid).upper
            assert (ma >= lower).all(), (conversion, ma, lower)


def test_no_warning_other_than_certification():
    """Querying emits no RuntimeWarning (pytest would raise) and at most the documented
    CertificationWarning."""
    pair = _pair([0.5, 0.3, 0.2, 0.0], [0.0, 0.2, 0.3, 0.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivacyBuckets().compose(pair, times=5).delta(np.array([0.0, 1.0, 40.0]))
    assert all(issubclass(w.category, CertificationWarning) for w in caught)
