"""Pair maps build the pairs of SPEC section 1 and their noise gradient is the transpose
of that linear map."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import WorstCasePair, noise
from accountant.errors import InvalidInputError
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap, pair_map


def _noise():
    return noise.truncated_laplace(scale=1.5, bound=3.0, step=0.5)


def test_pairs_are_the_constructors():
    p = _noise()
    additive = pair_map(0.5, 1.0).pair(p)
    reference = WorstCasePair.additive(p, 1.0)
    np.testing.assert_array_equal(additive.a, reference.a)
    np.testing.assert_array_equal(additive.b, reference.b)
    mixture = pair_map(0.5, 1.5, q=0.2).pair(p)
    reference = WorstCasePair.subsampled(p, 0.2, 1.5)
    np.testing.assert_array_equal(mixture.a, reference.a)
    np.testing.assert_array_equal(mixture.b, reference.b)


@pytest.mark.parametrize("mapping", [AdditivePairMap(2), SubsampledPairMap(3, 0.25)])
def test_noise_gradient_is_the_transpose(mapping):
    # <g, J v> = <J^T g, v> for the linear map J: p -> (A, B).
    rng = np.random.default_rng(1)
    size = 13
    v = rng.standard_normal(size)
    grad_a = rng.standard_normal(size + mapping.steps)
    grad_b = rng.standard_normal(size + mapping.steps)
    zeros = np.zeros(mapping.steps)
    a_of_v = np.concatenate([v, zeros])
    shifted = np.concatenate([zeros, v])
    if isinstance(mapping, AdditivePairMap):
        b_of_v = shifted
    else:
        b_of_v = (1 - mapping.q) * a_of_v + mapping.q * shifted
    lhs = grad_a @ a_of_v + grad_b @ b_of_v
    rhs = mapping.noise_gradient(grad_a, grad_b) @ v
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_bad_input():
    with pytest.raises(InvalidInputError, match="steps"):
        AdditivePairMap(0)
    with pytest.raises(InvalidInputError, match="q"):
        SubsampledPairMap(1, 1.5)
    with pytest.raises(InvalidInputError, match="sensitivity"):
        pair_map(0.5, 0.7)
    with pytest.raises(InvalidInputError, match="clip"):
        pair_map(0.5, 0.7, q=0.1)
    with pytest.raises(InvalidInputError, match="grad_b"):
        AdditivePairMap(1).noise_gradient(np.zeros(4), np.zeros(3))
