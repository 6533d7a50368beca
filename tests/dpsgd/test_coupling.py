"""The coupling bound of accountant.dpsgd.coupling against exact enumeration.

The bound holds for any noise law G and its cut version T (conditioned on the box, or
clamped onto it), so it is checked here on lattice noises small enough to enumerate: a
two-coordinate, two-step product, every neighbouring shift of L2 norm 1 on the lattice,
both truncations, against delta_T and delta_G computed exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm

from accountant.dpsgd.coupling import (
    coupled_delta,
    delta_budget,
    escape_probability,
    lowered_delta,
    lowering,
    raised_target,
)

STEP = 0.25


def _lattice_gaussian(sigma: float, reach: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.arange(-reach, reach + STEP / 2, STEP)
    weights = np.exp(-0.5 * (grid / sigma) ** 2)
    return grid, weights / weights.sum()


def _cut(grid: np.ndarray, pmf: np.ndarray, cut: float, truncation: str) -> np.ndarray:
    inside = np.abs(grid) <= cut + 1e-12
    if truncation == "renormalised":
        return np.where(inside, pmf, 0.0) / pmf[inside].sum()
    clamped = np.where(inside, pmf, 0.0)
    clamped[np.argmin(np.abs(grid + cut))] += pmf[grid < -cut - 1e-12].sum()
    clamped[np.argmin(np.abs(grid - cut))] += pmf[grid > cut + 1e-12].sum()
    return clamped


def _shifted(pmf: np.ndarray, steps: int) -> np.ndarray:
    out = np.zeros_like(pmf)
    if steps >= 0:
        out[steps:] = pmf[: len(pmf) - steps]
    else:
        out[:steps] = pmf[-steps:]
    return out


def _product(*factors: np.ndarray) -> np.ndarray:
    result = factors[0]
    for factor in factors[1:]:
        result = np.multiply.outer(result, factor)
    return result.ravel()


def _delta(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    return float(np.maximum(a - math.exp(eps) * b, 0.0).sum())


def _two_steps(pmf: np.ndarray, shift: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Two steps on two coordinates: A has no shift, B shifts both steps by ``shift``."""
    a = _product(pmf, pmf, pmf, pmf)
    moved = [_shifted(pmf, s) for s in shift]
    b = _product(*moved, *moved)
    return a, b


SHIFTS = [(4, 0), (0, 4), (2, 2), (2, 3), (-3, 2)]  # L2 norm <= 1 in units of STEP = 0.25


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
@pytest.mark.parametrize("shift", SHIFTS)
def test_the_coupling_bound_holds_on_exact_lattice_compositions(truncation, shift):
    assert math.hypot(*shift) * STEP <= 1.0
    grid, gaussian = _lattice_gaussian(sigma=0.6, reach=4.0)
    cut = 1.0
    truncated = _cut(grid, gaussian, cut, truncation)
    inside = gaussian[np.abs(grid) <= cut + 1e-12].sum()
    tau = 1.0 - inside**4  # 2 coordinates x 2 steps
    a_g, b_g = _two_steps(gaussian, shift)
    a_t, b_t = _two_steps(truncated, shift)
    for eps in (0.0, 0.3, 1.0, 3.0, 8.0):
        for first, second, first_g, second_g in ((a_t, b_t, a_g, b_g), (b_t, a_t, b_g, a_g)):
            true = _delta(first, second, eps)
            bound = coupled_delta(_delta(first_g, second_g, eps), eps, tau, truncation)
            assert true <= bound


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
@pytest.mark.parametrize("shift", SHIFTS)
def test_the_uncut_lower_bound_less_the_penalty_bounds_the_cut_run(truncation, shift):
    """``delta_T >= delta_G - lowering(eps, tau)`` on the same exact compositions, and the
    penalty is the coupling's size (not vacuous): ``tau (1 + e^eps)`` up to ``1 / (1 - tau)``."""
    grid, gaussian = _lattice_gaussian(sigma=0.6, reach=4.0)
    cut = 1.0
    truncated = _cut(grid, gaussian, cut, truncation)
    tau = 1.0 - gaussian[np.abs(grid) <= cut + 1e-12].sum() ** 4
    a_g, b_g = _two_steps(gaussian, shift)
    a_t, b_t = _two_steps(truncated, shift)
    for eps in (0.0, 0.3, 1.0, 3.0, 8.0):
        penalty = float(lowering(eps, tau, truncation))
        assert tau * (1.0 + math.exp(eps)) <= penalty <= tau * (1.0 + math.exp(eps)) / (1.0 - tau)
        for first, second, first_g, second_g in ((a_t, b_t, a_g, b_g), (b_t, a_t, b_g, a_g)):
            assert _delta(first, second, eps) >= _delta(first_g, second_g, eps) - penalty


