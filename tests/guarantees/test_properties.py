"""Properties of the public API on the special shapes of the issue (Hypothesis), part 1.

Guarantees checked (SPEC sections 1-3), on pairs built on purpose with zeros inside the
support, spikes (one mass ~1 - 1e-9, the rest tiny), one-point noise and asymmetric A/B
(``tests.strategies.special_pairs``):

* certified ``lower <= exact <= upper`` against exact brute-force composition (every
  outcome tuple, mpmath), for ADP and PDP, in both directions and their maximum; the
  exact single-release functions equal the brute force;
* delta is non-increasing in eps: for every accountant, and across separate queries of
  PrivacyBuckets (a certified lower bound at a larger eps never exceeds a certified upper
  bound at a smaller one);
* eps(delta(eps)) round trips, with the inequalities that follow from monotonicity.

Part 2 (``test_properties_relations.py``): composing in parts, swapping A and B, the
Extended MA against the certified lower bound, and the accuracy warning.
``tests/buckets/test_soundness.py`` checks the bracket on general random pairs; these files
complement it with the special shapes, larger n and the relations between queries.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accountant import (
    Bounds,
    CertificationWarning,
    EpsilonBounds,
    ExtendedMA,
    InfeasibleTargetError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
)
from tests import brute_force
from tests.buckets.test_soundness import PRECISION, assert_brackets, composed_exact, exact_all
from tests.strategies import epsilons, special_pairs

DIRECTIONS = ("A/B", "B/A", "max")
CONVERSIONS = ("tight", "paper")
EPS_GRID = (0.0, 0.3, 1.0, 3.0)
#: Largest number of composed outcomes enumerated by the brute force.
MAX_OUTCOMES = 6**4


def _pair(a: list[float], b: list[float]) -> WorstCasePair:
    return WorstCasePair(np.array(a, dtype=float), np.array(b, dtype=float))


# Hand-picked members of every special shape (Hypothesis tries these first).
SPIKE = [1e-10, 1.0 - 3e-10, 2e-10]
HOLEY = [0.25, 0.0, 0.5, 0.0, 0.25]
ONE_POINT_SHIFT = _pair([1.0, 0.0], [0.0, 1.0])
SPIKE_SHIFT = _pair([*SPIKE, 0.0], [0.0, *SPIKE])
HOLEY_SHIFT = _pair([*HOLEY, 0.0], [0.0, *HOLEY])
ASYMMETRIC = _pair([0.5, 0.0, 0.5], [1e-10, 1.0 - 2e-10, 1e-10])


def _times(pair: WorstCasePair, wanted: int) -> int:
    """``wanted`` releases, fewer if the brute force would enumerate too many outcomes."""
    return max(1, min(wanted, int(math.log(MAX_OUTCOMES) / math.log(max(2, pair.size)))))


def _bounds(
    accountant: PrivacyBuckets, kind: str, eps: float | np.ndarray, direction: str = "max"
) -> Bounds:
    """``accountant.delta`` (``kind="ADP"``) or ``.delta_pdp`` (``"PDP"``) with the
    CertificationWarning silenced: the callers check the brackets themselves."""
    query = accountant.delta if kind == "ADP" else accountant.delta_pdp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        return query(eps, direction=direction)


def _epsilon(accountant: PrivacyBuckets, target: float) -> EpsilonBounds:
    """``accountant.epsilon(target)`` with the CertificationWarning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        return accountant.epsilon(target)


# ---------------------------------------------------------------------------------------
# certified brackets against brute force


@settings(max_examples=40, deadline=None)
@given(pair=special_pairs(max_size=6), times=st.integers(1, 4), eps=epsilons(6.0))
@example(pair=ONE_POINT_SHIFT, times=4, eps=0.0)
@example(pair=SPIKE_SHIFT, times=4, eps=0.5)
@example(pair=HOLEY_SHIFT, times=3, eps=0.0)
@example(pair=ASYMMETRIC, times=4, eps=2.0)
def test_certified_brackets_contain_the_brute_force(
    pair: WorstCasePair, times: int, eps: float
) -> None:
    times = _times(pair, times)
    grid = (*EPS_GRID, eps)
    exact = exact_all([(pair.a, pair.b, times)], grid)
    accountant = PrivacyBuckets().compose(pair, times=times)
    for direction in DIRECTIONS:
        for kind in ("ADP", "PDP"):
            bounds = _bounds(accountant, kind, np.array(grid), direction)
            assert_brackets(bounds, exact[(kind, direction)], f"{kind} {direction} n={times}")


