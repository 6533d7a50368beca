"""Properties of the public API on the special shapes of the issue (Hypothesis), part 2:
relations between accountants and queries (SPEC sections 1-3).

* composing in parts equals composing at once, in any order (PrivacyBuckets: the
  certified brackets intersect and, where both meet the accuracy, agree within it;
  Extended MA: equal up to floating point);
* swapping A and B swaps the directions (exactly for the exact functions, up to floating
  point for the Extended MA, within the accuracy for PrivacyBuckets);
* the Extended MA (both conversions) is never below the certified lower bound, in delta
  and in eps (n up to 50);
* a CertificationWarning naming the achieved figure is issued exactly when the requested
  accuracy is missed (delta, PDP and eps queries).

Part 1 (``test_properties.py``) holds the brute-force, monotonicity and round-trip checks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accountant import (
    Bounds,
    CertificationWarning,
    ExtendedMA,
    InfeasibleTargetError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta,
    exact_delta_pdp,
)
from tests.guarantees.test_properties import (
    ASYMMETRIC,
    CONVERSIONS,
    DIRECTIONS,
    HOLEY_SHIFT,
    SPIKE_SHIFT,
    _bounds,
    _epsilon,
    _pair,
)
from tests.strategies import epsilons, special_pairs


def _agree_within(first: Bounds, second: Bounds, accuracy: float) -> None:
    """Two certified brackets of one quantity intersect; if both meet ``accuracy``, both
    upper bounds lie in ``[truth, truth / (1 - accuracy)]`` and so agree that closely."""
    lower = np.maximum(np.atleast_1d(first.lower), np.atleast_1d(second.lower))
    upper = np.minimum(np.atleast_1d(first.upper), np.atleast_1d(second.upper))
    assert (lower <= upper).all(), (first, second)
    if max(first.achieved_accuracy, second.achieved_accuracy) <= accuracy:
        a, b = np.atleast_1d(first.upper), np.atleast_1d(second.upper)
        allowed = 1.01 * accuracy / (1.0 - accuracy) * np.maximum(a, b)
        assert (np.abs(a - b) <= allowed).all(), (first, second)


# ---------------------------------------------------------------------------------------
# composing in parts, and in any order


@settings(max_examples=20, deadline=None)
@given(
    pair=special_pairs(max_size=6),
    other=special_pairs(max_size=4),
    first=st.integers(1, 10),
    second=st.integers(1, 10),
)
@example(pair=SPIKE_SHIFT, other=ASYMMETRIC, first=7, second=5)
def test_composing_in_parts_equals_composing_at_once(
    pair: WorstCasePair, other: WorstCasePair, first: int, second: int
) -> None:
    eps = np.array([0.0, 0.5, 2.0])
    copy = WorstCasePair(pair.a, pair.b)  # another object: a separate component
    at_once = PrivacyBuckets().compose(pair, times=first + second)
    in_parts = PrivacyBuckets().compose(pair, times=first).compose(copy, times=second)
    assert len(in_parts.components) == 2 and in_parts.releases == at_once.releases
    forward = PrivacyBuckets().compose(pair, times=first).compose(other, times=second)
    backward = PrivacyBuckets().compose(other, times=second).compose(pair, times=first)
    for direction in DIRECTIONS:
        for kind in ("ADP", "PDP"):
            once, parts, ab, ba = (
                _bounds(acc, kind, eps, direction) for acc in (at_once, in_parts, forward, backward)
            )
            _agree_within(once, parts, at_once.accuracy)
            _agree_within(ab, ba, at_once.accuracy)
    for conversion in CONVERSIONS:
        ma_once = ExtendedMA(conversion=conversion).compose(pair, times=first + second)
        ma_parts = ExtendedMA(conversion=conversion).compose(pair, times=first)
        ma_parts = ma_parts.compose(copy, times=second)
        for direction in DIRECTIONS:
            np.testing.assert_allclose(
                ma_parts.delta(eps, direction=direction).upper,
                ma_once.delta(eps, direction=direction).upper,
                rtol=1e-9,
                atol=1e-300,
            )
        mixed = ExtendedMA(conversion=conversion).compose(pair, first).compose(other, second)
        swapped = ExtendedMA(conversion=conversion).compose(other, second).compose(pair, first)
        np.testing.assert_allclose(
            mixed.delta(eps).upper, swapped.delta(eps).upper, rtol=1e-9, atol=1e-300
        )


# ---------------------------------------------------------------------------------------
# swapping A and B swaps the directions


@settings(max_examples=30, deadline=None)
@given(pair=special_pairs(max_size=6), times=st.integers(1, 20), eps=epsilons(5.0))
@example(pair=ASYMMETRIC, times=20, eps=0.5)
def test_swapping_a_and_b_swaps_the_directions(pair: WorstCasePair, times: int, eps: float) -> None:
    grid = np.array([0.0, eps, 1.5])
    flipped = pair.flipped()
    swaps = (("A/B", "B/A"), ("B/A", "A/B"), ("max", "max"))
    for mine, theirs in swaps:
        for query in (exact_delta, exact_delta_pdp):
            np.testing.assert_array_equal(
                query(pair, grid, direction=mine), query(flipped, grid, direction=theirs)
            )
        for conversion in CONVERSIONS:
            forward = ExtendedMA(conversion=conversion).compose(pair, times=times)
            backward = ExtendedMA(conversion=conversion).compose(flipped, times=times)
            np.testing.assert_allclose(
                forward.delta(grid, direction=mine).upper,
                backward.delta(grid, direction=theirs).upper,
                rtol=1e-12,
                atol=1e-300,
            )
            assert forward.distinguishing_mass(mine) == backward.distinguishing_mass(theirs)
    forward = PrivacyBuckets().compose(pair, times=times)
    backward = PrivacyBuckets().compose(flipped, times=times)
    for mine, theirs in swaps:
        for kind in ("ADP", "PDP"):
            first = _bounds(forward, kind, grid, mine)
            second = _bounds(backward, kind, grid, theirs)
            _agree_within(first, second, forward.accuracy)


# ---------------------------------------------------------------------------------------
# Extended MA against the certified lower bound


@settings(max_examples=25, deadline=None)
@given(
    pair=special_pairs(max_size=6),
    times=st.integers(1, 50),
    eps=st.lists(epsilons(6.0), min_size=1, max_size=3),
    target=st.sampled_from([1e-1, 1e-3, 1e-6, 1e-10]),
)
@example(pair=SPIKE_SHIFT, times=50, eps=[0.0, 3.0], target=1e-6)
@example(pair=_pair([0.6, 0.4], [0.4, 0.6]), times=50, eps=[0.0, 2.0, 6.0], target=1e-3)
def test_extended_ma_is_never_below_the_certified_lower_bound(
    pair: WorstCasePair, times: int, eps: list[float], target: float
) -> None:
    """The Extended MA is an upper bound on delta: never below a certified lower bound;
    its eps reaches the target: never below the certified lower end of the eps bracket."""
    grid = np.array(sorted(eps))
    accountant = PrivacyBuckets().compose(pair, times=times)
    try:
        eps_bounds = _epsilon(accountant, target)
    except InfeasibleTargetError:
        eps_bounds = None
    for direction in DIRECTIONS:
        lower = np.atleast_1d(_bounds(accountant, "ADP", grid, direction).lower)
        for conversion in CONVERSIONS:
            ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
            values = np.atleast_1d(ma.delta(grid, direction=direction).upper)
            assert (values >= lower).all(), (direction, conversion, values, lower)
            if direction == "max" and eps_bounds is not None:
                try:
                    ma_eps = ma.epsilon(target).upper
                except InfeasibleTargetError:
                    continue
                assert ma_eps >= eps_bounds.lower, (conversion, ma_eps, eps_bounds)


# ---------------------------------------------------------------------------------------
# warnings, not silence


def _certification_messages(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, CertificationWarning)]


@settings(max_examples=25, deadline=None)
@given(
    pair=special_pairs(max_size=6),
    times=st.integers(1, 20),
    eps=st.lists(epsilons(6.0), min_size=1, max_size=3),
    accuracy=st.sampled_from([1e-2, 1e-4, 1e-8, 1e-14]),
    target=st.sampled_from([0.3, 1e-3, 1e-8]),
)
@example(pair=HOLEY_SHIFT, times=20, eps=[0.0, 1.0], accuracy=1e-14, target=0.3)
def test_a_missed_accuracy_warns_with_the_achieved_figure(
    pair: WorstCasePair, times: int, eps: list[float], accuracy: float, target: float
) -> None:
    """``achieved_accuracy`` is the widest relative bracket; a CertificationWarning naming
    it is issued exactly when it exceeds the requested accuracy (delta, PDP and eps)."""
    accountant = PrivacyBuckets(accuracy=accuracy).compose(pair, times=times)
    grid = np.array(eps)
    for query in (accountant.delta, accountant.delta_pdp):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bounds = query(grid)
        lower, upper = np.atleast_1d(bounds.lower), np.atleast_1d(bounds.upper)
        widest = max(((u - lo) / u if u > 0 else 0.0) for lo, u in zip(lower, upper, strict=True))
        assert bounds.achieved_accuracy == pytest.approx(widest, rel=1e-12, abs=1e-300)
        messages = _certification_messages(caught)
        if bounds.achieved_accuracy > accuracy:
            assert len(messages) == 1, messages
            assert f"{bounds.achieved_accuracy:.3g}" in messages[0]
            assert f"{accuracy:g}" in messages[0]
        else:
            assert messages == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            found = accountant.epsilon(target)
        except InfeasibleTargetError:
            return
    achieved = (found.upper - found.lower) / found.upper if found.upper > 0 else 0.0
    messages = _certification_messages(caught)
    if achieved > accuracy:
        assert len(messages) == 1 and f"{achieved:.3g}" in messages[0], messages
    else:
        assert messages == [], messages
