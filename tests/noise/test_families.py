"""Noise families, utility losses and sampling (SPEC sections 1 and 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import InvalidInputError, NoiseDistribution, WorstCasePair, noise
from accountant import noise as noise_module
from tests.strategies import grid_noises, symmetric_monotone_noises

# ---------------------------------------------------------------------------------------
# helpers


def _ratios_to_centre(p: NoiseDistribution) -> np.ndarray:
    centre = int(np.argmin(np.abs(p.grid)))
    return p.pmf / p.pmf[centre]


def _expected_symmetric_grid(bound: float, step: float) -> np.ndarray:
    half = round(bound / step)
    return step * np.arange(-half, half + 1)


def _cell_edges_and_cdf(p: NoiseDistribution) -> tuple[np.ndarray, np.ndarray]:
    """Edges of the sampling cells and the exact CDF there: the sampled law is the pmf
    smeared uniformly over ``[x_i - step/2, x_i + step/2)``, so its CDF is piecewise
    linear between the edges."""
    edges = p.start - p.step / 2 + p.step * np.arange(p.size + 1)
    cdf = np.concatenate([[0.0], np.cumsum(p.pmf)])
    return edges, cdf


def _dkw_bound(size: int, failure_probability: float = 1e-12) -> float:
    """Dvoretzky-Kiefer-Wolfowitz (Massart): P(sup |F_n - F| > t) <= 2 exp(-2 n t^2)."""
    return math.sqrt(math.log(2.0 / failure_probability) / (2.0 * size))


def _ks_statistic(samples: np.ndarray, cdf) -> float:
    """sup |F_n - F| for a continuous F given as a callable."""
    ordered = np.sort(samples)
    values = cdf(ordered)
    n = ordered.size
    upper = np.arange(1, n + 1) / n - values
    lower = values - np.arange(0, n) / n
    return float(max(upper.max(), lower.max()))


# ---------------------------------------------------------------------------------------
# families: grid, normalisation, shape


@pytest.mark.parametrize(
    ("sigma", "bound", "step"), [(1.0, 4.0, 0.5), (2.5, 10.0, 0.25), (100.0, 500.0, 0.5)]
)
def test_truncated_gaussian_grid_and_shape(sigma, bound, step):
    p = noise.truncated_gaussian(sigma=sigma, bound=bound, step=step)
    np.testing.assert_array_equal(p.grid, _expected_symmetric_grid(bound, step))
    assert p.step == step and p.start == -bound
    assert abs(math.fsum(p.pmf.tolist()) - 1.0) <= 1e-12
    # p_i proportional to exp(-x_i^2 / (2 sigma^2)) (paper, Example "Truncated Gaussian Noise")
    np.testing.assert_allclose(_ratios_to_centre(p), np.exp(-(p.grid**2) / (2 * sigma**2)), 1e-12)
    assert p.is_symmetric() and p.is_monotone()


@pytest.mark.parametrize(("scale", "bound", "step"), [(1.0, 4.0, 0.5), (3.0, 6.0, 0.25)])
def test_truncated_laplace_grid_and_shape(scale, bound, step):
    p = noise.truncated_laplace(scale=scale, bound=bound, step=step)
    np.testing.assert_array_equal(p.grid, _expected_symmetric_grid(bound, step))
    assert abs(math.fsum(p.pmf.tolist()) - 1.0) <= 1e-12
    np.testing.assert_allclose(_ratios_to_centre(p), np.exp(-np.abs(p.grid) / scale), 1e-12)
    assert p.is_symmetric() and p.is_monotone()


@pytest.mark.parametrize("step", [0.1, 0.3, 0.01, 1 / 3])
def test_families_keep_the_step_as_given(step):
    # (the step was once read back as grid[1] - grid[0]: 0.09999999999999964 for 0.1)
    families = [
        noise.truncated_gaussian(2.0, 30 * step, step),
        noise.truncated_laplace(2.0, 30 * step, step),
        noise.staircase(1.0, 0.3, 30 * step, step),
        noise.uniform(30 * step, step),
    ]
    for p in families:
        assert p.step == step and p.start / p.step == pytest.approx(-30, abs=1e-9)


def test_uniform_is_flat():
    p = noise.uniform(bound=3.0, step=0.5)
    assert p.size == 13
    np.testing.assert_allclose(p.pmf, np.full(13, 1 / 13), rtol=1e-14)
    assert p.is_symmetric() and p.is_monotone()


def test_staircase_matches_hand_derived_levels():
    """SPEC section 4 with D = 1, gamma = 0.5, step 0.25: |x| = 0, 0.25 lie in [0, gamma D)
    (level 1); 0.5, 0.75, 1, 1.25 in [gamma D, (1+gamma) D) (level e^-eps); 1.5, 1.75, 2
    in [(1+gamma) D, (2+gamma) D) (level e^-2eps)."""
    eps = 0.7
    p = noise.staircase(sensitivity=1.0, epsilon=eps, bound=2.0, step=0.25, gamma=0.5)
    levels_right = [0, 0, 1, 1, 1, 1, 2, 2, 2]  # exponent k at |x| = 0, 0.25, ..., 2
    expected = np.exp(-eps * np.array(levels_right[:0:-1] + levels_right, dtype=float))
    np.testing.assert_allclose(p.pmf, expected / math.fsum(expected.tolist()), rtol=1e-13)


@given(
    eps=st.floats(0.05, 3.0),
    sensitivity=st.sampled_from([0.5, 1.0, 2.0]),
    gamma=st.floats(0.01, 0.99),
)
@settings(max_examples=40, deadline=None)
def test_staircase_against_density_formula(eps, sensitivity, gamma):
    step = 0.125
    p = noise.staircase(sensitivity, eps, bound=4.0, step=step, gamma=gamma)
    scaled = np.abs(p.grid) / sensitivity
    k = np.floor(scaled + 1e-9)
    # grid points within 1e-9 of a stair edge are ambiguous in floating point: skip them
    ambiguous = np.abs(scaled - k - gamma) < 1e-9
    level = np.where(scaled - k < gamma, -eps * k, -eps * (k + 1))
    expected = np.exp(level - level.max())
    ratio = p.pmf / expected
    np.testing.assert_allclose(ratio[~ambiguous], ratio[~ambiguous][0], rtol=1e-12)
    assert p.is_symmetric() and p.is_monotone()


def test_staircase_default_gamma_is_gamma_star():
    eps = 0.3
    gamma_star = 1.0 / (1.0 + math.exp(eps / 2.0))  # SPEC section 4 (Geng & Viswanath)
    default = noise.staircase(1.0, eps, bound=5.0, step=0.01)
    explicit = noise.staircase(1.0, eps, bound=5.0, step=0.01, gamma=gamma_star)
    np.testing.assert_array_equal(default.pmf, explicit.pmf)
    # and the default is not some other gamma: gamma = 0.5 gives a different pmf
    other = noise.staircase(1.0, eps, bound=5.0, step=0.01, gamma=0.5)
    assert not np.allclose(default.pmf, other.pmf)


def test_staircase_utility_reproduces_geng_et_al():
    """Golden value: truncated staircase, sensitivity 1, eps 0.3, bound 5, fine grid.
    Paper, Section "Reproduction of Analytic Optimal Noise": Geng et al. U_L1 = 1.884;
    SPEC section 5: U_L1 ~ 1.885."""
    p = noise.staircase(sensitivity=1.0, epsilon=0.3, bound=5.0, step=0.001)
    assert p.utility_l1 == pytest.approx(1.885, abs=0.01)


def test_from_array_centres_odd_arrays_and_keeps_explicit_start():
    centred = noise.from_array([0.25, 0.5, 0.25], step=0.5)
    np.testing.assert_array_equal(centred.grid, [-0.5, 0.0, 0.5])
    placed = noise.from_array([0.5, 0.5], step=2.0, start=3.0)
    np.testing.assert_array_equal(placed.grid, [3.0, 5.0])
    np.testing.assert_array_equal(placed.pmf, [0.5, 0.5])


@given(p=grid_noises())
@settings(max_examples=60, deadline=None)
def test_from_array_round_trip_keeps_masses_exactly(p):
    again = noise.from_array(p.pmf, step=p.step, start=p.start)
    np.testing.assert_array_equal(again.pmf, p.pmf)  # never renormalised
    np.testing.assert_array_equal(again.grid, p.grid)


# ---------------------------------------------------------------------------------------
# symmetry and monotonicity


def test_bimodal_array_is_symmetric_but_not_monotone():
    p = noise.from_array([0.1, 0.3, 0.2, 0.3, 0.1], step=1.0)
    assert p.is_symmetric()
    assert not p.is_monotone()


def test_shifted_array_is_not_symmetric():
    pmf = [0.2, 0.6, 0.2]
    assert noise.from_array(pmf, step=1.0).is_symmetric()
    assert not noise.from_array(pmf, step=1.0, start=0.0).is_symmetric()  # grid 0, 1, 2


def test_asymmetric_masses_on_symmetric_grid():
    p = noise.from_array([0.1, 0.6, 0.3], step=1.0)
    assert not p.is_symmetric()
    assert p.is_monotone()


def test_monotone_means_falling_away_from_zero_not_globally():
    # peak off-centre: rises on the right of 0
    assert not noise.from_array([0.1, 0.2, 0.4, 0.2, 0.1], step=1.0, start=-1.0).is_monotone()
    # one-sided noise on x >= 0 that falls: monotone
    assert noise.from_array([0.5, 0.3, 0.2], step=1.0, start=0.0).is_monotone()


@given(p=symmetric_monotone_noises())
@settings(max_examples=50, deadline=None)
def test_mirrored_sorted_masses_are_symmetric_and_monotone(p):
    assert p.is_symmetric()
    assert p.is_monotone()


# ---------------------------------------------------------------------------------------
# utility losses


def test_utility_hand_values():
    p = noise.from_array([0.25, 0.5, 0.25], step=2.0)  # x = -2, 0, 2
    assert p.utility_l1 == 1.0
    assert p.utility_l2 == math.sqrt(2.0)
    assert p.utility("L1") == p.utility_l1
    assert p.utility("L2") == p.utility_l2


@given(p=grid_noises())
@settings(max_examples=80, deadline=None)
def test_utility_against_direct_formulas(p):
    x = [p.start + i * p.step for i in range(p.size)]
    l1 = math.fsum(abs(xi) * pi for xi, pi in zip(x, p.pmf, strict=True))
    l2 = math.sqrt(math.fsum(xi * xi * pi for xi, pi in zip(x, p.pmf, strict=True)))
    assert p.utility_l1 == pytest.approx(l1, rel=1e-12, abs=1e-300)
    assert p.utility_l2 == pytest.approx(l2, rel=1e-12, abs=1e-300)


def test_uniform_utility_closed_form():
    # grid -m..m (step 1): U_L1 = m(m+1)/(2m+1), U_L2^2 = m(m+1)/3
    m = 10
    p = noise.uniform(bound=float(m), step=1.0)
    assert p.utility_l1 == pytest.approx(m * (m + 1) / (2 * m + 1), rel=1e-13)
    assert p.utility_l2 == pytest.approx(math.sqrt(m * (m + 1) / 3), rel=1e-13)


# ---------------------------------------------------------------------------------------
# sampling

N_SAMPLES = 200_000


def _exact_moments(p: NoiseDistribution) -> tuple[float, float, float]:
    """Mean, variance and E|X| of the sampled law (cells uniform around grid points)."""
    x, h = p.grid, p.step
    mean = float(np.dot(p.pmf, x))
    second = float(np.dot(p.pmf, x**2)) + h**2 / 12.0
    left, right = x - h / 2, x + h / 2
    straddles = (left < 0) & (right > 0)
    abs_in_cell = np.where(straddles, (left**2 + right**2) / (2 * h), np.abs(x))
    return mean, second - mean**2, float(np.dot(p.pmf, abs_in_cell))


SAMPLED_NOISES = {
    "laplace": noise.truncated_laplace(scale=2.0, bound=6.0, step=0.5),
    "asymmetric_with_hole": NoiseDistribution(
        pmf=[0.05, 0.0, 0.4, 0.25, 0.0, 0.2, 0.1], step=0.25, start=-0.75
    ),
    "off_grid_start": NoiseDistribution(pmf=[0.3, 0.3, 0.4], step=1.0, start=-0.3),
}


@pytest.mark.parametrize("name", sorted(SAMPLED_NOISES))
def test_one_dimensional_sample_moments(name):
    p = SAMPLED_NOISES[name]
    draws = p.sample(N_SAMPLES, np.random.default_rng(20240601))
    assert draws.shape == (N_SAMPLES,) and draws.dtype == np.float64
    mean, variance, abs_mean = _exact_moments(p)
    sd = math.sqrt(variance / N_SAMPLES)
    assert abs(draws.mean() - mean) < 6 * sd
    assert abs(np.abs(draws).mean() - abs_mean) < 6 * math.sqrt(np.mean(draws**2) / N_SAMPLES)
    assert abs(draws.var() - variance) < 0.02 * variance + 1e-12


@pytest.mark.parametrize("name", sorted(SAMPLED_NOISES))
def test_one_dimensional_sample_distribution_function(name):
    """Empirical CDF (hence every quantile) against the exact piecewise-linear CDF."""
    p = SAMPLED_NOISES[name]
    draws = p.sample(N_SAMPLES, np.random.default_rng(7))
    edges, cdf = _cell_edges_and_cdf(p)
    statistic = _ks_statistic(draws, lambda t: np.interp(t, edges, cdf))
    assert statistic < _dkw_bound(N_SAMPLES)


def test_sample_quantiles_of_symmetric_noise():
    p = noise.truncated_gaussian(sigma=2.0, bound=8.0, step=0.5)
    draws = p.sample(N_SAMPLES, np.random.default_rng(11))
    edges, cdf = _cell_edges_and_cdf(p)
    for level in (0.05, 0.25, 0.5, 0.75, 0.95):
        exact = float(np.interp(level, cdf, edges))  # exact quantile of the sampled law
        # by DKW the empirical quantile lies between the exact level -/+ t quantiles
        t = _dkw_bound(N_SAMPLES)
        low, high = np.interp([level - t, level + t], cdf, edges)
        empirical = float(np.quantile(draws, level))
        assert low <= empirical <= high, (level, exact, empirical)
    assert float(np.quantile(draws, 0.5)) == pytest.approx(0.0, abs=0.05)


@given(p=grid_noises(), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_draws_lie_in_the_cells_of_positive_mass(p, seed):
    draws = p.sample(500, np.random.default_rng(seed))
    end = p.start + (p.size - 1) * p.step
    assert (draws >= p.start - p.step / 2).all()
    assert (draws < end + p.step / 2).all()
    position = (draws - (p.start - p.step / 2)) / p.step  # cell i is [i, i + 1)
    on_edge = np.abs(position - np.round(position)) < 1e-9  # rounding may move it across
    cell = np.floor(position[~on_edge]).astype(int)
    assert (p.pmf[cell] > 0.0).all()
    edge = np.round(position[on_edge]).astype(int)
    left, right = np.clip(edge - 1, 0, p.size - 1), np.clip(edge, 0, p.size - 1)
    assert ((p.pmf[left] > 0.0) | (p.pmf[right] > 0.0)).all()


def test_sample_is_reproducible_with_a_seeded_generator():
    p = noise.truncated_laplace(scale=1.0, bound=3.0, step=0.5)
    first = p.sample(1000, np.random.default_rng(3))
    second = p.sample(1000, np.random.default_rng(3))
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, p.sample(1000, np.random.default_rng(4)))


def test_point_mass_samples_its_cell_uniformly():
    p = NoiseDistribution(pmf=[1.0], step=2.0, start=5.0)
    draws = p.sample(N_SAMPLES, np.random.default_rng(5))
    assert (draws >= 4.0).all() and (draws < 6.0).all()
    statistic = _ks_statistic(draws, lambda t: np.clip((t - 4.0) / 2.0, 0.0, 1.0))
    assert statistic < _dkw_bound(N_SAMPLES)


def test_dimension_one_is_the_plain_draw():
    p = noise.truncated_laplace(scale=1.0, bound=3.0, step=0.5)
    flat = p.sample(100, np.random.default_rng(1), dimension=1)
    np.testing.assert_array_equal(flat, p.sample(100, np.random.default_rng(1)))
    q = NoiseDistribution(pmf=[1.0], step=1.0, start=-3.0)
    assert (q.sample(100, np.random.default_rng(1)) < 0).all()  # the 1-D draw keeps its sign


# ---------------------------------------------------------------------------------------
# immutability and grid shifts


def test_pmf_is_read_only_and_a_copy():
    source = np.array([0.25, 0.5, 0.25])
    p = NoiseDistribution(pmf=source, step=1.0, start=-1.0)
    with pytest.raises(ValueError, match="read-only"):
        p.pmf[0] = 0.5
    source[0] = 0.9  # the caller's array stays theirs
    assert p.pmf[0] == 0.25
    q = noise.truncated_gaussian(sigma=1.0, bound=2.0, step=1.0)
    with pytest.raises(ValueError, match="read-only"):
        q.pmf[:] = 0.0


def test_attributes_are_frozen():
    p = noise.uniform(bound=1.0, step=1.0)
    with pytest.raises(AttributeError):
        p.step = 2.0


def test_shift_steps_accepts_whole_multiples():
    p = noise.uniform(bound=2.0, step=0.5)
    assert p.shift_steps(0.5) == 1
    assert p.shift_steps(1.5) == 3
    tenth = noise.uniform(bound=1.0, step=0.1)
    assert tenth.shift_steps(0.3) == 3  # 0.3 / 0.1 = 2.9999999999999996 in floating point


@pytest.mark.parametrize(
    ("length", "name", "pattern"),
    [
        (0.3, "sensitivity", r"sensitivity=0\.3 .*step=0\.5.*multiples of the step: 0\.5, 1, 1\.5"),
        (0.75, "clip", r"clip=0\.75 .*multiples of the step: 0\.5, 1, 1\.5"),
        (0.2, "sensitivity", r"sensitivity=0\.2 .*multiples of the step"),
    ],
)
def test_shift_steps_errors_mention_the_possible_multiples(length, name, pattern):
    p = noise.uniform(bound=2.0, step=0.5)
    with pytest.raises(InvalidInputError, match=pattern):
        p.shift_steps(length, name=name)


def test_float32_pmf_is_accepted_with_a_tolerance_that_fits_its_precision():
    # issue 11, item 10: a float32 pmf normalised in float32 sums to 1 only within ~1e-7,
    # which the float64 tolerance of 1e-9 refused
    weights = np.exp(-0.5 * (np.arange(-1000, 1001) / 100.0) ** 2).astype(np.float32)
    pmf32 = weights / weights.sum()
    assert abs(math.fsum(pmf32.astype(np.float64).tolist()) - 1.0) > 1e-9
    noise = noise_module.from_array(pmf32, 0.5)
    assert noise.pmf.dtype == np.float64
    assert np.array_equal(noise.pmf, pmf32.astype(np.float64))  # widened exactly, as given
    assert noise.mass_tolerance == (pmf32.size + 1) * 2.0**-24
    pair = WorstCasePair.additive(noise, 1.0)  # the tolerance travels with the noise
    assert pair.mass_tolerance == noise.mass_tolerance
    assert WorstCasePair.from_arrays(pair.a.astype(np.float32), pair.b.astype(np.float32)).size
    with pytest.raises(InvalidInputError, match=r"sum to 1 \(tolerance 0\.000119"):
        noise_module.from_array(pmf32 * np.float32(1.01), 0.5)
    with pytest.raises(InvalidInputError, match=r"sum to 1 \(tolerance 1e-09\)"):
        noise_module.from_array(pmf32.astype(np.float64) * 1.00001, 0.5)


# ---------------------------------------------------------------------------------------
# issue 25: a grid too large for the memory is refused before it is allocated


@pytest.mark.parametrize(
    "family",
    [
        lambda bound, step: noise.truncated_gaussian(100.0, bound, step),
        lambda bound, step: noise.truncated_laplace(100.0, bound, step),
        lambda bound, step: noise.staircase(1.0, 0.3, bound, step),
        noise.uniform,
    ],
    ids=["gaussian", "laplace", "staircase", "uniform"],
)
def test_a_grid_too_large_for_memory_is_refused_naming_step_bound_and_memory(family):
    """500 / 1e-7: 10^10 points, some 745 GiB, far above any test machine's memory (the
    issue: numpy's 74.5 GiB allocation failed with a traceback). Refused before any array
    is allocated: the peak traced allocation stays tiny."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InvalidInputError) as caught:
            family(500.0, 1e-7)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert "step=1e-07" in message and "bound=500.0" in message
    assert "10,000,000,001 points" in message and "GiB" in message
    assert "\n" not in message
    assert peak < 10 * 2**20  # nothing near the size of the grid was allocated


def test_the_memory_a_grid_needs_is_its_points_times_the_bytes_per_point(monkeypatch):
    from accountant.noise import families

    assert families.grid_memory(1000.0, 0.5) == 4001 * families.BYTES_PER_GRID_POINT
    monkeypatch.setattr(families, "memory_limit", lambda: 4000 * families.BYTES_PER_GRID_POINT)
    with pytest.raises(InvalidInputError, match=r"4,001 points"):
        noise.uniform(1000.0, 0.5)
    assert noise.uniform(999.5, 0.5).size == 3999