def _exact_pdp_near(
    a: list[mpmath.mpf], b: list[mpmath.mpf], eps: float, margin: float
) -> tuple[float, float]:
    """``(P_A[L > eps + margin], P_A[L > eps - margin])`` in exact arithmetic: a computed
    loss within rounding of eps may fall on either side, nothing else may."""
    with mpmath.workprec(PRECISION):
        low = mpmath.exp(mpmath.mpf(eps) + margin)
        high = mpmath.exp(mpmath.mpf(eps) - margin)
        surely = mpmath.fsum(x for x, y in zip(a, b, strict=True) if x > low * y)
        possibly = mpmath.fsum(x for x, y in zip(a, b, strict=True) if x > high * y)
        return float(min(1, surely)), float(min(1, possibly))


@settings(max_examples=60, deadline=None)
@given(pair=special_pairs(max_size=6), eps=epsilons(6.0))
@example(pair=SPIKE_SHIFT, eps=0.0)
@example(pair=ASYMMETRIC, eps=0.0)
def test_exact_single_release_equals_the_brute_force(pair: WorstCasePair, eps: float) -> None:
    """``exact_delta`` within 1e-12 (its losses ``ln A - ln B`` are rounded);
    ``exact_delta_pdp`` between the PDP at eps +- 1e-9 (a rounded loss may cross eps)."""
    with mpmath.workprec(PRECISION):
        a, b = composed_exact([(pair.a, pair.b, 1)])
    truth = exact_all([(pair.a, pair.b, 1)], (eps,))
    for direction in DIRECTIONS:
        computed = exact_delta(pair, eps, direction=direction)
        assert abs(computed - float(truth[("ADP", direction)][0])) <= 1e-12, direction
        pdp = exact_delta_pdp(pair, eps, direction=direction)
        ranges = [_exact_pdp_near(a, b, eps, 1e-9), _exact_pdp_near(b, a, eps, 1e-9)]
        if direction != "max":
            ranges = [ranges[0] if direction == "A/B" else ranges[1]]
        low = max(r[0] for r in ranges)
        high = max(r[1] for r in ranges)
        assert low - 1e-15 <= pdp <= high + 1e-15, (direction, low, pdp, high)


# ---------------------------------------------------------------------------------------
# delta is non-increasing in eps


@settings(max_examples=30, deadline=None)
@given(
    pair=special_pairs(max_size=6),
    times=st.integers(1, 30),
    eps=st.lists(epsilons(8.0), min_size=2, max_size=5),
)
@example(pair=HOLEY_SHIFT, times=30, eps=[0.0, 8.0])
def test_delta_is_non_increasing_in_eps(pair: WorstCasePair, times: int, eps: list[float]) -> None:
    grid = np.sort(np.array(eps))
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
        for direction in DIRECTIONS:
            values = np.atleast_1d(ma.delta(grid, direction=direction).upper)
            assert (
                (values >= 0.0)
                & (values <= brute_force.total_mass_bound([(pair.a, pair.b, times)]))
            ).all()
            assert (np.diff(values) <= 1e-12 * values[:-1]).all(), (conversion, values)
    for direction in DIRECTIONS:
        for query in (exact_delta, exact_delta_pdp):
            values = np.atleast_1d(query(pair, grid, direction=direction))
            assert (np.diff(values) <= 0.0).all(), (query.__name__, direction, values)
    # Separate scalar queries (each with its own widths) are each certified, so
    # lower(e2) <= delta(e2) <= delta(e1) <= upper(e1) for e1 <= e2.
    accountant = PrivacyBuckets().compose(pair, times=times)
    for kind in ("ADP", "PDP"):
        brackets = [_bounds(accountant, kind, float(e)) for e in grid]
        for k in range(grid.size):
            for j in range(k, grid.size):
                assert brackets[j].lower <= brackets[k].upper, (grid[k], grid[j], brackets)


# ---------------------------------------------------------------------------------------
# eps(delta(eps)) round trips


