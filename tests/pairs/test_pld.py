"""Exact single-release bounds of pld.py against brute force (SPEC section 1).

The ADP oracle is the definition itself, ``delta = sup_S A(S) - e^eps B(S)`` over every
subset S of the outcomes, enumerated for pairs of at most 10 outcomes; the PDP oracle is
``P_{o~A}[L(o) > eps]`` with ``L = +inf`` on distinguishing events.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from accountant import (
    InfeasibleTargetError,
    InvalidInputError,
    WorstCasePair,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    noise,
    privacy_loss_distribution,
)
from tests.strategies import epsilons, pair_lists, shift_pairs, worst_case_pairs

# ---------------------------------------------------------------------------------------
# oracles


def _subsets(size: int) -> np.ndarray:
    """Indicator rows of all 2^size subsets."""
    return ((np.arange(2**size)[:, None] >> np.arange(size)) & 1).astype(np.float64)


def sup_over_subsets(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    """``max_S A(S) - e^eps B(S)`` by enumerating every subset (the empty one gives 0)."""
    masks = _subsets(a.size)
    return float(np.max(masks @ a - math.exp(eps) * (masks @ b)))


def hockey_stick(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    """``sum_o max(0, A(o) - e^eps B(o))``, summed exactly."""
    factor = math.exp(eps)
    return math.fsum(max(0.0, ai - factor * bi) for ai, bi in zip(a, b, strict=True))


def loss(ai: float, bi: float) -> float:
    """``ln(A/B)``; ``+inf`` for a distinguishing event, ``-inf`` where ``A = 0 < B``."""
    if ai > 0.0 and bi == 0.0:
        return math.inf
    if ai == 0.0:
        return -math.inf
    return math.log(ai / bi)


def prob_loss_above(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    """``P_{o~A}[L(o) > eps]``."""
    return math.fsum(ai for ai, bi in zip(a, b, strict=True) if loss(ai, bi) > eps)


def _oriented(pair: WorstCasePair, direction: str) -> tuple[np.ndarray, np.ndarray]:
    return (pair.a, pair.b) if direction == "A/B" else (pair.b, pair.a)


def _pdp_within_ties(pair, eps, direction, value) -> None:
    """The library's ``ln A - ln B`` and the oracle's ``ln(A/B)`` may differ by an ulp, so
    at a loss equal to eps either side of the tie is accepted."""
    a, b = _oriented(pair, direction)
    low = prob_loss_above(a, b, eps + 1e-9)
    high = prob_loss_above(a, b, eps - 1e-9)
    assert low - 1e-12 <= value <= high + 1e-12, (value, low, high)


# ---------------------------------------------------------------------------------------
# ADP and PDP against brute force


@given(pair=worst_case_pairs(max_size=10), eps=epsilons())
@settings(max_examples=150, deadline=None)
def test_adp_equals_sup_over_all_subsets(pair, eps):
    for direction in ("A/B", "B/A"):
        a, b = _oriented(pair, direction)
        value = exact_delta(pair, eps, direction)
        assert value == pytest.approx(sup_over_subsets(a, b, eps), abs=1e-12)
        assert value == pytest.approx(hockey_stick(a, b, eps), abs=1e-14, rel=1e-12)


@given(pair=worst_case_pairs(max_size=12), eps=epsilons())
@settings(max_examples=150, deadline=None)
def test_pdp_equals_probability_of_large_loss(pair, eps):
    for direction in ("A/B", "B/A"):
        _pdp_within_ties(pair, eps, direction, exact_delta_pdp(pair, eps, direction))


@given(pair=worst_case_pairs(), eps=epsilons())
@settings(max_examples=100, deadline=None)
def test_max_direction_is_the_larger_one_and_the_default(pair, eps):
    for bound in (exact_delta, exact_delta_pdp):
        forward, backward = bound(pair, eps, "A/B"), bound(pair, eps, "B/A")
        assert bound(pair, eps, "max") == max(forward, backward)
        assert bound(pair, eps) == max(forward, backward)


@given(pairs=pair_lists(), eps=epsilons())
@settings(max_examples=80, deadline=None)
def test_worst_case_over_several_pairs_is_the_maximum(pairs, eps):
    for direction in ("max", "A/B", "B/A"):
        for bound in (exact_delta, exact_delta_pdp):
            assert bound(pairs, eps, direction) == max(bound(p, eps, direction) for p in pairs)
    assert exact_delta(tuple(pairs), eps) == exact_delta(pairs, eps)


@given(pair=worst_case_pairs(), eps=epsilons())
@settings(max_examples=80, deadline=None)
def test_adp_never_exceeds_pdp(pair, eps):
    # A (1 - e^{eps - L}) <= A on every outcome with L > eps
    for direction in ("A/B", "B/A"):
        assert exact_delta(pair, eps, direction) <= exact_delta_pdp(pair, eps, direction) + 1e-15


def test_hand_computed_pair():
    """A = (0.5, 0.3, 0.2, 0), B = (0, 0.2, 0.3, 0.5): omega = 0.5 both ways, the finite
    losses are +-ln 1.5."""
    pair = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.0, 0.2, 0.3, 0.5])
    assert exact_delta(pair, 0.0) == pytest.approx(0.6)  # 0.5 + (0.3 - 0.2)
    eps = 0.2
    assert exact_delta(pair, eps, "A/B") == pytest.approx(0.5 + 0.3 - math.exp(eps) * 0.2)
    assert exact_delta(pair, math.log(1.5)) == pytest.approx(0.5)
    assert exact_delta(pair, 1.0) == pytest.approx(0.5)
    assert exact_delta_pdp(pair, 0.2) == pytest.approx(0.8)
    assert exact_delta_pdp(pair, 1.0) == pytest.approx(0.5)
    pld = privacy_loss_distribution(pair)
    np.testing.assert_allclose(pld.losses, [-math.log(1.5), math.log(1.5)], rtol=1e-15)
    np.testing.assert_array_equal(pld.mass_a, [0.2, 0.3])
    np.testing.assert_array_equal(pld.mass_b, [0.3, 0.2])
    assert pld.distinguishing_mass == 0.5
    assert pld.impossible_mass_b == 0.5


def test_identical_distributions_leak_nothing():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    pair = WorstCasePair.from_arrays(p, p)
    for eps in (0.0, 0.1, 3.0):
        assert exact_delta(pair, eps) == 0.0
        assert exact_delta_pdp(pair, eps) == 0.0
    assert exact_epsilon(pair, 1e-9) == 0.0


def test_disjoint_supports_leak_everything():
    pair = WorstCasePair.from_arrays([0.4, 0.6, 0.0], [0.0, 0.0, 1.0])
    for eps in (0.0, 1.0, 50.0):
        assert exact_delta(pair, eps) == 1.0
        assert exact_delta_pdp(pair, eps) == 1.0


# ---------------------------------------------------------------------------------------
# the privacy-loss distribution itself


@given(pair=worst_case_pairs(max_size=12))
@settings(max_examples=80, deadline=None)
def test_pld_partitions_the_outcomes(pair):
    for direction in ("A/B", "B/A"):
        a, b = _oriented(pair, direction)
        pld = privacy_loss_distribution(pair, direction)
        both = (a > 0) & (b > 0)
        assert pld.losses.size == int(both.sum())
        assert (np.diff(pld.losses) >= 0).all()
        np.testing.assert_allclose(pld.losses, pld.log_mass_a - np.log(pld.mass_b), atol=1e-12)
        expected = sorted(math.log(ai / bi) for ai, bi in zip(a[both], b[both], strict=True))
        np.testing.assert_allclose(pld.losses, expected, rtol=1e-12, atol=1e-12)
        assert pld.distinguishing_mass == pytest.approx(
            math.fsum(a[(a > 0) & (b == 0)].tolist()), abs=1e-16
        )
        assert pld.impossible_mass_b == pytest.approx(
            math.fsum(b[(a == 0) & (b > 0)].tolist()), abs=1e-16
        )
        assert math.fsum(pld.mass_a.tolist()) + pld.distinguishing_mass == pytest.approx(1.0)


def test_subnormal_masses_do_not_overflow():
    """A ratio 1 / 1e-320 overflows a float; ln 1 - ln 1e-320 = 736.8... does not."""
    tiny = 1e-320  # subnormal: stored as 9.99988671826831e-321
    assert 0.0 < tiny < np.finfo(np.float64).tiny
    pair = WorstCasePair.from_arrays([tiny, 1.0, 0.0], [1.0, tiny, 0.0])
    big = -math.log(tiny)  # 736.83...
    pld = privacy_loss_distribution(pair)
    np.testing.assert_allclose(pld.losses, [-big, big], rtol=1e-15)
    assert np.isfinite(pld.losses).all()
    assert pld.distinguishing_mass == 0.0
    # delta(eps) = 1 - e^eps * tiny for eps below the loss, 0 above it
    assert exact_delta(pair, 700.0) == pytest.approx(1.0 - math.exp(700.0) * tiny, abs=1e-15)
    assert exact_delta(pair, big - 1.0) == pytest.approx(1.0 - math.exp(-1.0), rel=1e-12)
    assert exact_delta(pair, big + 1.0) == 0.0
    assert exact_delta_pdp(pair, big - 1.0) == 1.0
    assert exact_delta_pdp(pair, big + 1.0) == 0.0
    # delta(eps) = 0.5  <=>  eps = ln(0.5 / tiny)
    assert exact_epsilon(pair, 0.5) == pytest.approx(big + math.log(0.5), rel=1e-12)
    assert exact_epsilon(pair, 0.5, kind="PDP") == pytest.approx(big, rel=1e-15)


def test_smallest_normal_and_subnormal_against_one_in_every_direction():
    for tiny in (5e-324, 1e-310, 2.2250738585072014e-308):
        pair = WorstCasePair.from_arrays([1.0, tiny], [tiny, 1.0])
        assert exact_delta(pair, 0.0) == pytest.approx(1.0)
        assert exact_delta(pair, 800.0) == 0.0
        assert exact_delta_pdp(pair, 1.0) == 1.0


# ---------------------------------------------------------------------------------------
# monotonicity and vectorisation


@given(pair=worst_case_pairs(), eps=st.lists(epsilons(), min_size=2, max_size=8))
@settings(max_examples=80, deadline=None)
def test_delta_is_non_increasing_in_eps(pair, eps):
    eps = sorted(eps)
    for direction in ("max", "A/B", "B/A"):
        for bound in (exact_delta, exact_delta_pdp):
            values = [bound(pair, e, direction) for e in eps]
            assert all(later <= earlier for earlier, later in itertools.pairwise(values))


@given(pair=worst_case_pairs(), eps=st.lists(epsilons(), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_vectorised_eps_equals_scalars(pair, eps):
    for bound in (exact_delta, exact_delta_pdp):
        scalars = [bound(pair, e) for e in eps]
        assert all(isinstance(v, float) for v in scalars)
        vector = bound(pair, np.array(eps))
        assert isinstance(vector, np.ndarray) and vector.shape == (len(eps),)
        np.testing.assert_array_equal(vector, scalars)
        np.testing.assert_array_equal(bound(pair, list(eps)), scalars)


def test_eps_array_shape_is_kept():
    pair = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.0, 0.2, 0.3, 0.5])
    eps = np.array([[0.0, 0.1, 0.2], [0.5, 1.0, 2.0]])
    for bound in (exact_delta, exact_delta_pdp):
        values = bound(pair, eps)
        assert values.shape == (2, 3)
        for index in np.ndindex(eps.shape):
            assert values[index] == bound(pair, float(eps[index]))
    assert isinstance(exact_delta(pair, np.float64(0.3)), float)


# ---------------------------------------------------------------------------------------
# epsilon for a target delta


def _distinguishing_mass(pair: WorstCasePair, direction: str) -> float:
    directions = ("A/B", "B/A") if direction == "max" else (direction,)
    return max(privacy_loss_distribution(pair, d).distinguishing_mass for d in directions)


@given(
    pair=worst_case_pairs(),
    target=st.floats(1e-12, 0.999),
    direction=st.sampled_from(["max", "A/B", "B/A"]),
)
@settings(max_examples=150, deadline=None)
def test_adp_epsilon_round_trip_and_smallest(pair, target, direction):
    if target < _distinguishing_mass(pair, direction):
        with pytest.raises(InfeasibleTargetError, match="delta="):
            exact_epsilon(pair, target, direction)
        return
    eps = exact_epsilon(pair, target, direction)
    assert eps >= 0.0 and math.isfinite(eps)
    assert exact_delta(pair, eps, direction) <= target
    if eps > 0.0:
        below = eps - 1e-9 * max(1.0, eps)
        assert exact_delta(pair, max(0.0, below), direction) > target


@given(
    pair=worst_case_pairs(),
    target=st.floats(1e-12, 0.999),
    direction=st.sampled_from(["max", "A/B", "B/A"]),
)
@settings(max_examples=150, deadline=None)
def test_pdp_epsilon_round_trip_and_smallest(pair, target, direction):
    if target < _distinguishing_mass(pair, direction):
        with pytest.raises(InfeasibleTargetError, match="delta="):
            exact_epsilon(pair, target, direction, kind="PDP")
        return
    eps = exact_epsilon(pair, target, direction, kind="PDP")
    assert eps >= 0.0 and math.isfinite(eps)
    assert exact_delta_pdp(pair, eps, direction) <= target
    if eps > 0.0:
        below = eps - 1e-9 * max(1.0, eps)
        assert exact_delta_pdp(pair, max(0.0, below), direction) > target


@given(pair=st.one_of(worst_case_pairs(), shift_pairs()))
@settings(max_examples=60, deadline=None)
def test_epsilon_at_the_distinguishing_mass_is_feasible(pair):
    omega = _distinguishing_mass(pair, "max")
    assume(0.0 < omega < 1.0)
    eps = exact_epsilon(pair, omega)
    assert exact_delta(pair, eps) <= omega


def test_infeasible_target_names_delta_and_distinguishing_mass():
    pair = WorstCasePair.from_arrays([0.5, 0.5, 0.0], [0.0, 0.5, 0.5])
    for kind in ("ADP", "PDP"):
        with pytest.raises(InfeasibleTargetError, match=r"delta=0\.4 .*distinguishing mass .*0\.5"):
            exact_epsilon(pair, 0.4, kind=kind)
    assert exact_epsilon(pair, 0.5) == 0.0  # delta(0) = 0.5 exactly
    assert issubclass(InfeasibleTargetError, ValueError)


def test_epsilon_golden_value_for_uniform_pair():
    """Uniform noise on 3 points shifted by one step: A = (1/3, 1/3, 1/3, 0),
    B = (0, 1/3, 1/3, 1/3); all finite losses are 0, omega = 1/3, so delta(eps) = 1/3 for
    every eps and the smallest eps for any delta >= 1/3 is 0."""
    pair = WorstCasePair.additive(noise.uniform(bound=1.0, step=1.0), sensitivity=1.0)
    assert exact_delta(pair, np.array([0.0, 1.0, 5.0])) == pytest.approx([1 / 3] * 3)
    assert exact_epsilon(pair, 0.34) == 0.0
    with pytest.raises(InfeasibleTargetError):
        exact_epsilon(pair, 0.3)


def test_pld_methods_agree_with_module_functions():
    pair = WorstCasePair.subsampled(noise.truncated_gaussian(2.0, 6.0, 0.5), q=0.3, clip=1.0)
    pld = privacy_loss_distribution(pair, "A/B")
    assert pld.delta(0.4) == exact_delta(pair, 0.4, "A/B")
    assert pld.delta_pdp(0.4) == exact_delta_pdp(pair, 0.4, "A/B")
    assert pld.epsilon(1e-3) == exact_epsilon(pair, 1e-3, "A/B")
    assert pld.epsilon_pdp(1e-3) == exact_epsilon(pair, 1e-3, "A/B", kind="PDP")


# ---------------------------------------------------------------------------------------
# lattice: a Gaussian shifted by whole grid steps


@given(
    sigma=st.floats(0.5, 5.0),
    step=st.sampled_from([0.25, 0.5, 1.0]),
    half=st.integers(4, 40),
    steps=st.integers(1, 4),
)
@settings(max_examples=60, deadline=None)
def test_truncated_gaussian_losses_lie_on_the_lattice(sigma, step, half, steps):
    """p(x) ∝ exp(-x^2 / (2 sigma^2)) on the grid, so for the pair shifted by s = m*step
    L(x) = ln p(x) - ln p(x - s) = (s^2 - 2 x s) / (2 sigma^2) exactly (the normalising
    constant cancels)."""
    bound = half * step
    assume(bound**2 / (2 * sigma**2) < 600)  # no mass underflows to 0
    p = noise.truncated_gaussian(sigma=sigma, bound=bound, step=step)
    s = steps * step
    pair = WorstCasePair.additive(p, s)
    pld = privacy_loss_distribution(pair, "A/B")
    x = p.grid[steps:]  # outcomes where both A and B are positive
    expected = np.sort((s**2 - 2 * x * s) / (2 * sigma**2))
    np.testing.assert_allclose(pld.losses, expected, rtol=0, atol=1e-12)
    assert pld.distinguishing_mass == pytest.approx(math.fsum(p.pmf[:steps].tolist()), rel=1e-14)


@pytest.mark.parametrize(("scale", "step", "steps"), [(1.0, 0.5, 2), (0.7, 0.25, 3)])
def test_truncated_laplace_losses_lie_on_the_lattice(scale, step, steps):
    """L(x) = (|x - s| - |x|) / scale for p(x) ∝ exp(-|x| / scale)."""
    p = noise.truncated_laplace(scale=scale, bound=5.0, step=step)
    s = steps * step
    pld = privacy_loss_distribution(WorstCasePair.additive(p, s), "A/B")
    x = p.grid[steps:]
    expected = np.sort((np.abs(x - s) - np.abs(x)) / scale)
    np.testing.assert_allclose(pld.losses, expected, rtol=0, atol=1e-12)


def test_exact_epsilon_kind_is_spelled_as_everywhere():
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 4.0, 0.5), sensitivity=1.0)
    with pytest.raises(InvalidInputError, match=r"kind must be 'ADP' or 'PDP', got 'adp'"):
        exact_epsilon(pair, 0.1, kind="adp")
