"""Worst-case pairs: additive layout, DP-SGD mixture, raw arrays, flipping and the
shift-invariance warning (SPEC sections 1 and 4; paper, Theorem "Shift Invariance")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import (
    NoiseDistribution,
    ShiftInvarianceWarning,
    WorstCasePair,
    additive_shift_pairs,
    exact_delta,
    exact_delta_pdp,
    noise,
)
from tests.strategies import (
    epsilons,
    noises_with_sensitivity,
    symmetric_monotone_noises,
    worst_case_pairs,
)

BIMODAL = noise.from_array([0.3, 0.05, 0.3, 0.05, 0.3], step=1.0)  # symmetric, not monotone
ASYMMETRIC = noise.from_array([0.1, 0.6, 0.3], step=0.5)  # monotone, not symmetric


def _expected_additive(pmf: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """SPEC section 1: A = p padded by m zeros right, B = p shifted right by m."""
    a = np.array(list(pmf) + [0.0] * steps)
    b = np.array([0.0] * steps + list(pmf))
    return a, b


# ---------------------------------------------------------------------------------------
# additive layout


def test_additive_layout_by_hand():
    p = noise.from_array([0.25, 0.5, 0.25], step=0.5)
    pair = WorstCasePair.additive(p, sensitivity=1.0)  # two grid steps
    np.testing.assert_array_equal(pair.a, [0.25, 0.5, 0.25, 0.0, 0.0])
    np.testing.assert_array_equal(pair.b, [0.0, 0.0, 0.25, 0.5, 0.25])
    assert pair.size == 5
    assert "2 grid steps" in pair.description


@given(case=noises_with_sensitivity(symmetric_monotone_noises()))
@settings(max_examples=60, deadline=None)
def test_additive_layout_symmetric_monotone(case):
    p, sensitivity = case
    steps = round(sensitivity / p.step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ShiftInvarianceWarning for such noise
        pair = WorstCasePair.additive(p, sensitivity)
    a, b = _expected_additive(p.pmf, steps)
    np.testing.assert_array_equal(pair.a, a)
    np.testing.assert_array_equal(pair.b, b)


@given(case=noises_with_sensitivity())
@settings(max_examples=60, deadline=None)
def test_additive_layout_any_noise(case):
    p, sensitivity = case
    steps = round(sensitivity / p.step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShiftInvarianceWarning)
        pair = WorstCasePair.additive(p, sensitivity)
    a, b = _expected_additive(p.pmf, steps)
    np.testing.assert_array_equal(pair.a, a)
    np.testing.assert_array_equal(pair.b, b)


# ---------------------------------------------------------------------------------------
# DP-SGD mixture


def test_subsampled_by_hand():
    p = noise.from_array([0.25, 0.5, 0.25], step=1.0)
    pair = WorstCasePair.subsampled(p, q=0.5, clip=1.0)
    np.testing.assert_array_equal(pair.a, [0.25, 0.5, 0.25, 0.0])
    # B = 0.5 * [0.25, 0.5, 0.25, 0] + 0.5 * [0, 0.25, 0.5, 0.25]
    np.testing.assert_array_equal(pair.b, [0.125, 0.375, 0.375, 0.125])


@given(
    case=noises_with_sensitivity(),
    q=st.one_of(st.sampled_from([1e-6, 0.01, 0.5, 1.0]), st.floats(1e-9, 1.0)),
)
@settings(max_examples=80, deadline=None)
def test_subsampled_mixture_formula(case, q):
    p, clip = case
    steps = round(clip / p.step)
    pair = WorstCasePair.subsampled(p, q=q, clip=clip)
    a, shifted = _expected_additive(p.pmf, steps)
    np.testing.assert_array_equal(pair.a, a)
    expected_b = np.array([(1 - q) * ai + q * si for ai, si in zip(a, shifted, strict=True)])
    np.testing.assert_allclose(pair.b, expected_b, rtol=1e-15, atol=0.0)


@given(case=noises_with_sensitivity())
@settings(max_examples=50, deadline=None)
def test_subsampling_with_q_one_is_the_additive_pair(case):
    p, sensitivity = case
    mixed = WorstCasePair.subsampled(p, q=1.0, clip=sensitivity)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShiftInvarianceWarning)
        additive = WorstCasePair.additive(p, sensitivity)
    np.testing.assert_array_equal(mixed.a, additive.a)
    np.testing.assert_array_equal(mixed.b, additive.b)


def test_subsampled_description_names_q_and_clip():
    pair = WorstCasePair.subsampled(noise.uniform(2.0, 0.5), q=0.1, clip=1.0)
    assert "q=0.1" in pair.description and "2 steps" in pair.description


# ---------------------------------------------------------------------------------------
# raw arrays and flipping


def test_from_arrays_keeps_both_arrays_exactly():
    a = np.array([0.1, 0.0, 0.9])
    b = np.array([0.0, 0.7, 0.3])
    pair = WorstCasePair.from_arrays(a, b)
    np.testing.assert_array_equal(pair.a, a)
    np.testing.assert_array_equal(pair.b, b)
    assert pair.description == "pair"
    assert WorstCasePair.from_arrays(a, b, description="mine").description == "mine"
    a[0] = 0.5  # a copy was taken
    assert pair.a[0] == 0.1


def test_pair_arrays_are_read_only():
    pair = WorstCasePair.from_arrays([0.5, 0.5], [0.5, 0.5])
    for array in (pair.a, pair.b):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0


@given(pair=worst_case_pairs())
@settings(max_examples=60, deadline=None)
def test_flipped_swaps_roles(pair):
    flipped = pair.flipped()
    np.testing.assert_array_equal(flipped.a, pair.b)
    np.testing.assert_array_equal(flipped.b, pair.a)
    assert "flipped" in flipped.description
    twice = flipped.flipped()
    np.testing.assert_array_equal(twice.a, pair.a)
    np.testing.assert_array_equal(twice.b, pair.b)
    # the directions of the bounds swap with the roles
    assert exact_delta(flipped, 0.5, "A/B") == exact_delta(pair, 0.5, "B/A")
    assert exact_delta(flipped, 0.5, "B/A") == exact_delta(pair, 0.5, "A/B")


# ---------------------------------------------------------------------------------------
# shift invariance


@pytest.mark.parametrize("p", [BIMODAL, ASYMMETRIC], ids=["bimodal", "asymmetric"])
def test_additive_warns_for_noise_that_is_not_symmetric_and_monotone(p):
    with pytest.warns(ShiftInvarianceWarning, match=r"additive_shift_pairs\(\).*1\.\.2"):
        WorstCasePair.additive(p, sensitivity=2 * p.step)


@pytest.mark.parametrize(
    "p",
    [
        noise.truncated_gaussian(1.0, 3.0, 0.5),
        noise.truncated_laplace(1.0, 3.0, 0.5),
        noise.staircase(1.0, 0.3, 3.0, 0.25),
        noise.uniform(3.0, 0.5),
    ],
    ids=["gaussian", "laplace", "staircase", "uniform"],
)
def test_families_do_not_warn(p):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WorstCasePair.additive(p, sensitivity=1.0)
        assert len(additive_shift_pairs(p, 1.0)) == 1


def test_subsampled_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WorstCasePair.subsampled(noise.truncated_gaussian(1.0, 3.0, 0.5), q=0.1, clip=1.0)


@given(case=noises_with_sensitivity(symmetric_monotone_noises()))
@settings(max_examples=50, deadline=None)
def test_additive_shift_pairs_one_pair_for_symmetric_monotone_noise(case):
    p, sensitivity = case
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairs = additive_shift_pairs(p, sensitivity)
        full = WorstCasePair.additive(p, sensitivity)
    assert len(pairs) == 1
    np.testing.assert_array_equal(pairs[0].a, full.a)
    np.testing.assert_array_equal(pairs[0].b, full.b)


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
def test_additive_shift_pairs_every_shift_for_bimodal_noise(steps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the helper itself does not warn
        pairs = additive_shift_pairs(BIMODAL, sensitivity=steps * BIMODAL.step)
    assert len(pairs) == steps
    for k, pair in enumerate(pairs, start=1):
        a, b = _expected_additive(BIMODAL.pmf, k)
        np.testing.assert_array_equal(pair.a, a)
        np.testing.assert_array_equal(pair.b, b)


def test_smaller_shift_can_be_worse_for_non_monotone_noise():
    """Why the audit needs every shift: two spikes two steps apart. Shifting by 1 step
    makes A and B disjoint (delta = 1), shifting by 2 overlaps one spike (delta = 1/2)."""
    p = NoiseDistribution(pmf=[0.5, 0.0, 0.5], step=1.0, start=-1.0)
    with pytest.warns(ShiftInvarianceWarning):
        full = WorstCasePair.additive(p, sensitivity=2.0)
    assert exact_delta(full, 0.0) == 0.5
    pairs = additive_shift_pairs(p, 2.0)
    assert exact_delta(pairs[0], 0.0) == 1.0
    assert exact_delta(pairs, 0.0) == 1.0  # the worst case over all shifts


@given(p=symmetric_monotone_noises(), steps=st.integers(2, 5), eps=epsilons())
@settings(max_examples=80, deadline=None)
def test_full_shift_bounds_smaller_shifts_for_symmetric_monotone_noise(p, steps, eps):
    """The premise of returning a single pair (paper, Theorem "Shift Invariance"), checked
    numerically on the exact single-release ADP and PDP bounds."""
    full = WorstCasePair.additive(p, steps * p.step)
    for k in range(1, steps):
        smaller = WorstCasePair.additive(p, k * p.step)
        assert exact_delta(smaller, eps) <= exact_delta(full, eps) + 1e-15
        assert exact_delta_pdp(smaller, eps) <= exact_delta_pdp(full, eps) + 1e-15
