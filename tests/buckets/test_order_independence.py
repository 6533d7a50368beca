"""An answer of :class:`~accountant.PrivacyBuckets` depends on the accountant and the query
only, never on the queries asked before it: a queried accountant and a fresh copy (for
example one loaded from a file) agree to the last bit.

The defect this pins: a pair whose two directions have the same losses and masses but
other certified mass bounds (a symmetric pair's reversed PLD) let B/A reuse A/B's
composition when A/B happened to be composed first, so ``delta(0.7, "B/A")`` changed in
its last bits after a ``"max"`` query.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import PrivacyBuckets, mechanisms, privacy_loss_distribution
from accountant.buckets.sources import PLDRelease
from tests.storage.cases import lopsided_pair, small_pair
from tests.strategies import worst_case_pairs


def _same(first, second) -> None:
    """Two results of one query: the same numbers to the last bit."""
    for name in ("lower", "upper"):
        x, y = np.asarray(getattr(first, name)), np.asarray(getattr(second, name))
        assert x.tobytes() == y.tobytes(), (name, x, y)


def _answer(accountant, query):
    kind, argument, direction = query
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if kind == "delta":
                return accountant.delta(argument, direction)
            if kind == "pdp":
                return accountant.delta_pdp(argument, direction)
            return accountant.epsilon(argument, direction)
        except ValueError as exc:  # an infeasible target: the same message every time
            return str(exc)


def _check_sequence(make, queries) -> None:
    """Ask ``queries`` in order of one accountant; each answer equals a fresh one's."""
    used = make()
    for query in queries:
        found, expected = _answer(used, query), _answer(make(), query)
        if isinstance(expected, str):
            assert found == expected
        else:
            _same(found, expected)


def _reported():
    """70 x a symmetric PLD given by arrays, 70 x a Gaussian, one pair (the report)."""
    pld = privacy_loss_distribution(lopsided_pair(), "A/B")
    return (
        PrivacyBuckets()
        .compose(pld, 70)
        .compose(mechanisms.GaussianMechanism(3.0), 70)
        .compose(small_pair(), 1)
    )


@pytest.mark.parametrize("before", [[("delta", 1.0, "max")], [("delta", 0.0, "max")]])
def test_the_reported_b_over_a_delta_does_not_depend_on_an_earlier_max_query(before):
    _check_sequence(_reported, [*before, ("delta", 0.7, "B/A"), ("delta", 0.7, "A/B")])


def test_a_symmetric_pld_whose_reversal_has_other_mass_bounds_takes_their_hull():
    pld = privacy_loss_distribution(lopsided_pair(), "A/B")
    reversed_pld = pld.reversed()
    assert np.array_equal(reversed_pld.losses, pld.losses)
    assert reversed_pld.mass_logs != pld.mass_logs
    release = PLDRelease(pld)
    assert release.same_directions()
    for direction, own in (("A/B", pld), ("B/A", reversed_pld)):
        used = release.bucket(direction, 1.0, 0.0, 0.0).mass_logs
        for part in ("total", "finite_fraction"):
            low, high = getattr(used, part), getattr(own.mass_logs, part)
            assert low.low <= high.low and high.high <= low.high, (direction, part)


_DIRECTIONS = st.sampled_from(["max", "A/B", "B/A"])
_QUERIES = st.one_of(
    st.tuples(st.just("delta"), st.sampled_from([0.0, 0.3, 1.0, 2.5]), _DIRECTIONS),
    st.tuples(st.just("pdp"), st.sampled_from([0.0, 0.5, 1.5]), _DIRECTIONS),
    st.tuples(st.just("epsilon"), st.sampled_from([1e-1, 1e-3]), _DIRECTIONS),
)


@settings(max_examples=25, deadline=None)
@given(
    pairs=st.lists(worst_case_pairs(max_size=6), min_size=1, max_size=3),
    times=st.lists(st.integers(1, 80), min_size=3, max_size=3),
    symmetric_pld=st.booleans(),
    queries=st.lists(_QUERIES, min_size=2, max_size=5),
)
def test_answers_do_not_depend_on_the_queries_before_them(pairs, times, symmetric_pld, queries):
    mechanisms_: list = list(pairs)
    if symmetric_pld:
        mechanisms_.append(privacy_loss_distribution(lopsided_pair(), "A/B"))

    def make() -> PrivacyBuckets:
        accountant = PrivacyBuckets(accuracy=1e-2)
        for mechanism, count in zip(mechanisms_, [*times, times[0]], strict=False):
            accountant = accountant.compose(mechanism, count)
        return accountant

    _check_sequence(make, queries)


def test_the_check_sees_a_difference():
    """The comparison is strict: bounds that differ in the last bit are caught."""
    first = PrivacyBuckets(accuracy=1e-2).compose(small_pair(), 2).delta(0.5)
    moved = attrs.evolve(first, upper=float(np.nextafter(first.upper, 2.0)))
    with pytest.raises(AssertionError):
        _same(first, moved)
