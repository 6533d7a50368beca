"""The KL divergence of two noises on the same grid."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accountant import (
    InvalidInputError,
    NoiseDistribution,
    noise,
)
from accountant.learning.divergence import kl_divergence
from tests.learning.test_certification import BOUND, STEP


def test_kl_divergence_hand_computation_and_sign():
    p = NoiseDistribution(pmf=np.array([0.2, 0.5, 0.3]), step=1.0, start=-1.0)
    q = NoiseDistribution(pmf=np.array([0.1, 0.6, 0.3]), step=1.0, start=-1.0)
    expected = 0.2 * math.log(2.0) + 0.5 * math.log(5.0 / 6.0)
    assert kl_divergence(p, q) == pytest.approx(expected, rel=1e-14)
    assert kl_divergence(p, p) == 0.0
    assert kl_divergence(q, p) > 0.0
    a = noise.truncated_gaussian(1.0, BOUND, STEP)
    b = noise.truncated_gaussian(1.2, BOUND, STEP)
    assert kl_divergence(a, b) > 0.0
    assert kl_divergence(a, noise.truncated_gaussian(1.0, BOUND, STEP)) == 0.0


def test_kl_divergence_support_mismatch():
    p = NoiseDistribution(pmf=np.array([0.5, 0.5, 0.0]), step=1.0, start=-1.0)
    q = NoiseDistribution(pmf=np.array([0.0, 0.5, 0.5]), step=1.0, start=-1.0)
    assert kl_divergence(p, q) == math.inf
    r = NoiseDistribution(pmf=np.array([0.25, 0.5, 0.25]), step=1.0, start=-1.0)
    assert kl_divergence(p, r) == pytest.approx(0.5 * math.log(2.0) + 0.5 * math.log(1.0))


@pytest.mark.parametrize(
    ("other", "match"),
    [
        (NoiseDistribution(pmf=np.array([0.5, 0.5]), step=1.0, start=-1.0), "size"),
        (NoiseDistribution(pmf=np.array([0.2, 0.5, 0.3]), step=0.5, start=-1.0), "step"),
        (NoiseDistribution(pmf=np.array([0.2, 0.5, 0.3]), step=1.0, start=0.0), "start"),
        (np.array([0.2, 0.5, 0.3]), "q"),
    ],
)
def test_kl_divergence_refuses_other_grids(other, match):
    p = NoiseDistribution(pmf=np.array([0.2, 0.5, 0.3]), step=1.0, start=-1.0)
    with pytest.raises(InvalidInputError, match=match):
        kl_divergence(p, other)
