"""Rotation-symmetric d-dimensional noise (radius from the pmf, direction uniform) does
not keep the one-dimensional guarantee: the construction is withdrawn. This test
reproduces, by Monte Carlo, the deltas that showed it (issue 15's table: sigma 2.29,
bound 10, step 0.5, sensitivity 1, one release), with an estimator that is first checked
against the exact one-dimensional delta, and checks that the library now refuses it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln

from accountant import InvalidInputError, WorstCasePair, exact_delta, noise

NOISE = noise.truncated_gaussian(2.29, 10.0, 0.5)
DRAWS = 600_000


def _radius_density(radius: np.ndarray) -> np.ndarray:
    """Density of ``|Y|``, ``Y`` a grid point drawn from the pmf plus a uniform point of
    its cell: ``f(r) + f(-r)`` with ``f`` the piecewise-constant density of ``Y``."""

    def density(points: np.ndarray) -> np.ndarray:
        cell = np.floor((points - NOISE.start + NOISE.step / 2) / NOISE.step).astype(int)
        inside = (cell >= 0) & (cell < NOISE.size)
        values = np.zeros(points.shape)
        values[inside] = NOISE.pmf[cell[inside]] / NOISE.step
        return values

    return density(radius) + density(-radius)


def _log_density(points: np.ndarray, dimension: int) -> np.ndarray:
    """``ln f_X(x) = ln f_R(|x|) - ln(S_{d-1} |x|^(d-1))``, ``S_{d-1}`` the unit sphere's area."""
    radius = np.linalg.norm(points, axis=1)
    log_sphere = math.log(2.0) + dimension / 2 * math.log(math.pi) - gammaln(dimension / 2)
    with np.errstate(divide="ignore"):
        return np.log(_radius_density(radius)) - log_sphere - (dimension - 1) * np.log(radius)


def _rotation_symmetric(dimension: int, rng: np.random.Generator) -> np.ndarray:
    """The withdrawn construction: radius ``|Y|``, direction a normalised normal vector."""
    radius = np.abs(NOISE.sample(DRAWS, rng))
    direction = rng.standard_normal((DRAWS, dimension))
    return radius[:, None] * direction / np.linalg.norm(direction, axis=1, keepdims=True)


def _monte_carlo_delta(dimension: int, epsilons: list[float], seed: int) -> np.ndarray:
    """``E_A[max(0, 1 - e^(eps - L))]`` over draws of ``A = X``, ``B = X + e_1`` (an
    outcome impossible under ``B`` counts 1)."""
    points = _rotation_symmetric(dimension, np.random.default_rng(seed))
    shift = np.zeros(dimension)
    shift[0] = 1.0
    loss = _log_density(points, dimension) - _log_density(points - shift, dimension)
    return np.array(
        [
            np.mean(np.where(np.isinf(loss), 1.0, np.maximum(0.0, 1.0 - np.exp(eps - loss))))
            for eps in epsilons
        ]
    )


def test_the_estimator_gives_the_exact_delta_in_one_dimension():
    exact = exact_delta(WorstCasePair.additive(NOISE, 1.0), [1.0, 0.3])
    assert exact == pytest.approx([0.0027, 0.073], abs=5e-4)  # the table's first column
    estimate = _monte_carlo_delta(1, [1.0, 0.3], seed=1)
    assert estimate == pytest.approx(exact, rel=0.05)


@pytest.mark.parametrize(
    ("dimension", "table"), [(2, [0.081, 0.265]), (3, [0.197, 0.368])], ids=["d2", "d3"]
)
def test_rotation_symmetric_noise_is_far_less_private_than_its_pair(dimension, table):
    estimate = _monte_carlo_delta(dimension, [1.0, 0.3], seed=dimension)
    assert estimate == pytest.approx(table, abs=0.006)  # Monte Carlo error about 5e-4
    exact = exact_delta(WorstCasePair.additive(NOISE, 1.0), [1.0, 0.3])
    assert (estimate > 3 * exact).all()  # the one-dimensional pair does not bound it


def test_the_construction_is_refused():
    with pytest.raises(
        InvalidInputError, match="dimension=2: rotation-symmetric noise is withdrawn"
    ):
        NOISE.sample(10, np.random.default_rng(0), dimension=2)
