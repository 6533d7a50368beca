"""The PLD keeps which outcome of the pair each entry is (``OutcomeIndex``): every mass
and every loss maps back to the pair's arrays, in both directions and after reversal."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accountant import InvalidInputError, WorstCasePair, privacy_loss_distribution
from accountant.pairs.outcomes import OutcomeIndex
from accountant.pairs.pld import PrivacyLossDistribution
from tests.strategies import special_pairs, worst_case_pairs

ANY_PAIR = st.one_of(worst_case_pairs(), special_pairs())


def _maps_back(pld: PrivacyLossDistribution, first: np.ndarray, second: np.ndarray) -> None:
    index = pld.outcomes
    assert index.count == first.size
    assert np.array_equal(first[index.finite], pld.mass_a)
    assert np.array_equal(second[index.finite], pld.mass_b)
    assert np.array_equal(np.log(first[index.finite]) - np.log(second[index.finite]), pld.losses)
    assert math.fsum(first[index.distinguishing].tolist()) == pld.distinguishing_mass
    assert math.fsum(second[index.impossible].tolist()) == pld.impossible_mass_b
    assert (first[index.distinguishing] > 0).all() and (second[index.distinguishing] == 0).all()
    neither = np.ones(first.size, dtype=bool)
    neither[np.concatenate([index.finite, index.distinguishing, index.impossible])] = False
    assert ((first[neither] == 0) & (second[neither] == 0)).all()


@given(pair=ANY_PAIR)
def test_every_entry_maps_back_to_its_outcome_in_both_directions(pair):
    _maps_back(privacy_loss_distribution(pair, "A/B"), pair.a, pair.b)
    _maps_back(privacy_loss_distribution(pair, "B/A"), pair.b, pair.a)


@given(pair=ANY_PAIR)
def test_the_reversed_pld_keeps_the_map(pair):
    reversed_pld = privacy_loss_distribution(pair, "A/B").reversed()
    index = reversed_pld.outcomes
    assert np.array_equal(pair.b[index.finite], reversed_pld.mass_a)
    assert np.array_equal(pair.a[index.finite], reversed_pld.mass_b)
    other = privacy_loss_distribution(pair, "B/A").outcomes
    assert np.array_equal(np.sort(index.distinguishing), np.sort(other.distinguishing))
    assert np.array_equal(np.sort(index.impossible), np.sort(other.impossible))


def test_scatter_puts_each_value_on_its_outcome():
    pair = WorstCasePair.from_arrays([0.5, 0.0, 0.3, 0.2], [0.1, 0.4, 0.5, 0.0])
    pld = privacy_loss_distribution(pair, "A/B")
    spread = pld.outcomes.scatter(pld.losses, fill=-7.0)
    assert spread[1] == spread[3] == -7.0  # impossible, distinguishing
    assert spread[0] == pytest.approx(math.log(5.0)) and spread[2] == pytest.approx(math.log(0.6))


def test_a_pld_built_from_arrays_has_no_map():
    pld = PrivacyLossDistribution([0.1], [1.0], [0.9], [0.0], 0.0, 0.0)
    assert pld.outcomes is None and pld.reversed().outcomes is None


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (([0, 5], [], [], 3), r"outcome indices must lie in \[0, 3\), got 0 to 5"),
        (([0, -1], [], [], 3), r"must lie in \[0, 3\), got -1 to 0"),
        (([0, 1], [1], [], 3), "must not repeat"),
        (([0.0, 1.0], [], [], 3), "finite must be a one-dimensional array of outcome indices"),
        (([[0, 1]], [], [], 3), r"finite must be .* got shape \(1, 2\)"),
        (([0], ["a"], [], 3), "distinguishing must be a one-dimensional array"),
    ],
)
def test_bad_indices_are_refused_by_name(arguments, match):
    with pytest.raises(InvalidInputError, match=match):
        OutcomeIndex(*arguments)


def test_a_map_of_another_length_is_refused():
    index = OutcomeIndex([0, 1], [], [], 2)
    with pytest.raises(InvalidInputError, match=r"outcomes must be None or an OutcomeIndex"):
        PrivacyLossDistribution([0.1], [1.0], [0.9], [0.0], 0.0, 0.0, outcomes=index)
