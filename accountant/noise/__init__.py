"""Noise functions: a probability mass function on an equidistant grid
(:class:`NoiseDistribution`), the families built on symmetric grids, and arrays a user
brings (:func:`from_array`).

>>> from accountant import noise
>>> p = noise.truncated_gaussian(sigma=2.0, bound=10.0, step=0.5)
>>> p.size
41
"""

from accountant.noise.distribution import GRID_TOLERANCE, NoiseDistribution, from_array
from accountant.noise.families import (
    staircase,
    truncated_gaussian,
    truncated_laplace,
    uniform,
)

__all__ = [
    "GRID_TOLERANCE",
    "NoiseDistribution",
    "from_array",
    "staircase",
    "truncated_gaussian",
    "truncated_laplace",
    "uniform",
]
