"""The best truncated-Gaussian baseline: the smallest feasible sigma, found and certified."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
    InfeasibleTargetError,
    InvalidInputError,
    noise,
)
from accountant.learning.certification import certify
from accountant.learning.gaussian_baseline import GaussianBaseline, best_truncated_gaussian
from accountant.pairs.pair_maps import pair_map
from tests.learning.test_certification import ADDITIVE, BOUND, STEP, SUBSAMPLED


def _certified_upper(sigma: float, case: dict) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        return certify(
            noise.truncated_gaussian(sigma, case["bound"], case["step"]),
            case["pair_map"],
            epsilon=case["epsilon"],
            times=case["times"],
            kind=case.get("kind", "ADP"),
        ).delta_upper


CASES = {
    "additive-n1-L1": dict(pair_map=ADDITIVE, epsilon=1.0, times=1, target_delta=0.05),
    "additive-n4-L2": dict(pair_map=ADDITIVE, epsilon=1.0, times=4, target_delta=0.2, utility="L2"),
    "additive-n8-PDP": dict(pair_map=ADDITIVE, epsilon=1.0, times=8, target_delta=0.45, kind="PDP"),
    "subsampled-n4": dict(pair_map=SUBSAMPLED, epsilon=1.0, times=4, target_delta=1e-2),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def solved(request) -> tuple[dict, GaussianBaseline]:
    case = {"bound": BOUND, "step": STEP, **CASES[request.param]}
    return case, best_truncated_gaussian(**case)


def test_baseline_meets_the_target(solved):
    case, best = solved
    assert isinstance(best, GaussianBaseline)
    cert = best.certificate
    assert cert.delta_lower <= cert.delta_upper <= case["target_delta"]
    assert best.target_delta == case["target_delta"]
    assert best.utility_kind == case.get("utility", "L1")
    assert best.utility == cert.utility(best.utility_kind)
    assert np.array_equal(best.noise.pmf, noise.truncated_gaussian(best.sigma, BOUND, STEP).pmf)
    assert cert.noise is best.noise
    assert (cert.epsilon, cert.times, cert.kind) == (
        case["epsilon"],
        case["times"],
        case.get("kind", "ADP"),
    )


def test_baseline_is_the_smallest_feasible_sigma(solved):
    case, best = solved
    assert _certified_upper(best.sigma * (1 - 10 * 1e-4), case) > case["target_delta"]


def test_no_feasible_sigma_on_a_scan_has_smaller_utility(solved):
    case, best = solved
    # The engine is slow (seconds per query) for the mixture at sigma below ~0.45 here,
    # where it detects a spurious fine loss lattice: that scan starts at the answer (the
    # smaller sigmas are covered by test_baseline_is_the_smallest_feasible_sigma).
    low = best.sigma if case["pair_map"] is SUBSAMPLED else STEP / 2
    for sigma in np.geomspace(low, 10 * BOUND, 30):
        if _certified_upper(float(sigma), case) <= case["target_delta"]:
            candidate = noise.truncated_gaussian(float(sigma), BOUND, STEP)
            assert candidate.utility(best.utility_kind) >= best.utility * (1 - 1e-6)


def test_l1_and_l2_choose_the_same_sigma():
    case = {"bound": BOUND, "step": STEP, **CASES["additive-n1-L1"]}
    l1 = best_truncated_gaussian(**case)
    l2 = best_truncated_gaussian(**{**case, "utility": "L2"})
    assert l1.sigma == l2.sigma
    assert l2.utility == l2.noise.utility_l2


def test_infeasible_target_names_target_and_best_delta():
    with pytest.raises(InfeasibleTargetError, match=r"target_delta=1e-12.*sigma=") as info:
        best_truncated_gaussian(
            bound=2.0,
            step=0.5,
            pair_map=pair_map(0.5, 1.0),
            epsilon=0.1,
            times=1,
            target_delta=1e-12,
        )
    assert "delta" in str(info.value)


def test_search_is_silent_but_the_final_certificate_warns():
    # eps = 50: delta is ~1e-32 already at the smallest sigma searched, which is returned;
    # only its final certification (a wide bracket around a tiny delta) may warn.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        best = best_truncated_gaussian(
            bound=BOUND,
            step=STEP,
            pair_map=pair_map(STEP, STEP),
            epsilon=50.0,
            times=1,
            target_delta=1e-5,
        )
    assert best.sigma == STEP / 2
    assert best.certificate.delta_upper <= 1e-5
    assert [w.category for w in caught] == [CertificationWarning]


GOOD = dict(bound=BOUND, step=STEP, pair_map=ADDITIVE, epsilon=1.0, times=1, target_delta=0.05)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"target_delta": 0.0}, r"target_delta.*0\.0"),
        ({"target_delta": -0.1}, r"target_delta.*-0\.1"),
        ({"target_delta": 1.0}, r"target_delta.*1\.0"),
        ({"target_delta": 1.5}, r"target_delta.*1\.5"),
        ({"epsilon": math.nan}, r"epsilon.*nan"),
        ({"epsilon": -1.0}, r"epsilon.*-1\.0"),
        ({"times": -3}, r"times.*-3"),
        ({"times": 0}, r"times.*0"),
        ({"times": 2.0}, r"times.*2\.0"),
        ({"utility": "L3"}, r"utility.*L3"),
        ({"kind": "RDP"}, r"kind.*RDP"),
        ({"rtol": 0.0}, r"rtol.*0\.0"),
        ({"rtol": 1.0}, r"rtol.*1\.0"),
        ({"accuracy": 2.0}, r"accuracy.*2\.0"),
        ({"accuracy": math.nan}, r"accuracy.*nan"),
        ({"bound": 5.1}, r"bound.*5\.1"),
        ({"step": -0.25}, r"step.*-0\.25"),
        ({"pair_map": "additive"}, r"pair_map.*str"),
    ],
)
def test_best_truncated_gaussian_refuses_bad_input(change, match):
    with pytest.raises(InvalidInputError, match=match):
        best_truncated_gaussian(**{**GOOD, **change})


def test_the_grid_step_is_given_once_and_a_mismatch_is_an_error():
    # issue 11, item 2: a map built for step 1 used on a step-0.5 grid audited a shift of
    # 0.5, half the sensitivity (sigma 21.10 instead of 42.21), without a word
    with pytest.raises(InvalidInputError, match=r"step=0\.5 disagrees .* grid step 1\.0"):
        best_truncated_gaussian(
            bound=500.0,
            step=0.5,
            pair_map=pair_map(1.0, 1.0),
            epsilon=1.0,
            times=128,
            target_delta=1e-5,
        )
    case = {"bound": BOUND, **CASES["additive-n1-L1"]}
    implied = best_truncated_gaussian(**case)  # the step is the pair map's
    assert implied.sigma == best_truncated_gaussian(**case, step=STEP).sigma
    other_grid = noise.truncated_gaussian(1.0, BOUND, STEP / 2)
    for mapping in (pair_map(STEP, STEP), pair_map(STEP, STEP, q=0.1)):
        with pytest.raises(InvalidInputError, match=r"grid step .* built for step"):
            mapping.pair(other_grid)
        with pytest.raises(InvalidInputError, match="pair map was built for step"):
            certify(other_grid, mapping, epsilon=1.0, times=1)
