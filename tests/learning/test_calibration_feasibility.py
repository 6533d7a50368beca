"""A target that the coupling bound cannot reach at any noise multiplier is refused before
any PrivacyBuckets query, naming tau, its cost and the cuts that would do (issue 25).

On ``d > 1`` coordinates the certified upper bound of :class:`DPSGDAccountant` is
``(delta_G + e^eps tau) / (1 - tau)`` (renormalised) or ``delta_G + (1 + e^eps) tau``
(clamped) with ``tau = 1 - (1 - 2 Phi(-k))^(d n)``, which no sigma changes. The oracle
here computes ``tau`` with scipy's normal tail, not with the code under test.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.stats import norm

import accountant.learning.calibration_search as search_module
from accountant import InfeasibleTargetError, calibrate_noise_multiplier

#: The MNIST setting of ``accountant calibrate --help`` on a model of 10^6 parameters.
MNIST = {
    "epsilon": 3.0,
    "delta": 1e-5,
    "sampling_rate": 0.0042667,
    "steps": 14062,
    "dimension": 10**6,
}


def coupling_cost(cut: float, truncation: str, setting: dict = MNIST) -> float:
    """What the coupling term alone adds to the certified delta, whatever sigma."""
    draws = setting["dimension"] * setting["steps"]
    tau = -np.expm1(draws * np.log1p(-2.0 * norm.sf(cut)))
    grown = math.exp(setting["epsilon"]) * tau
    return grown + tau if truncation == "clamped" else grown / (1.0 - tau)


def noise_share(cut: float, truncation: str, setting: dict = MNIST) -> float:
    """The share of delta that the coupling term leaves to the noise (the uncut
    Gaussian's delta_G)."""
    return 1.0 - coupling_cost(cut, truncation, setting) / setting["delta"]


@pytest.fixture
def no_queries(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("PrivacyBuckets was queried")

    monkeypatch.setattr(search_module, "DPSGDAccountant", refuse)


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_a_coupling_cost_above_the_target_is_refused_before_any_query(no_queries, truncation):
    with pytest.raises(InfeasibleTargetError) as info:
        calibrate_noise_multiplier(**MNIST, cut=8.0, truncation=truncation)
    message = str(info.value)
    assert "\n" not in message
    tau = -np.expm1(10**6 * 14062 * np.log1p(-2.0 * norm.sf(8.0)))
    assert f"tau={tau:.3g}" in message, message
    assert f"{coupling_cost(8.0, truncation):.3g}" in message, message
    assert "cut=8.0" in message and "dimension=1000000" in message and "delta=1e-05" in message
    assert "max_evaluations" not in message


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_the_cuts_named_are_the_smallest_two_decimal_ones_that_do(no_queries, truncation):
    """``cut=K or more``: the coupling term alone stays below delta at K, not at K - 0.01;
    ``cut=H leaves 50%``: it uses at most half of delta at H, more at H - 0.01."""
    with pytest.raises(InfeasibleTargetError) as info:
        calibrate_noise_multiplier(**MNIST, cut=8.0, truncation=truncation)
    message = str(info.value)
    smallest = float(re.search(r"only with cut=(\d+\.\d{1,2}) or more", message).group(1))
    half = float(re.search(r"cut=(\d+\.\d{1,2}) leaves 50% of delta", message).group(1))
    assert noise_share(smallest, truncation) > 0.0 >= noise_share(smallest - 0.01, truncation)
    assert noise_share(half, truncation) >= 0.5 > noise_share(half - 0.01, truncation)
    assert 8.0 < smallest < half < 9.0


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_the_smallest_cut_named_is_not_refused(no_queries, truncation):
    with pytest.raises(InfeasibleTargetError) as info:
        calibrate_noise_multiplier(**MNIST, cut=8.0, truncation=truncation)
    smallest = float(re.search(r"only with cut=(\d+\.\d{1,2}) or more", str(info.value)).group(1))
    with pytest.raises(AssertionError, match="PrivacyBuckets was queried"):
        calibrate_noise_multiplier(**MNIST, cut=smallest, truncation=truncation)


def test_one_coordinate_is_not_bounded_by_the_coupling(no_queries):
    """For dimension 1 the accountant bounds the truncated pair itself: no coupling term,
    so the same cut goes on to the search."""
    with pytest.raises(AssertionError, match="PrivacyBuckets was queried"):
        calibrate_noise_multiplier(**{**MNIST, "dimension": 1}, cut=8.0)


def test_an_uncut_run_has_no_coupling_term(no_queries):
    with pytest.raises(AssertionError, match="PrivacyBuckets was queried"):
        calibrate_noise_multiplier(**MNIST, cut=math.inf)


def test_bad_input_is_named_before_the_coupling_is_judged():
    with pytest.raises(ValueError, match="max_evaluations must be at least 2, got 1"):
        calibrate_noise_multiplier(**MNIST, cut=8.0, max_evaluations=1)
