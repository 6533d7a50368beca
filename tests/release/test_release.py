"""Releasing answer + noise: outputs on the grid in integer arithmetic, the noise law the
quantised pmf exactly, answers off the grid refused or snapped with the sensitivity that
snapping needs, and the pair handed to the accountants the one released."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from accountant import InvalidInputError, PrivacyBuckets, WorstCasePair, noise
from accountant.noise.quantised import quantise
from accountant.release import Release, audited_sensitivity, release
from accountant.release.grid import grid_steps

NOISE = noise.truncated_gaussian(2.0, 10.0, 0.5)


def test_an_answer_on_the_grid_gets_exactly_grid_noise():
    answers = np.array([1.0, 2.5, -3.0, 0.0])
    result = release(answers, NOISE, sensitivity=1.0)
    assert isinstance(result, Release) and result.source == "os.urandom"
    assert result.grid_positions.dtype == np.int64
    assert np.array_equal(result.values, result.grid_positions * 0.5)
    offsets = result.grid_positions - np.array([2, 5, -6, 0])
    assert (np.abs(offsets) <= 20).all()  # the noise never leaves [-10, 10]
    assert result.releases == 4 and not result.snapped and result.sensitivity == 1.0


def test_the_noise_added_follows_the_quantised_law():
    q = quantise(NOISE, 40)
    result = release(np.full(400_000, 7.5), q, sensitivity=0.5, rng=np.random.default_rng(9))
    assert result.source.startswith("numpy Generator (simulation")
    offsets = result.grid_positions - 15 + 20  # back to grid indices 0..40
    observed = np.bincount(offsets, minlength=41)
    expected = 400_000 * q.noise.pmf
    rare = expected < 5
    observed = np.append(observed[~rare], observed[rare].sum())
    expected = np.append(expected[~rare], expected[rare].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_the_pair_to_audit_is_the_released_one():
    result = release(1.0, NOISE, sensitivity=1.0, bits=20)
    pair = result.pair
    expected = WorstCasePair.additive(quantise(NOISE, 20).noise, 1.0)
    assert np.array_equal(pair.a, expected.a) and np.array_equal(pair.b, expected.b)
    buckets = PrivacyBuckets(accuracy=1e-3)
    certified = buckets.compose(pair, result.releases).delta(1.0)
    original = buckets.compose(WorstCasePair.additive(NOISE, 1.0)).delta(1.0)
    bound = result.noise.delta_shift_bound(1.0)
    assert certified.upper >= original.lower - bound and certified.lower <= original.upper + bound


def test_answers_off_the_grid_are_refused_by_default():
    with pytest.raises(
        InvalidInputError, match=r"value=0\.3 \(at index 1\) is not on the noise grid"
    ):
        release([0.5, 0.3], NOISE, sensitivity=1.0)


def test_snapping_rounds_to_the_nearest_point_ties_up_and_says_so():
    result = release(np.array([0.2, 0.25, -0.25, 0.74]), NOISE, sensitivity=0.3, snap="nearest")
    steps, moved = grid_steps(np.array([0.2, 0.25, -0.25, 0.74]), 0.5, "nearest")
    assert steps.tolist() == [0, 1, 0, 1] and moved
    assert result.snapped and result.sensitivity == 0.5  # ceil(0.3 / 0.5) steps


@given(
    x=st.floats(-1e6, 1e6, allow_nan=False),
    gap=st.floats(0, 10, allow_nan=False),
    s_steps=st.floats(0.01, 8),
    step=st.sampled_from([0.5, 0.1, 1 / 3, 0.25]),
)
def test_snapped_answers_at_most_s_apart_are_at_most_the_audited_steps_apart(x, gap, s_steps, step):
    sensitivity = s_steps * step
    y = x + min(gap * step, sensitivity)
    if Fraction(y) - Fraction(x) > Fraction(sensitivity):
        y = math.nextafter(y, -math.inf)  # (the float sum may overshoot)
    if Fraction(y) - Fraction(x) > Fraction(sensitivity):
        return
    (kx, ky), _ = grid_steps(np.array([x, y]), step, "nearest")
    assert abs(int(ky) - int(kx)) * step <= audited_sensitivity(sensitivity, step) * (1 + 1e-12)
    assert abs(int(ky) - int(kx)) <= math.ceil(Fraction(sensitivity) / Fraction(step))


def test_the_audited_sensitivity_is_a_whole_number_of_steps_at_least_the_given():
    assert audited_sensitivity(1.0, 0.5) == 1.0
    assert audited_sensitivity(0.3, 0.1) == 3 * 0.1  # the ratio of the floats is 2.99..98
    assert audited_sensitivity(1 + 2.0**-52, 1.0) == 2.0  # a hair above: one step more
    assert audited_sensitivity(0.2, 0.5) == 0.5


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"value": float("nan")}, r"value must be finite, got nan"),
        ({"value": [1.0, float("inf")]}, r"value must be finite, got inf"),
        ({"value": "1.0"}, r"value must be a number or a non-empty array of numbers, got '1\.0'"),
        ({"value": True}, r"value must be a number or a non-empty array of numbers, got True"),
        ({"value": []}, r"value must be a number or a non-empty array of numbers, got \[\]"),
        ({"noise": [0.5, 0.5]}, r"noise must be a NoiseDistribution or a QuantisedNoise, got list"),
        ({"sensitivity": 0.0}, r"sensitivity must be > 0, got 0\.0"),
        ({"sensitivity": float("nan")}, r"sensitivity must be finite, got nan"),
        ({"snap": "floor"}, r"snap must be one of \('refuse', 'nearest'\), got 'floor'"),
        ({"bits": 60}, r"bits must lie in \[8, 53\], got 60"),
        ({"rng": 42}, r"rng must be a numpy\.random\.Generator, got 42"),
        ({"value": 1e300}, r"value=1e\+300 is .* grid steps from 0, beyond the 2\^62"),
        (
            {"noise": noise.from_array([0.5, 0.5], 0.5, start=0.2)},
            r"noise start=0\.2 is not a whole number of grid steps \(step=0\.5\)",
        ),
    ],
)
def test_bad_input_is_refused_by_name(arguments, match):
    call = {"value": 1.0, "noise": NOISE, "sensitivity": 1.0} | arguments
    with pytest.raises(InvalidInputError, match=match):
        release(call.pop("value"), call.pop("noise"), **call)
