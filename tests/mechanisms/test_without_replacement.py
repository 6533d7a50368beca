"""Sampling without replacement under replace-one neighbours, against brute force: every
sample of ``m`` of ``n <= 6`` records enumerated, one-dimensional sums with noise, the exact
hockey-stick divergence of the resulting mixtures (exact sums for noise on a grid, mpmath
quadrature for Gaussian noise), for the worst-case datasets of the module docstring (the
bound is attained), random datasets, and two steps whose orientation flips (what the
symmetric pair is for)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import mpmath as mp
import numpy as np
import pytest

from accountant import (
    ExtendedMA,
    InvalidInputError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta,
    noise,
)
from accountant.mechanisms import GaussianMechanism, WithoutReplacementGaussian
from accountant.mechanisms.without_replacement import without_replacement_pair

mp.mp.dps = 20
N, M = 6, 2  # gamma = 1/3


def _sums(values: list[float], m: int) -> Counter:
    """How many of the samples of ``m`` records have each sum."""
    return Counter(round(sum(c), 9) for c in itertools.combinations(values, m))


# -- noise on a grid: exact sums -------------------------------------------------------------


GRID = noise.truncated_gaussian(1.0, 4.0, 0.5)  # sensitivity 1 = 2 steps


def _grid_law(values: list[float]) -> dict[int, float]:
    """The output pmf of one step on grid indices: the sampled sum plus the grid noise."""
    law: dict[int, float] = {}
    sums = _sums(values, M)
    total = sum(sums.values())
    step = GRID.step
    for value, count in sums.items():
        shift = round(value / step)
        for k, p in enumerate(GRID.pmf):
            law[k + shift] = law.get(k + shift, 0.0) + p * count / total
    return law


def _hockey(first: dict, second: dict, eps: float) -> float:
    """``sum max(0, first - e^eps second)`` over the union of outcomes."""
    keys = set(first) | set(second)
    return math.fsum(max(0.0, first.get(k, 0.0) - math.exp(eps) * second.get(k, 0.0)) for k in keys)


def _product(first: dict, second: dict) -> dict:
    return {(i, j): p * q for i, p in first.items() for j, q in second.items()}


def _symmetric_composed(pair, times: int, eps: float) -> float:
    """The exact delta of ``times`` releases of ``pair`` (outcomes enumerated)."""
    a = {i: float(v) for i, v in enumerate(pair.a) if v > 0 or pair.b[i] > 0}
    b = {i: float(pair.b[i]) for i in a}
    composed_a, composed_b = a, b
    for _ in range(times - 1):
        composed_a, composed_b = _product(composed_a, a), _product(composed_b, b)
    return _hockey(composed_a, composed_b, eps)


def _datasets(others: float, x: float, x_prime: float) -> tuple[list[float], list[float]]:
    rest = [others] * (N - 1)
    return [x, *rest], [x_prime, *rest]


EPSILONS = [0.0, 0.3, 1.0, 2.0]


def test_grid_pair_is_attained_by_the_worst_datasets():
    pair = without_replacement_pair(GRID, 1.0, M / N)
    d, d_prime = _datasets(-1.0, 1.0, -1.0)
    law, law_prime = _grid_law(d), _grid_law(d_prime)
    for eps in EPSILONS:
        brute = max(_hockey(law, law_prime, eps), _hockey(law_prime, law, eps))
        assert exact_delta(pair, eps) == pytest.approx(brute, rel=1e-12, abs=1e-15)


def test_grid_pair_bounds_random_datasets():
    pair = without_replacement_pair(GRID, 1.0, M / N)
    rng = np.random.default_rng(5)
    for _ in range(20):
        values = list(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], N + 1))
        d, d_prime = values[:N], [values[N], *values[1:N]]
        law, law_prime = _grid_law(d), _grid_law(d_prime)
        for eps in EPSILONS:
            brute = max(_hockey(law, law_prime, eps), _hockey(law_prime, law, eps))
            assert brute <= exact_delta(pair, eps) * (1 + 1e-12) + 1e-15


def test_grid_pair_bounds_two_steps_whose_orientation_flips():
    """Step one with the others at -1 gives (P', Q'); step two with them at +1 gives the
    mirror (Q', P'), or, adaptively, whichever orientation the first output favours: the
    symmetric pair composed twice bounds every such composition (and exceeds composing
    P'/Q' with itself, which no theorem bounds them by)."""
    pair = without_replacement_pair(GRID, 1.0, M / N)
    first = [_grid_law(d) for d in _datasets(-1.0, 1.0, -1.0)]
    second = [_grid_law(d) for d in _datasets(1.0, 1.0, -1.0)]
    flipped = (_product(first[0], second[0]), _product(first[1], second[1]))
    favoured = [{}, {}]  # step two: the same orientation after a first output with loss > 0
    for k in set(first[0]) | set(first[1]):
        p, q = first[0].get(k, 0.0), first[1].get(k, 0.0)
        after = first if p > q else second
        for side, weight in ((0, p), (1, q)):
            for j, mass in after[side].items():
                favoured[side][(k, j)] = weight * mass
    same = (_product(first[0], first[0]), _product(first[1], first[1]))
    for eps in EPSILONS:
        bound = _symmetric_composed(pair, 2, eps) * (1 + 1e-12) + 1e-15
        for laws in (flipped, favoured, same):
            assert max(_hockey(*laws, eps), _hockey(laws[1], laws[0], eps)) <= bound


def test_grid_pair_with_every_record_sampled_is_the_additive_pair():
    """m = n: the pair is the additive one at twice the sensitivity (symmetric)."""
    rate = 1.0 - 1e-15  # the limit; rate 1 itself is refused by name
    pair = without_replacement_pair(GRID, 1.0, rate)
    additive = exact_delta(WorstCasePair.additive(GRID, 2.0), 0.5)
    assert exact_delta(pair, 0.5) == pytest.approx(additive, rel=1e-9)
    with pytest.raises(InvalidInputError, match="sampling_rate"):
        without_replacement_pair(GRID, 1.0, 1.0)


# -- Gaussian noise: mpmath quadrature ---------------------------------------------------------

SIGMA = 1.5


def _gauss_law(values: list[float]):
    sums = _sums(values, M)
    total = sum(sums.values())
    parts = [(mp.mpf(v), mp.mpf(c) / total) for v, c in sums.items()]
    sigma = mp.mpf(SIGMA)

    def density(x):
        return mp.fsum(w * mp.npdf(x, v, sigma) for v, w in parts)

    return density, [v for v, _ in parts]


def _gauss_hockey(first, second, eps):
    """``∫ (first - e^eps second)^+`` with the sign changes found on a fine scan."""
    f, centres = first
    g, _ = second
    factor = mp.exp(eps)
    lo, hi = min(centres) - 14 * SIGMA, max(centres) + 14 * SIGMA
    grid = [lo + (hi - lo) * k / 400 for k in range(401)]
    points = [mp.mpf(lo)]
    gaps = [f(x) - factor * g(x) for x in grid]
    for k in range(400):
        if gaps[k] * gaps[k + 1] < 0:
            points.append(
                mp.findroot(lambda x: f(x) - factor * g(x), (grid[k], grid[k + 1]), solver="bisect")
            )
    points.append(mp.mpf(hi))
    return mp.quad(lambda x: max(f(x) - factor * g(x), 0), points)


@pytest.mark.parametrize(
    "datasets",
    [_datasets(-1.0, 1.0, -1.0), _datasets(0.3, 0.8, -0.6), _datasets(1.0, -1.0, 0.2)],
    ids=["worst", "inside", "mirror"],
)
def test_gaussian_pair_against_quadrature(datasets):
    """One step: the certified bracket of the symmetric pair contains the exact delta of the
    worst datasets and lies above that of other ones."""
    laws = [_gauss_law(d) for d in datasets]
    mechanism = WithoutReplacementGaussian(sigma=SIGMA, sampling_rate=M / N)
    eps = np.array(EPSILONS)
    bounds = PrivacyBuckets(accuracy=1e-6).compose(mechanism).delta(eps)
    for e, low, high in zip(eps, bounds.lower, bounds.upper, strict=True):
        brute = max(_gauss_hockey(laws[0], laws[1], e), _gauss_hockey(laws[1], laws[0], e))
        assert brute <= high
        if datasets == _datasets(-1.0, 1.0, -1.0):
            assert low <= brute
            assert high - low <= 1e-5 * brute


@pytest.mark.slow
def test_gaussian_pair_bounds_two_steps_whose_orientation_flips():
    first = [_gauss_law(d) for d in _datasets(-1.0, 1.0, -1.0)]
    second = [_gauss_law(d) for d in _datasets(1.0, 1.0, -1.0)]
    mechanism = WithoutReplacementGaussian(sigma=SIGMA, sampling_rate=M / N)
    for eps in (1.0,):
        upper = PrivacyBuckets(accuracy=1e-5).compose(mechanism, 2).delta(eps).upper

        def inner(y, eps=eps):
            shift = eps - mp.log(second[0][0](y) / second[1][0](y))
            return second[0][0](y) * _gauss_hockey_any(first[0], first[1], shift)

        brute = mp.quad(inner, [-12, -2, 0, 2, 12], maxdegree=4)
        assert brute <= upper


def _gauss_hockey_any(first, second, eps):
    """``H`` for any real eps (``1 - e^eps + e^eps H_{-eps}(second||first)`` below 0)."""
    if eps >= 0:
        return _gauss_hockey(first, second, eps)
    return 1 - mp.exp(eps) + mp.exp(eps) * _gauss_hockey(second, first, -eps)


def test_the_lattice_agrees_with_the_grid_pair():
    """From 64 releases on the engine splits the release onto a lattice: the bracket then
    contains the grid pair's (noise on a fine grid, cut at 12 sigma) and is as narrow."""
    mechanism = WithoutReplacementGaussian(sigma=1.0, sampling_rate=0.05)
    eps = np.array([0.5, 1.0, 2.0])
    continuous = PrivacyBuckets(accuracy=1e-4).compose(mechanism, 70).delta(eps)
    fine = noise.truncated_gaussian(1.0, 12.0, 0.005)
    grid = PrivacyBuckets(accuracy=1e-4).compose(without_replacement_pair(fine, 1.0, 0.05), 70)
    reference = grid.delta(eps)
    assert (continuous.lower <= reference.upper).all()
    assert (reference.lower <= continuous.upper).all()
    assert (continuous.upper - continuous.lower <= 1e-4 * continuous.upper).all()


def test_log_moments_are_symmetric_and_bound_the_certified_delta():
    mechanism = WithoutReplacementGaussian(sigma=2.0, sampling_rate=0.02)
    assert mechanism.log_moment(2.0, "A/B") == mechanism.log_moment(2.0, "B/A")
    assert mechanism.log_moment(0.0, "A/B") == pytest.approx(0.0, abs=1e-13)
    lower = PrivacyBuckets(accuracy=1e-3).compose(mechanism, 30).delta(1.0).lower
    assert ExtendedMA().compose(mechanism, 30).delta(1.0).upper >= lower


def test_rate_one_is_refused_naming_the_gaussian():
    with pytest.raises(InvalidInputError, match="GaussianMechanism"):
        WithoutReplacementGaussian(sigma=1.0, sampling_rate=1.0)
    assert GaussianMechanism(1.0, 2.0).distinguishing_mass("A/B") == 0.0
