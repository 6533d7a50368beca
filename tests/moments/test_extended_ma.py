"""The Extended Moments Accountant (SPEC section 3) against closed forms and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import ExtendedMA, WorstCasePair, noise
from accountant.errors import InfeasibleTargetError
from accountant.mechanisms import GaussianMechanism
from accountant.moments.extended_ma import log_conversion_factor
from tests import brute_force
from tests.strategies import worst_case_pairs as pair_strategy


def gaussian_paper_closed_form(sigma: float, n: int, eps: float) -> float:
    """``min_lambda exp(n lambda (lambda + 1) / (2 sigma^2) - lambda eps)`` (sensitivity 1):
    the minimiser solves ``n (2 lambda + 1) / (2 sigma^2) = eps``."""
    lam = sigma**2 * eps / n - 0.5
    assert lam > 0
    return math.exp(n * lam * (lam + 1) / (2 * sigma**2) - lam * eps)


@pytest.mark.parametrize(
    ("sigma", "n", "eps"),
    [(10.0, 20, 1.0), (1.0, 1, 3.0), (100.0, 128, 0.3), (5.0, 10, 2.0), (30.0, 5000, 4.0)],
)
def test_gaussian_paper_conversion_matches_closed_form(sigma, n, eps):
    ma = ExtendedMA(conversion="paper").compose(GaussianMechanism(sigma=sigma), times=n)
    expected = gaussian_paper_closed_form(sigma, n, eps)
    assert ma.delta(eps).upper == pytest.approx(expected, rel=1e-9)
    details = ma.delta_details(eps)
    assert details.a_over_b.lam == pytest.approx(sigma**2 * eps / n - 0.5, rel=1e-8)


def test_gaussian_without_interior_optimum_gives_the_trivial_bound():
    # sigma^2 eps / n < 1/2: the minimum over lambda >= 0 is at lambda = 0, delta = 1.
    ma = ExtendedMA(conversion="paper").compose(GaussianMechanism(sigma=10.0), times=1000)
    assert ma.delta(1.0).upper == 1.0
    assert ma.delta_details(1.0).a_over_b.lam == 0.0


def test_tight_conversion_factor_is_the_stated_formula():
    for lam in (1e-6, 0.3, 1.0, 7.5, 1e4):
        expected = math.log((lam / (lam + 1)) ** lam / (lam + 1))
        assert log_conversion_factor(lam, "tight") == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert log_conversion_factor(2.0, "paper") == 0.0


def test_tight_conversion_for_gaussian_matches_its_closed_form():
    # c(lambda) exp(G - lambda eps) minimised numerically on a dense grid must not beat ours.
    sigma, n, eps = 10.0, 100, 1.0
    ma = ExtendedMA().compose(GaussianMechanism(sigma=sigma), times=n)
    lams = np.linspace(1e-4, 20, 200_001)
    grid = np.exp(
        n * lams * (lams + 1) / (2 * sigma**2)
        - lams * eps
        + lams * np.log(lams / (lams + 1))
        - np.log1p(lams)
    )
    assert ma.delta(eps).upper <= grid.min() * (1 + 1e-12)
    assert ma.delta(eps).upper == pytest.approx(grid.min(), rel=1e-8)


def test_heterogeneous_gaussians_add_their_moments():
    # Gamma is additive: n1/sigma1^2 + n2/sigma2^2 = n/sigma^2 for an equivalent Gaussian.
    ma = (
        ExtendedMA(conversion="paper")
        .compose(GaussianMechanism(sigma=4.0), times=30)
        .compose(GaussianMechanism(sigma=8.0), times=40)
    )
    sigma_equivalent = math.sqrt(1.0 / (30 / 16 + 40 / 64))
    expected = ExtendedMA(conversion="paper").compose(
        GaussianMechanism(sigma=sigma_equivalent), times=1
    )
    for eps in (0.5, 1.0, 3.0):
        assert ma.delta(eps).upper == pytest.approx(expected.delta(eps).upper, rel=1e-10)


def test_composing_in_parts_equals_composing_at_once():
    pair = WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0)
    once = ExtendedMA().compose(pair, times=8)
    parts = ExtendedMA().compose(pair, times=3).compose(pair, times=5)
    assert parts.releases == 8 and len(parts.components) == 1
    assert parts.delta(0.7).upper == once.delta(0.7).upper


@settings(max_examples=60, deadline=None)
@given(
    pair=pair_strategy(max_size=6),
    n=st.integers(1, 3),
    eps=st.floats(0.0, 3.0),
    conversion=st.sampled_from(["tight", "paper"]),
)
def test_never_below_exact_delta_of_the_composition(pair, n, eps, conversion):
    ma = ExtendedMA(conversion=conversion).compose(pair, times=n)
    for direction in ("A/B", "B/A"):
        exact = brute_force.composed_adp_delta([(pair.a, pair.b, n)], eps, direction)
        assert ma.delta(eps, direction).upper >= exact - 1e-12


@settings(max_examples=40, deadline=None)
@given(
    first=pair_strategy(max_size=5),
    second=pair_strategy(max_size=5),
    n1=st.integers(1, 2),
    n2=st.integers(1, 2),
    eps=st.floats(0.0, 3.0),
)
def test_heterogeneous_composition_is_sound(first, second, n1, n2, eps):
    ma = ExtendedMA().compose(first, times=n1).compose(second, times=n2)
    parts = [(first.a, first.b, n1), (second.a, second.b, n2)]
    exact = max(brute_force.composed_adp_delta(parts, eps, d) for d in ("A/B", "B/A"))
    assert ma.delta(eps).upper >= exact - 1e-12


@settings(max_examples=60, deadline=None)
@given(pair=pair_strategy(max_size=8), n=st.integers(1, 200), eps=st.floats(0.0, 10.0))
def test_tight_never_above_paper(pair, n, eps):
    tight = ExtendedMA().compose(pair, times=n)
    paper = ExtendedMA(conversion="paper").compose(pair, times=n)
    for direction in ("A/B", "B/A", "max"):
        assert (
            tight.delta(eps, direction).upper
            <= paper.delta(eps, direction).upper * (1 + 1e-12) + 1e-300
        )
        # Masses are accounted as given: a pair summing to 1 + 1e-17 may exceed 1 by ulps.
        total = brute_force.total_mass_bound([(pair.a, pair.b, n)])
        assert 0.0 <= tight.delta(eps, direction).upper <= total


def test_directions_swap_with_flipped_pair():
    pair = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4])
    ma = ExtendedMA().compose(pair, times=4)
    flipped = ExtendedMA().compose(pair.flipped(), times=4)
    assert ma.delta(0.4, "A/B").upper == flipped.delta(0.4, "B/A").upper
    assert ma.delta(0.4, "B/A").upper == flipped.delta(0.4, "A/B").upper
    assert ma.delta(0.4, "A/B").upper != ma.delta(0.4, "B/A").upper
    assert ma.delta(0.4).upper == max(ma.delta(0.4, "A/B").upper, ma.delta(0.4, "B/A").upper)


def test_distinguishing_mass_composes_as_one_minus_product():
    pair = WorstCasePair.from_arrays([0.1, 0.6, 0.3, 0.0], [0.0, 0.5, 0.3, 0.2])
    ma = ExtendedMA().compose(pair, times=7)
    assert ma.distinguishing_mass("A/B") == pytest.approx(1 - 0.9**7, rel=1e-14)
    assert ma.distinguishing_mass("B/A") == pytest.approx(1 - 0.8**7, rel=1e-14)
    # delta never falls below it, whatever eps
    assert ma.delta(50.0, "A/B").upper == pytest.approx(1 - 0.9**7, rel=1e-14)


def test_large_eps_leaves_only_distinguishing_mass_and_infinite_lambda():
    pair = WorstCasePair.from_arrays([0.1, 0.6, 0.3, 0.0], [0.0, 0.5, 0.3, 0.2])
    ma = ExtendedMA().compose(pair, times=3)
    max_loss = 3 * math.log(0.6 / 0.5)
    # Past the largest loss with its rounding margin, the finite part is exactly 0.
    bound = ma.delta_details(max_loss * (1 + 1e-12)).a_over_b
    assert bound.lam == math.inf and bound.finite_part == 0.0
    # At the computed largest loss the true loss may lie an ulp above: a tiny finite part
    # F^n (sup L - eps) covers it, never 0.
    at_edge = ma.delta_details(max_loss).a_over_b
    assert 0.0 < at_edge.finite_part < 1e-14
    assert ma.delta_details(max_loss * 0.999).a_over_b.finite_part > 1e-6


def test_fully_distinguishable_pair_gives_delta_one():
    pair = WorstCasePair.from_arrays([1.0, 0.0], [0.0, 1.0])
    ma = ExtendedMA().compose(pair, times=2)
    assert ma.delta(5.0).upper == 1.0
    with pytest.raises(InfeasibleTargetError, match="distinguishing mass"):
        ma.epsilon(0.5)


def test_no_release_means_no_leakage():
    assert ExtendedMA().delta(0.0).upper == 0.0


def test_worst_case_over_pairs_dominates_each_pair():
    p = noise.from_array([0.1, 0.15, 0.5, 0.05, 0.2], step=1.0)
    one, two = (WorstCasePair._additive(p, k) for k in (1, 2))
    worst = ExtendedMA().compose([one, two], times=5)
    for eps in (0.1, 1.0, 3.0):
        each = max(ExtendedMA().compose(x, times=5).delta(eps).upper for x in (one, two))
        assert worst.delta(eps).upper >= each * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(pair=pair_strategy(max_size=8), n=st.integers(1, 50), target=st.floats(1e-9, 0.9))
def test_epsilon_is_the_smallest_certified_eps(pair, n, target):
    ma = ExtendedMA().compose(pair, times=n)
    try:
        eps = ma.epsilon(target).upper
    except InfeasibleTargetError:
        assert target <= ma.distinguishing_mass() * (1 + 1e-12)
        return
    assert ma.delta(eps).upper <= target
    if eps > 1e-9:
        assert ma.delta(eps * (1 - 1e-6)).upper > target * (1 - 1e-9)


def test_epsilon_gaussian_paper_matches_closed_form_inverse():
    # eps(delta) = min_lambda (n lambda (lambda+1)/(2 sigma^2) - ln delta) / lambda
    sigma, n, delta = 10.0, 1000, 1e-5
    lam = math.sqrt(-math.log(delta) * 2 * sigma**2 / n)
    expected = n * (lam + 1) / (2 * sigma**2) - math.log(delta) / lam
    ma = ExtendedMA(conversion="paper").compose(GaussianMechanism(sigma=sigma), times=n)
    assert ma.epsilon(delta).upper == pytest.approx(expected, rel=1e-9)


# -- gradients ----------------------------------------------------------------------


def _delta_of(a, b, times, eps, conversion="tight", direction="max"):
    pair = WorstCasePair.from_arrays(a, b)
    return ExtendedMA(conversion=conversion).compose(pair, times=times).delta(eps, direction).upper


@pytest.mark.parametrize("conversion", ["tight", "paper"])
@pytest.mark.parametrize("direction", ["A/B", "B/A", "max"])
def test_gradient_matches_finite_differences_along_mass_preserving_moves(conversion, direction):
    # An asymmetric pair, so that "max" is attained by one direction (no kink).
    p = noise.truncated_gaussian(1.5, 4.0, 0.5)
    pair = WorstCasePair.subsampled(p, q=0.5, clip=1.0)
    times, eps = 6, 0.5
    ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
    result = ma.delta_and_gradient(eps, direction)
    grad = result.gradients[0][0]
    assert result.delta == pytest.approx(ma.delta(eps, direction).upper, rel=1e-14)
    rng = np.random.default_rng(7)
    for _ in range(6):
        # a move that keeps both masses normalised and non-negative: e_i - e_j on A or B
        which = rng.integers(2)
        base = (pair.a if which == 0 else pair.b).copy()
        support = np.flatnonzero(base > 1e-3)
        i, j = rng.choice(support, 2, replace=False)
        h = 1e-6
        move = np.zeros_like(base)
        move[i], move[j] = h, -h
        if which == 0:
            up = _delta_of(pair.a + move, pair.b, times, eps, conversion, direction)
            down = _delta_of(pair.a - move, pair.b, times, eps, conversion, direction)
            analytic = grad.a[i] - grad.a[j]
        else:
            up = _delta_of(pair.a, pair.b + move, times, eps, conversion, direction)
            down = _delta_of(pair.a, pair.b - move, times, eps, conversion, direction)
            analytic = grad.b[i] - grad.b[j]
        numeric = (up - down) / (2 * h)
        assert numeric == pytest.approx(analytic, rel=2e-5, abs=1e-9)


def test_gradient_of_single_coordinates_within_mass_tolerance():
    # Perturbing one coordinate by 2e-10 stays inside the 1e-9 normalisation tolerance,
    # so the raw partial derivatives (not only their differences) can be checked.
    a = np.array([0.2, 0.3, 0.4, 0.1, 0.0])
    b = np.array([0.0, 0.1, 0.3, 0.35, 0.25])
    times, eps = 3, 0.2
    ma = ExtendedMA().compose(WorstCasePair.from_arrays(a, b), times=times)
    grad = ma.delta_and_gradient(eps, "A/B").gradients[0][0]
    h = 2e-10
    for index in range(4):
        bump = np.zeros(5)
        bump[index] = h
        numeric_a = (
            _delta_of(a + bump, b, times, eps, direction="A/B")
            - _delta_of(a - bump, b, times, eps, direction="A/B")
        ) / (2 * h)
        assert numeric_a == pytest.approx(grad.a[index], rel=1e-4, abs=1e-5)
    for index in range(1, 5):
        bump = np.zeros(5)
        bump[index] = h
        numeric_b = (
            _delta_of(a, b + bump, times, eps, direction="A/B")
            - _delta_of(a, b - bump, times, eps, direction="A/B")
        ) / (2 * h)
        assert numeric_b == pytest.approx(grad.b[index], rel=1e-4, abs=1e-5)


def test_gradient_of_the_trivial_bound_is_that_of_the_total_mass():
    # lambda = 0: the bound is Omega + F^n = S^n, the composed total A-mass (masses as given),
    # whose derivative is n S^(n-1) on every outcome of A's support, and 0 for B.
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 5.0, 0.5), 1.0)
    result = ExtendedMA(conversion="paper").compose(pair, 1000).delta_and_gradient(0.1)
    total = math.fsum(pair.a.tolist())
    assert result.lam == 0.0
    assert result.delta == pytest.approx(total**1000, rel=1e-12) and result.delta <= 1.0
    grad = result.gradients[0][0]
    support = pair.a > 0
    assert grad.a[support] == pytest.approx(1000 * total**999, rel=1e-12)
    assert not np.any(grad.a[~support]) and not np.any(grad.b)


def _delta_with_a(a: list[float], b: list[float], times: int) -> float:
    pair = WorstCasePair.from_arrays(np.array(a), np.array(b))
    return ExtendedMA().compose(pair, times=times).delta(0.0, "A/B").upper


def test_gradient_when_only_distinguishing_mass_remains():
    # eps above every composed finite loss: delta = Omega = S^n - F^n (masses as given), so
    # dOmega/dA(o) = n S^(n-1) on distinguishing outcomes and n (S^(n-1) - F^(n-1)) on finite
    # ones; checked against central differences that do not renormalise.
    a, b = [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]
    result = ExtendedMA().compose(WorstCasePair.from_arrays(a, b), times=50)
    result = result.delta_and_gradient(0.0, "A/B")
    assert result.delta == pytest.approx(1 - 0.5**50, rel=1e-15) and result.lam == math.inf
    grad = result.gradients[0][0]
    assert grad.a[0] == pytest.approx(50.0, rel=1e-12)
    assert grad.a[1] == pytest.approx(50.0 * (1 - 0.5**49), rel=1e-12)
    assert grad.a[2] == 0.0 and not np.any(grad.b)
    h = 1e-10
    for index in (0, 1):
        plus, minus = list(a), list(a)
        plus[index] += h
        minus[index] -= h
        numeric = (_delta_with_a(plus, b, 50) - _delta_with_a(minus, b, 50)) / (2 * h)
        assert numeric == pytest.approx(grad.a[index], rel=1e-5)


def test_analytic_mechanisms_have_no_gradient_entries():
    ma = ExtendedMA().compose(GaussianMechanism(sigma=3.0), times=2)
    assert ma.delta_and_gradient(1.0).gradients == ((),)


def test_infeasible_target_below_distinguishing_mass():
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 3.0, 0.5), 1.0)
    ma = ExtendedMA().compose(pair, times=100)
    omega = ma.distinguishing_mass()
    with pytest.raises(InfeasibleTargetError, match=r"delta=.*distinguishing mass"):
        ma.epsilon(omega / 2)


def test_composed_accountants_have_a_short_readable_history():
    # issue 11, item 10: components printed whole arrays
    from accountant import PrivacyBuckets, mechanisms

    gaussian = noise.truncated_gaussian(100.0, 500.0, 0.5)
    pair = WorstCasePair.additive(gaussian, 1.0)
    laplace = mechanisms.LaplaceMechanism(scale=2.0)
    for accountant in (ExtendedMA(), PrivacyBuckets()):
        assert accountant.history == "nothing"
        composed = accountant.compose(pair, 10).compose(laplace, 5).compose(pair, 2)
        assert composed.history == (
            "12 x truncated Gaussian(sigma=100, bound=500, step=0.5), sensitivity 1 "
            "(2 grid steps); 5 x Laplace (scale=2), sensitivity 1"
        )
        shown = repr(composed.components)
        assert "array" not in shown and len(shown) < 300
