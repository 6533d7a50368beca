"""The search steps of the calibration (accountant.learning.calibration_steps): the Gaussian-DP
start against the closed forms it rests on, and the root estimates (secant, regula falsi
with the Illinois rule) on functions whose roots are known."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from accountant.learning.calibration_steps import (
    MAX_LOG_STEP,
    estimate_root,
    gdp_log_delta,
    gdp_start,
)


@pytest.mark.parametrize(("epsilon", "mu"), [(1.0, 1.0), (0.5, 0.3), (3.0, 2.0)])
def test_gdp_delta_is_the_closed_form(epsilon, mu):
    # Dong, Roth, Su (2019), Corollary 2.13
    expected = norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(
        -epsilon / mu - mu / 2
    )
    assert math.exp(gdp_log_delta(epsilon, mu)) == pytest.approx(expected, rel=1e-10)


def test_gdp_delta_stays_finite_far_in_the_tail_and_is_minus_inf_only_at_zero():
    assert -700.0 < gdp_log_delta(30.0, 1.0) < -300.0
    assert gdp_log_delta(1e4, 1e-6) == -math.inf


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (0.3, 1e-8)])
def test_without_subsampling_the_start_is_the_exact_gaussian_mechanism(epsilon, delta):
    sigma = math.exp(gdp_start(epsilon, delta, sampling_rate=1.0, steps=1).x)
    # Balle and Wang (2018), Theorem 8: the Gaussian mechanism, sensitivity 1
    exact = norm.cdf(0.5 / sigma - epsilon * sigma) - math.exp(epsilon) * norm.cdf(
        -0.5 / sigma - epsilon * sigma
    )
    assert exact == pytest.approx(delta, rel=1e-6)


def test_with_subsampling_the_start_is_the_central_limit_theorems_sigma():
    q, n, epsilon, delta = 256 / 60000, 14062, 3.0, 1e-5
    start = gdp_start(epsilon, delta, q, n)
    sigma = math.exp(start.x)
    mu = q * math.sqrt(n * math.expm1(sigma**-2))  # Bu, Dong, Long, Su (2020)
    assert gdp_log_delta(epsilon, mu) == pytest.approx(math.log(delta), abs=1e-6)
    assert 0.8 < sigma < 1.0 and start.slope < -10.0  # MNIST at eps 3 needs about 0.97


def test_a_secant_step_finds_the_root_of_a_line():
    line = [(0.0, 0.6), (0.1, 0.4)]  # y = -2 (x - 0.3)
    estimate = estimate_root(line)
    assert estimate.x == pytest.approx(0.3) and estimate.slope == pytest.approx(-2.0)
    assert estimate.bracket is None
    assert estimate_root([(0.0, 0.6), (1.0, -1.4)]).x == pytest.approx(0.3)
    assert estimate_root([(1.0, -1.4), (0.9, -1.2)]).x == pytest.approx(0.3)


def test_steps_outside_a_bracket_are_capped_and_go_where_y_asks():
    flat = estimate_root([(0.0, 5.0), (0.1, 4.99)])
    assert flat.x == pytest.approx(0.1 + MAX_LOG_STEP)
    rising = estimate_root([(0.0, 1.0), (0.1, 2.0)], default_slope=-4.0)  # no usable secant
    assert rising.slope == -4.0 and rising.x == pytest.approx(0.1 + 2.0 / 4.0)
    assert estimate_root([(0.0, -1.0)], default_slope=-10.0).x == pytest.approx(-0.1)


def test_a_secant_that_fell_short_twice_is_stretched():
    points = [(0.0, 3.0), (0.1, 2.0), (0.2, 1.5)]  # all on one side: the secant is 0.3 long
    assert estimate_root(points).x == pytest.approx(0.2 + 2.0 * 0.3)


def _convex(x: float) -> float:
    return math.exp(-5.0 * x) - math.exp(-1.0)  # root at 0.2, strongly convex


def test_illinois_converges_where_plain_regula_falsi_creeps():
    points = [(0.0, _convex(0.0)), (1.0, _convex(1.0))]
    for _ in range(12):
        x = estimate_root(points).x
        points.append((x, _convex(x)))
    assert abs(points[-1][0] - 0.2) < 1e-10
    # plain regula falsi from the same bracket keeps its right end and creeps
    (a, ya), (b, yb) = (0.0, _convex(0.0)), (1.0, _convex(1.0))
    for _ in range(12):
        x = (a * yb - b * ya) / (yb - ya)
        if _convex(x) > 0.0:
            a, ya = x, _convex(x)
        else:
            b, yb = x, _convex(x)
    assert abs(x - 0.2) > 1e-6


def test_no_points_is_an_error():
    with pytest.raises(ValueError, match="at least one point"):
        estimate_root([])
