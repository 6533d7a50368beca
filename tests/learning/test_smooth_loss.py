"""The smooth bucket delta (training loss l^ADP / l^PDP): exact on loss lattices,
within one bucket width of the exact delta for one release, and its gradient is the
derivative of its value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from accountant import PrivacyBuckets, WorstCasePair, exact_delta, noise
from accountant.errors import InvalidInputError
from accountant.learning.smooth_loss import default_smooth_width, smooth_bucket_delta
from tests.brute_force import adp_delta, composed_arrays
from tests.strategies import worst_case_pairs


def _laplace_pair() -> WorstCasePair:
    # Losses (|x - 1| - |x|) / 0.5 are multiples of step / scale = 1: a loss lattice.
    p = noise.truncated_laplace(scale=0.5, bound=2.0, step=0.5)
    return WorstCasePair.additive(p, sensitivity=1.0)


def _pdp(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    # The composed losses are integers; a rounding margin keeps atoms at eps out.
    with np.errstate(divide="ignore"):
        loss = np.log(a) - np.log(np.where(b > 0, b, 1.0))
    above = (b == 0) | (loss > eps + 1e-9)
    return float(a[(a > 0) & above].sum())


@pytest.mark.parametrize("times", [1, 2, 4])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0])
def test_exact_on_a_loss_lattice(times, eps):
    pair = _laplace_pair()
    a, b = composed_arrays([(pair.a, pair.b, times)])
    adp = smooth_bucket_delta(pair, eps, times, kind="ADP", direction="A/B", width=0.25)
    pdp = smooth_bucket_delta(pair, eps, times, kind="PDP", direction="A/B", width=0.25)
    assert adp.delta == pytest.approx(adp_delta(a, b, eps), abs=1e-13)
    assert pdp.delta == pytest.approx(_pdp(a, b, eps), abs=1e-13)


def test_max_is_the_larger_direction():
    a = np.array([0.5, 0.3, 0.2, 0.0])
    b = np.array([0.1, 0.2, 0.3, 0.4])
    pair = WorstCasePair(a, b)
    both = smooth_bucket_delta(pair, 0.2, 3)
    forward = smooth_bucket_delta(pair, 0.2, 3, direction="A/B")
    backward = smooth_bucket_delta(pair, 0.2, 3, direction="B/A")
    assert both.delta == max(forward.delta, backward.delta)
    assert backward.delta > forward.delta  # B has a distinguishing event, A does not
    assert both.direction == "B/A"
    np.testing.assert_array_equal(both.gradient_a, backward.gradient_a)


@settings(max_examples=60, deadline=None)
@given(worst_case_pairs())
def test_one_release_within_one_width_of_the_exact_delta(pair):
    # The ADP weight (1 - e^(eps - L))_+ is 1-Lipschitz in L and the soft assignment
    # moves no mass by more than one width; losses beyond the cap cost at most e^-29.
    width = 0.01
    for eps in (0.0, 0.3, 2.0):
        smooth = smooth_bucket_delta(pair, eps, 1, width=width)
        assert abs(smooth.delta - exact_delta(pair, eps)) <= width + 1e-9


def test_close_to_the_certified_bounds_for_a_gaussian():
    p = noise.truncated_gaussian(sigma=2.0, bound=8.0, step=0.25)
    pair = WorstCasePair.additive(p, 1.0)
    bounds = PrivacyBuckets(accuracy=1e-6).compose(pair, 8).delta(0.5)
    smooth = smooth_bucket_delta(pair, 0.5, 8, width=0.001)
    assert smooth.delta == pytest.approx(bounds.upper, rel=2e-3)


def _value(a, b, eps, times, kind, direction, width):
    # The gradient is with respect to unnormalised masses: bypass the pmf validation.
    from accountant.learning.smooth_loss import _one_direction

    if direction == "A/B":
        return _one_direction(a, b, eps, times, kind, width, 30.0)[0]
    return _one_direction(b, a, eps, times, kind, width, 30.0)[0]


@pytest.mark.parametrize("kind", ["ADP", "PDP"])
@pytest.mark.parametrize("times", [1, 2, 5])
@pytest.mark.parametrize("direction", ["A/B", "B/A"])
def test_gradient_matches_central_differences(kind, times, direction):
    rng = np.random.default_rng(times)
    a = rng.random(9) + 0.05
    b = rng.random(9) + 0.05
    a /= a.sum()
    b /= b.sum()
    width = 0.0137
    result = smooth_bucket_delta(
        WorstCasePair(a, b), 0.3, times, kind=kind, direction=direction, width=width
    )
    h = 1e-7
    for which, gradient in (("a", result.gradient_a), ("b", result.gradient_b)):
        for i in range(9):
            up_a, up_b, down_a, down_b = a.copy(), b.copy(), a.copy(), b.copy()
            (up_a if which == "a" else up_b)[i] += h
            (down_a if which == "a" else down_b)[i] -= h
            numeric = (
                _value(up_a, up_b, 0.3, times, kind, direction, width)
                - _value(down_a, down_b, 0.3, times, kind, direction, width)
            ) / (2 * h)
            assert gradient[i] == pytest.approx(numeric, rel=1e-5, abs=1e-6), (which, i)


def test_distinguishing_mass_gradient():
    # An A-outcome impossible under B counts in full: d l / d a = n (s + d)^(n-1) = n.
    pair = WorstCasePair(np.array([0.25, 0.75, 0.0]), np.array([0.0, 0.75, 0.25]))
    result = smooth_bucket_delta(pair, 0.1, 3, direction="A/B")
    assert result.delta == pytest.approx(1 - 0.75**3, abs=1e-14)
    assert result.gradient_a[0] == pytest.approx(3.0, rel=1e-12)


def test_default_width_puts_epsilon_on_the_lattice():
    for eps in (0.3, 0.01, 1.234, 7.0):
        width = default_smooth_width(eps)
        assert width <= 0.005 and eps / width == pytest.approx(round(eps / width), abs=1e-9)
    assert default_smooth_width(0.0) == 0.005


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "RDP"}, "kind"),
        ({"width": 0.0}, "width"),
        ({"width": float("nan")}, "width"),
        ({"loss_cap": -1.0}, "loss_cap"),
        ({"direction": "up"}, "direction"),
        ({"epsilon": -0.1}, "epsilon"),
        ({"epsilon": [0.1, 0.2]}, "epsilon"),
        ({"times": 0}, "times"),
        ({"times": 1.5}, "times"),
        ({"width": 1e-9, "times": 1000}, "width"),
    ],
)
def test_bad_input(kwargs, match):
    arguments = {"epsilon": 0.3, "times": 2} | kwargs
    with pytest.raises(InvalidInputError, match=match):
        smooth_bucket_delta(_laplace_pair(), **arguments)


def test_pair_type_is_checked():
    with pytest.raises(InvalidInputError, match="pair"):
        smooth_bucket_delta((np.ones(2) / 2, np.ones(2) / 2), 0.3)