@settings(max_examples=30, deadline=None)
@given(pair=special_pairs(max_size=6), times=st.integers(1, 20), eps0=epsilons(4.0))
@example(pair=SPIKE_SHIFT, times=20, eps0=1.0)
@example(pair=_pair([0.6, 0.4], [0.4, 0.6]), times=20, eps0=0.5)
def test_privacy_buckets_epsilon_round_trip(pair: WorstCasePair, times: int, eps0: float) -> None:
    """With ``[l0, u0]`` the certified delta at eps0 and D the true (non-increasing) delta:

    * target ``t = u0 (1 + 1e-6) >= D(eps0)``: eps0 reaches t, so the smallest eps that
      does is at most eps0, and so is the certified lower end of ``epsilon(t)``;
    * target ``t = l0 (1 - 1e-6) < D(eps0)``: only eps above eps0 reach t, so the upper
      end of ``epsilon(t)`` (an eps that surely reaches t) exceeds eps0;
    * every eps at or above ``epsilon(t).upper`` is certified: a fresh query there has a
      lower bound <= t (and within the accuracy, an upper bound near t at most);
    * no eps below ``epsilon(t).lower`` reaches t: a fresh upper bound there exceeds t.
    """
    accountant = PrivacyBuckets().compose(pair, times=times)
    lower0, upper0 = _bounds(accountant, "ADP", eps0)
    targets = []
    if 0.0 < upper0 * (1 + 1e-6) < 1.0:
        targets.append(("above", upper0 * (1 + 1e-6)))
    if lower0 * (1 - 1e-6) > 0.0:
        targets.append(("below", lower0 * (1 - 1e-6)))
    for side, target in targets:
        try:
            found = _epsilon(accountant, target)
        except InfeasibleTargetError as error:
            assert "delta=" in str(error)
            # justified only if even a huge eps cannot certify the target
            assert _bounds(accountant, "ADP", 1e6).upper > target, (side, target)
            continue
        assert 0.0 <= found.lower <= found.upper, found
        assert found.delta == target and found.releases == times
        if side == "above":
            assert found.lower <= eps0, (eps0, found, lower0, upper0)
        else:
            assert found.upper > eps0, (eps0, found, lower0, upper0)
        at_upper = _bounds(accountant, "ADP", found.upper)
        assert at_upper.lower <= target, (found, at_upper)
        if at_upper.achieved_accuracy <= accountant.accuracy:
            assert at_upper.upper <= target * (1.0 + 2.0 * accountant.accuracy), (found, at_upper)
        below = found.lower * (1.0 - 1e-6) - 1e-9
        if below > 0.0:
            assert _bounds(accountant, "ADP", below).upper > target, (found, below)


@settings(max_examples=40, deadline=None)
@given(pair=special_pairs(max_size=6), times=st.integers(1, 50), eps0=epsilons(4.0))
@example(pair=HOLEY_SHIFT, times=50, eps0=2.0)
# delta(0) = 1e-6 + 3e-17: ExtendedMA.epsilon raised "could not certify" (its rounding
# guard nudged an eps of 3e-17 by 1e-12 relative steps only)
@example(pair=_pair([1.0, 0.0], [1.0 - 1e-6, 1e-6]), times=1, eps0=1.0)
def test_moments_and_exact_epsilon_round_trip(pair: WorstCasePair, times: int, eps0: float) -> None:
    """The Extended MA's eps is the smallest eps its bound certifies; the exact eps the
    smallest eps whose exact delta is <= target (bisection to a few ulp)."""
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
        target = float(ma.delta(eps0).upper)
        if not 0.0 < target < 1.0:
            continue
        found = ma.epsilon(target).upper
        assert ma.delta(found).upper <= target, (conversion, found)  # certified
        # smallest: eps0 reaches the target, so found <= eps0, unless the bound is flat
        # within rounding between them (slope lambda * delta with lambda ~ 1e-10 turns a
        # rounding of the bound into an eps of ~1e-7); then the bound just below found is
        # still the target up to rounding
        if found > eps0 * (1.0 + 1e-9) + 1e-12:
            just_below = float(ma.delta(eps0 + (found - eps0) * (1.0 - 1e-6)).upper)
            assert just_below >= target * (1.0 - 1e-9), (conversion, eps0, found, just_below)
    exact = float(exact_delta(pair, eps0))
    if 0.0 < exact < 1.0:
        found = exact_epsilon(pair, exact)
        assert exact_delta(pair, found) <= exact and found <= eps0
        before = found - 5.0 * math.ulp(found)
        if before > 0.0:
            assert exact_delta(pair, before) > exact, (eps0, found)
    pdp = float(exact_delta_pdp(pair, eps0))
    if 0.0 < pdp < 1.0:
        found = exact_epsilon(pair, pdp, kind="PDP")
        assert exact_delta_pdp(pair, found) <= pdp and found <= eps0
        if found > 0.0:
            assert exact_delta_pdp(pair, math.nextafter(found, 0.0)) > pdp, (eps0, found)
