"""The best truncated-Laplace and truncated-staircase baselines: the smallest feasible
scale, found and certified, and beside the truncated Gaussian: under L1 at one release
the staircase, then the Laplace, are the stronger baselines (a learned noise must beat
them, not only the Gaussian)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
    InfeasibleTargetError,
    LaplaceBaseline,
    StaircaseBaseline,
    best_truncated_gaussian,
    best_truncated_laplace,
    best_truncated_staircase,
    noise,
)
from accountant.learning.certification import certify
from tests.learning.test_certification import ADDITIVE, BOUND, STEP

CASE = dict(bound=BOUND, step=STEP, pair_map=ADDITIVE, epsilon=1.0, times=1, target_delta=0.05)


@pytest.fixture(scope="module")
def solved() -> LaplaceBaseline:
    return best_truncated_laplace(**CASE)


def _upper(scale: float) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        laplace = noise.truncated_laplace(scale, BOUND, STEP)
        return certify(laplace, ADDITIVE, epsilon=1.0, times=1).delta_upper


def test_the_laplace_baseline_meets_the_target_and_a_smaller_scale_does_not(solved):
    assert isinstance(solved, LaplaceBaseline)
    assert solved.certificate.delta_upper <= CASE["target_delta"]
    assert np.array_equal(solved.noise.pmf, noise.truncated_laplace(solved.scale, BOUND, STEP).pmf)
    assert _upper(solved.scale * (1 - 1e-3)) > CASE["target_delta"]
    assert solved.utility == solved.certificate.utility("L1")


def test_under_l1_at_one_release_staircase_beats_laplace_beats_gaussian(solved):
    gaussian = best_truncated_gaussian(**CASE)
    stair = best_truncated_staircase(**CASE)
    assert isinstance(stair, StaircaseBaseline)
    assert stair.certificate.delta_upper <= CASE["target_delta"]
    expected = noise.staircase(STEP * ADDITIVE.steps, stair.design_epsilon, BOUND, STEP)
    assert np.array_equal(stair.noise.pmf, expected.pmf)
    assert stair.utility < solved.utility < gaussian.utility


def test_an_unreachable_target_names_the_family_and_its_scale():
    with pytest.raises(InfeasibleTargetError, match=r"truncated Laplace .* near scale="):
        best_truncated_laplace(**{**CASE, "target_delta": 1e-12})
