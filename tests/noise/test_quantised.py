"""Quantised noise: integer weights over 2^bits that keep the support, the symmetry and
the monotonicity; the law drawn is exactly the quantised pmf; and the certified delta of
the quantised noise stays within the documented distance of the original's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from accountant import (
    InvalidInputError,
    NoiseDistribution,
    PrivacyBuckets,
    WorstCasePair,
    noise,
    optimal,
)
from accountant.noise.quantised import MAX_BITS, MIN_BITS, QuantisedNoise, quantise
from accountant.noise.sampling import table_indices
from tests.strategies import (
    STEPS,
    holey_pmfs,
    monotone_pmfs,
    nearly_symmetric_pmfs,
    pmfs,
    symmetric_pmfs,
)

FAMILIES = {
    "gaussian": noise.truncated_gaussian(2.0, 10.0, 0.5),
    "laplace": noise.truncated_laplace(1.5, 8.0, 0.25),
    "staircase": noise.staircase(1.0, 0.3, 6.0, 0.5),
    "uniform": noise.uniform(3.0, 0.5),
    "lp-optimum": optimal.optimal_noise(4.0, 0.5, 0.5, 0.05).noise,
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("bits", [16, 48, MAX_BITS])
def test_weights_sum_to_two_to_the_bits_and_keep_support_symmetry_and_shape(name, bits):
    p = FAMILIES[name]
    q = quantise(p, bits)
    assert int(q.weights.sum()) == 1 << bits and q.cumulative[-1] == 1 << bits
    assert np.array_equal(q.weights > 0, p.pmf > 0)
    if p.is_symmetric():
        assert np.array_equal(q.weights, q.weights[::-1])
    assert q.noise.is_monotone() == p.is_monotone()
    # each floor within one unit, the peak within the sum of them; and p's own total
    assert q.total_variation <= p.size * 2.0**-bits + abs(math.fsum(p.pmf.tolist()) - 1.0)


@given(pmf=st.one_of(pmfs(max_size=30), holey_pmfs()), bits=st.integers(20, MAX_BITS))
def test_the_sampled_law_is_a_float_exactly(pmf, bits):
    q = quantise(noise.from_array(pmf, 1.0, start=0.0), bits)
    law = q.noise.pmf
    assert math.fsum(law.tolist()) == 1.0  # each w / 2^bits is exact, so is their sum
    assert np.array_equal(np.ldexp(law, bits).astype(np.int64), q.weights)
    assert np.array_equal(law > 0, pmf > 0)


def test_the_table_gives_each_outcome_exactly_its_weight():
    """Every one of the 2^bits uniform integers, fed through the table: outcome i comes
    out exactly w_i times (the secure sampler's law, checked exactly, not statistically)."""
    q = quantise(FAMILIES["laplace"], 12)
    every_word = np.arange(1 << 12, dtype=np.uint64) << np.uint64(64 - 12)
    counts = np.bincount(table_indices(q.cumulative, every_word, 12), minlength=q.weights.size)
    assert np.array_equal(counts, q.weights)
    low_bits = every_word | np.uint64((1 << 52) - 1)  # the bits below are ignored
    assert np.array_equal(
        table_indices(q.cumulative, low_bits, 12), np.repeat(np.arange(q.weights.size), q.weights)
    )


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_million_simulated_draws_follow_the_quantised_pmf(name):
    q = quantise(FAMILIES[name])
    draws = q.simulate(1_000_000, np.random.default_rng(sum(map(ord, name))))
    index = np.rint((draws - q.original.start) / q.original.step).astype(np.int64)
    observed = np.bincount(index, minlength=q.weights.size)
    expected = 1_000_000 * q.noise.pmf
    kept = expected > 0
    assert observed[~kept].sum() == 0
    observed, expected = observed[kept], expected[kept]
    rare = expected < 5  # pooled into one cell, for the chi-square approximation
    if rare.any():
        observed = np.append(observed[~rare], observed[rare].sum())
        expected = np.append(expected[~rare], expected[rare].sum())
    statistic, p_value = stats.chisquare(observed, expected * observed.sum() / expected.sum())
    assert p_value > 1e-4, (statistic, p_value)


@settings(max_examples=30)
@given(pmf=holey_pmfs(min_size=3, max_size=8), seed=st.integers(0, 2**32 - 1))
def test_no_draw_ever_leaves_the_support(pmf, seed):
    p = noise.from_array(pmf, 0.5, start=-1.0)
    q = quantise(p, 20)
    support = set(p.grid[p.pmf > 0].tolist())
    assert set(q.draw(2000).tolist()) <= support
    assert set(q.simulate(2000, np.random.default_rng(seed)).tolist()) <= support


def test_secure_draws_follow_the_law_too():
    q = quantise(FAMILIES["gaussian"])
    draws = q.draw(200_000)
    assert set(np.unique(draws).tolist()) <= set(q.original.grid.tolist())
    # a smoke check of the source (the law itself is the table's, checked exactly above)
    assert abs(draws.mean()) < 5 * 2.0 / math.sqrt(200_000)


@pytest.mark.parametrize(
    ("p", "times", "epsilons"),
    [
        (noise.truncated_gaussian(100.0, 500.0, 0.5), 128, [0.1, 0.3, 1.0]),  # default audit
        (FAMILIES["lp-optimum"], 20, [0.5, 1.0, 2.0]),
        (noise.truncated_gaussian(2.0, 10.0, 0.5), 50, [0.5, 2.0]),
    ],
    ids=["default-audit", "lp-optimum", "small-gaussian"],
)
@pytest.mark.parametrize("bits", [24, 48])
def test_the_quantised_delta_stays_within_the_documented_distance(p, times, epsilons, bits):
    """|delta_q - delta| <= n t (1 + e^eps): the certified bracket of the quantised noise
    and that of the original overlap once widened by the bound (on both sides)."""
    q = quantise(p, bits)
    buckets = PrivacyBuckets(accuracy=1e-5)
    original = buckets.compose(WorstCasePair.additive(p, 1.0), times).delta(epsilons)
    released = buckets.compose(WorstCasePair.additive(q.noise, 1.0), times).delta(epsilons)
    bound = q.delta_shift_bound(epsilons, times)
    assert (released.upper >= original.lower - bound).all()
    assert (released.lower <= original.upper + bound).all()
    assert (bound < 1e-6).all() if bits == 48 else True


def test_coarse_bits_are_refused_by_name():
    wide = noise.uniform(150.0, 0.5)  # 601 positive masses, 2^8 = 256 weights
    with pytest.raises(InvalidInputError, match=r"bits=8 is too coarse"):
        quantise(wide, 8)
    # 1201 points, of which the ~155 with a mass that is not 0 fit into 2^8
    assert quantise(noise.truncated_gaussian(1.0, 300.0, 0.5), 8).noise.is_monotone(rtol=0.0)
    for bits, shown in [(7, "got 7"), (54, "got 54"), (2.5, "got 2.5"), ("48", "got '48'")]:
        with pytest.raises(InvalidInputError, match=rf"bits .*{shown}"):
            quantise(FAMILIES["gaussian"], bits)
    with pytest.raises(InvalidInputError, match="noise must be a NoiseDistribution"):
        quantise(np.array([0.5, 0.5]))
    assert isinstance(quantise(FAMILIES["uniform"], 8), QuantisedNoise)


# ---------------------------------------------------------------------------------------
# issue 25: no support created, symmetry only when exact, monotonicity kept by
# construction, idempotence, and refusals that name a remedy that exists

#: Every pmf shape the quantiser must take (<= 13 points: every bits >= 8 has room).
ANY_PMF = st.one_of(pmfs(max_size=13), holey_pmfs(), symmetric_pmfs(), nearly_symmetric_pmfs())
BITS = st.integers(MIN_BITS, MAX_BITS)


def _centred(pmf: np.ndarray, step: float = 1.0) -> NoiseDistribution:
    """``pmf`` on a grid centred on 0, of any length; exactly symmetric for a binary step."""
    return NoiseDistribution(pmf=pmf, step=step, start=-step * (pmf.size - 1) / 2)


@given(pmf=ANY_PMF, bits=BITS)
def test_weights_are_positive_exactly_where_the_pmf_is_and_sum_to_two_to_the_bits(pmf, bits):
    q = quantise(_centred(pmf), bits)
    assert np.array_equal(q.weights > 0, pmf > 0)
    assert sum(q.weights.tolist()) == 1 << bits


@given(pmf=symmetric_pmfs(), bits=BITS, step=st.sampled_from(STEPS))
def test_exact_symmetry_is_kept_exactly(pmf, bits, step):
    p = _centred(pmf, step)
    assert np.array_equal(p.grid, -p.grid[::-1])  # a binary step: the grid is exact
    q = quantise(p, bits)
    assert np.array_equal(q.weights, q.weights[::-1])
    assert np.array_equal(q.weights > 0, pmf > 0)


@given(drawn=monotone_pmfs(), bits=BITS, step=st.sampled_from(STEPS))
def test_exact_monotonicity_is_kept_exactly(drawn, bits, step):
    pmf, zero = drawn
    p = NoiseDistribution(pmf=pmf, step=step, start=-step * zero)
    assert p.is_monotone(rtol=0.0)
    q = quantise(p, bits)
    assert q.noise.is_monotone(rtol=0.0)
    assert np.array_equal(q.weights > 0, pmf > 0)


@given(pmf=ANY_PMF, bits=BITS, more=st.integers(0, MAX_BITS - MIN_BITS))
def test_quantising_a_quantised_law_again_gives_the_same_law(pmf, bits, more):
    q = quantise(_centred(pmf), bits)
    again = quantise(q.noise, min(bits + more, MAX_BITS))
    assert np.array_equal(again.noise.pmf, q.noise.pmf)
    assert np.array_equal(quantise(q.noise, bits).weights, q.weights)


def test_the_reported_pmf_gets_no_mass_where_it_has_none():
    """Issue 25: the mirrored branch (symmetric within a tolerance) put weight 1 on the
    last point, whose mass is 0; the pmf is exactly monotone, so the floors stand and
    nothing is mirrored."""
    p = noise.from_array(np.array([1e-16, 0.25, 0.5, 0.25 - 1e-16, 0.0]), step=1.0)
    q = quantise(p, 48)
    assert q.weights.tolist() == [1, 2**46, 2**47, 2**46 - 1, 0]
    for bits in (48, 50, MAX_BITS):
        assert np.array_equal(quantise(q.noise, bits).noise.pmf, q.noise.pmf)


def test_a_pmf_summing_above_one_is_levelled_from_the_top_keeping_its_shape():
    """Masses summing to 1 + 3e-10 (inside the tolerance) floor to more than 2^bits: the
    excess comes off the largest weights, outermost first, so uniform noise stays
    symmetric and monotone (taking it all off the middle would make it a dip)."""
    p = NoiseDistribution(pmf=np.full(7, (1.0 + 3e-10) / 7), step=0.5, start=-1.5)
    q = quantise(p, 40)
    assert sum(q.weights.tolist()) == 1 << 40
    assert np.array_equal(q.weights, q.weights[::-1]) and q.noise.is_monotone(rtol=0.0)
    assert q.weights.max() - q.weights.min() <= 2  # an odd remainder: the middle gets 1


def test_a_crowded_pmf_is_refused_naming_a_remedy_that_exists():
    from accountant.noise.quantised import _crowded_message

    crowded = noise.from_array(np.full(301, 1.0 / 301), step=1.0)
    with pytest.raises(InvalidInputError, match=r"bits=8 .*301 positive masses") as caught:
        quantise(crowded, 8)
    assert "merge or drop" in str(caught.value) and "more bits" in str(caught.value)
    assert "more bits" not in _crowded_message(2**53 + 1, 2**53 + 1, MAX_BITS)
    assert "merge or drop" in _crowded_message(2**53 + 1, 2**53 + 1, MAX_BITS)
