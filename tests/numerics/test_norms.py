"""accountant.numerics.norms: the Euclidean norm of error vectors, an upper bound without
overflow or BLAS."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from accountant.numerics.norms import euclidean_norm


def _exact(values: np.ndarray) -> float:
    """The norm from exact rational squares (float-rounded once at the end)."""
    largest = Fraction(float(np.max(np.abs(values))))
    total = sum((Fraction(float(v)) / largest) ** 2 for v in values)
    return math.sqrt(float(total)) * float(largest)


def test_it_bounds_the_exact_norm_from_above_and_tightly():
    rng = np.random.default_rng(3)
    for scale in (1e-300, 1e-20, 1.0, 1e150, 1e200):
        values = rng.random(500) * scale
        exact, found = _exact(values), euclidean_norm(values)
        assert exact * (1 - 1e-15) <= found <= exact * (1 + 1e-12)
        reference = float(np.max(values)) * float(np.linalg.norm(values / np.max(values)))
        assert math.isclose(found, reference, rel_tol=1e-12)


def test_squares_that_would_overflow_do_not():
    values = np.full(10, 2e188)
    with np.errstate(over="ignore"):
        assert np.isinf(np.sqrt(np.dot(values, values)))  # the naive norm overflows
    assert math.isclose(euclidean_norm(values), 2e188 * math.sqrt(10), rel_tol=1e-14)


def test_edge_cases():
    assert euclidean_norm(np.zeros(0)) == 0.0
    assert euclidean_norm(np.zeros(5)) == 0.0
    assert euclidean_norm(np.array([1.0, math.inf])) == math.inf
    assert euclidean_norm(np.array([-3.0, 4.0])) >= 5.0
