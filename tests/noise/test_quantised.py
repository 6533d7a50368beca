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

from accountant import InvalidInputError, PrivacyBuckets, WorstCasePair, noise, optimal
from accountant.noise.quantised import MAX_BITS, QuantisedNoise, quantise
from accountant.noise.sampling import table_indices
from tests.strategies import holey_pmfs, pmfs

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
    wide = noise.truncated_gaussian(1.0, 300.0, 0.5)  # 1201 positive masses
    with pytest.raises(InvalidInputError, match=r"bits=8 is too coarse"):
        quantise(wide, 8)
    for bits, shown in [(7, "got 7"), (54, "got 54"), (2.5, "got 2.5"), ("48", "got '48'")]:
        with pytest.raises(InvalidInputError, match=rf"bits .*{shown}"):
            quantise(FAMILIES["gaussian"], bits)
    with pytest.raises(InvalidInputError, match="noise must be a NoiseDistribution"):
        quantise(np.array([0.5, 0.5]))
    assert isinstance(quantise(FAMILIES["uniform"], 8), QuantisedNoise)