def test_no_escape_costs_nothing_and_certain_escape_everything():
    assert float(lowering(2.0, 0.0, "clamped")) == 0.0
    assert float(lowering(2.0, 1.0, "renormalised")) == math.inf


def test_the_bound_is_not_vacuous_where_the_cut_is_far_out():
    grid, gaussian = _lattice_gaussian(sigma=0.6, reach=4.0)
    truncated = _cut(grid, gaussian, 2.5, "renormalised")
    tau = 1.0 - gaussian[np.abs(grid) <= 2.5 + 1e-12].sum() ** 4
    a_g, b_g = _two_steps(gaussian, (2, 3))
    a_t, b_t = _two_steps(truncated, (2, 3))
    true, gauss = _delta(b_t, a_t, 1.0), _delta(b_g, a_g, 1.0)
    assert true <= coupled_delta(gauss, 1.0, tau, "renormalised") <= 1.01 * true + 4 * tau


@pytest.mark.parametrize(
    ("pairs", "direct"),
    [
        ([(3.0, 10)], lambda: 1 - (1 - 2 * norm.cdf(-3.0)) ** 10),
        ([(8.0, 10**9)], lambda: -math.expm1(1e9 * math.log1p(-2 * norm.cdf(-8.0)))),
        (
            [(2.0, 3), (4.0, 5)],
            lambda: 1 - (1 - 2 * norm.cdf(-2.0)) ** 3 * (1 - 2 * norm.cdf(-4.0)) ** 5,
        ),
    ],
)
def test_escape_probability_is_the_closed_form_rounded_up(pairs, direct):
    tau = escape_probability(pairs)
    assert direct() <= tau <= direct() * (1 + 1e-9)


def test_no_cut_means_no_escape_and_the_gaussian_bound_unchanged():
    assert escape_probability([(math.inf, 10**6)]) == 0.0
    assert escape_probability([]) == 0.0
    assert coupled_delta(np.array([0.25]), np.array([1.0]), 0.0, "clamped")[0] == 0.25


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_the_budget_inverts_the_bound(truncation):
    tau, delta, eps = 1e-7, 1e-5, 1.5
    budget = delta_budget(delta, eps, tau, truncation)
    assert coupled_delta(np.array([budget]), np.array([eps]), tau, truncation)[0] == pytest.approx(
        delta, rel=1e-12
    )
    assert delta_budget(1e-7, 3.0, 1e-7, truncation) < 0  # tau alone spends delta


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_lowered_and_raised_deltas_round_the_safe_way(truncation):
    """Against exact rationals: the cut run's lower delta never above ``lower - penalty``,
    the target read for the lower eps never below ``delta + penalty``; no penalty, no
    change."""
    for lower, eps, tau in [(0.3, 1.7, 1e-9), (1e-5, 0.2, 3.3e-13), (0.123456789, 6.0, 1e-7)]:
        penalty = float(lowering(eps, tau, truncation))
        assert penalty > 0.0
        lowered = float(lowered_delta(lower, eps, tau, truncation))
        assert Fraction(lowered) <= Fraction(lower) - Fraction(penalty)
        raised = raised_target(lower, eps, tau, truncation)
        assert Fraction(raised) >= Fraction(lower) + Fraction(penalty)
        assert raised - lowered <= 2 * penalty * (1 + 1e-12) + 4 * math.ulp(lower)
    assert float(lowered_delta(0.3, 1.0, 0.0, truncation)) == 0.3
    assert raised_target(0.3, 1.0, 0.0, truncation) == 0.3
