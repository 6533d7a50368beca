"""The truncated discrete Laplace family (the worked example of adding a family): its
closed forms, both accountants against exact answers, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accountant import (
    ExtendedMA,
    InvalidInputError,
    PrivacyBuckets,
    exact_delta,
    exact_delta_pdp,
    mechanisms,
)
from accountant.mechanisms.discrete_laplace import distinguishing_mass_closed_form
from accountant.protocol import AnalyticMechanism
from tests.brute_force import composed_adp_delta

CASES = [(2.0, 20, 1), (0.7, 6, 2), (5.0, 3, 5)]


@pytest.mark.parametrize(("scale", "bound", "sensitivity"), CASES)
def test_closed_forms(scale: float, bound: int, sensitivity: int):
    m = mechanisms.TruncatedDiscreteLaplaceMechanism(
        scale=scale, bound=bound, sensitivity=sensitivity
    )
    assert isinstance(m, AnalyticMechanism)
    pmf = m.noise().pmf
    k = np.arange(-bound, bound + 1)
    expected = np.exp(-np.abs(k) / scale) / math.fsum(np.exp(-np.abs(k) / scale))
    np.testing.assert_allclose(pmf, expected, rtol=1e-14)
    omega = distinguishing_mass_closed_form(scale, bound, sensitivity)
    for direction in ("A/B", "B/A"):
        assert m.distinguishing_mass(direction) == pytest.approx(omega, rel=1e-12)
        top = m.max_finite_loss(direction)
        largest = min(sensitivity, 2 * bound - sensitivity) / scale  # overlap [s - r, r]
        assert largest <= top <= largest * (1 + 1e-12)


@pytest.mark.parametrize(("scale", "bound", "sensitivity"), CASES)
def test_accountants_bracket_the_exact_composition(scale, bound, sensitivity):
    m = mechanisms.TruncatedDiscreteLaplaceMechanism(
        scale=scale, bound=bound, sensitivity=sensitivity
    )
    pair = m.pair()
    for eps in (0.0, 0.3, 1.5):
        truth_1 = exact_delta(pair, eps)
        one = PrivacyBuckets().compose(m).delta(eps)
        assert one.lower <= truth_1 * (1 + 1e-12) and truth_1 <= one.upper * (1 + 1e-12)
        assert exact_delta_pdp(pair, eps) <= ExtendedMA().compose(m).delta_pdp(eps).upper
        truth_3 = max(
            composed_adp_delta([(pair.a, pair.b, 3)], eps, "A/B"),
            composed_adp_delta([(pair.a, pair.b, 3)], eps, "B/A"),
        )
        three = PrivacyBuckets().compose(m, times=3).delta(eps)
        assert three.lower <= truth_3 * (1 + 1e-12) and truth_3 <= three.upper * (1 + 1e-12)
        assert truth_3 <= ExtendedMA().compose(m, times=3).delta(eps).upper * (1 + 1e-12)


def test_the_mechanism_and_its_pair_give_the_same_numbers():
    m = mechanisms.TruncatedDiscreteLaplaceMechanism(scale=1.5, bound=12, sensitivity=1)
    for accountant in (ExtendedMA(), PrivacyBuckets()):
        via_mechanism = accountant.compose(m, times=7).delta(0.8).upper
        via_pair = accountant.compose(m.pair(), times=7).delta(0.8).upper
        assert via_mechanism == via_pair
    assert "truncated discrete Laplace (scale=1.5, bound=12)" in (
        PrivacyBuckets().compose(m, times=7).history
    )


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"scale": 0.0, "bound": 3}, "scale"),
        ({"scale": float("nan"), "bound": 3}, "scale"),
        ({"scale": 1.0, "bound": 2.5}, "bound"),
        ({"scale": 1.0, "bound": True}, "bound"),
        ({"scale": 1.0, "bound": 3, "sensitivity": 0}, "sensitivity"),
        ({"scale": 1.0, "bound": 3, "sensitivity": 6}, "sensitivity"),
    ],
)
def test_bad_input_names_the_argument(arguments, name):
    with pytest.raises(InvalidInputError, match=name):
        mechanisms.TruncatedDiscreteLaplaceMechanism(**arguments)


def test_pair_refuses_a_step_other_than_one():
    m = mechanisms.TruncatedDiscreteLaplaceMechanism(scale=1.0, bound=3)
    with pytest.raises(InvalidInputError, match="step"):
        m.pair(0.5)
