"""Calibrating the DP-SGD noise multiplier (issue 12): the returned sigma is certified to
meet the target and sigma_low certified to fail, both re-checked here with PrivacyBuckets
at another accuracy; bad input and unreachable targets are refused by name; a result that
misses the tolerance says so."""

from __future__ import annotations

import itertools
import math
import warnings

import attrs
import pytest
from scipy.stats import norm

import accountant.learning.calibration_search as search_module
from accountant import (
    CertificationWarning,
    InfeasibleTargetError,
    InvalidInputError,
    NoiseCalibration,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
    calibrate_noise_multiplier,
)
from accountant.dpsgd import DPSGDAccountant

SMALL = {
    "epsilon": 1.0,
    "delta": 1e-5,
    "sampling_rate": 0.05,
    "steps": 100,
    "cut": 8.0,
    "dimension": 1,
}


def certified(sigma: float, setting: dict, truncation: str = "renormalised"):
    """The delta bracket at ``sigma``, computed afresh at accuracy 1e-3 (the calibration
    asks for coarser ones), so nothing is shared with the calibration's own queries."""
    mechanism = SubsampledTruncatedGaussian(
        sigma=sigma,
        sampling_rate=setting["sampling_rate"],
        cut=setting["cut"],
        truncation=truncation,
    )
    buckets = PrivacyBuckets(accuracy=1e-3).compose(mechanism, setting["steps"])
    with warnings.catch_warnings():  # a wider bracket than 1e-3 is still certified
        warnings.simplefilter("ignore", CertificationWarning)
        return buckets.delta(setting["epsilon"])


@pytest.fixture(scope="module")
def small() -> NoiseCalibration:
    return calibrate_noise_multiplier(**SMALL)


def test_the_returned_sigma_meets_the_target_and_sigma_low_fails(small):
    assert small.converged and not small.notes
    assert small.sigma_low < small.sigma <= small.sigma_low * (1.0 + small.tolerance)
    assert small.delta_lower <= small.delta_upper <= SMALL["delta"]
    assert small.sigma_low_delta_lower > SMALL["delta"]
    assert certified(small.sigma, SMALL).upper <= SMALL["delta"]
    assert certified(small.sigma_low, SMALL).lower > SMALL["delta"]


def test_the_result_records_every_query(small):
    assert small.evaluations == len(small.points) >= 2
    at_sigma = [p for p in small.points if p.sigma == small.sigma]
    assert at_sigma and min(p.upper for p in at_sigma) == small.delta_upper
    for point in small.points:
        assert 0.0 <= point.lower <= point.upper and 0.0 < point.accuracy < 1.0
    assert small.mechanism.sigma == small.sigma and small.mechanism.cut == SMALL["cut"]


@pytest.mark.parametrize(
    ("setting", "truncation"),
    [
        (
            {**SMALL, "sampling_rate": 1.0, "steps": 1, "epsilon": 0.5, "delta": 1e-6},
            "renormalised",
        ),
        ({**SMALL, "sampling_rate": 0.5, "steps": 10}, "resampled"),
        ({**SMALL, "cut": 6.0, "steps": 50, "epsilon": 2.0}, "clamped"),
        ({**SMALL, "cut": math.inf, "steps": 50}, "renormalised"),
    ],
    ids=["one-gaussian-release", "q=0.5-resampled", "clamped", "no-cut"],
)
def test_other_settings_are_certified_too(setting, truncation):
    result = calibrate_noise_multiplier(**setting, truncation=truncation)
    assert result.converged, result.notes
    assert certified(result.sigma, setting, truncation).upper <= setting["delta"]
    assert certified(result.sigma_low, setting, truncation).lower > setting["delta"]


@pytest.mark.parametrize(("truncation", "cut"), [("renormalised", 3.0), ("clamped", 6.0)])
def test_delta_falls_as_sigma_grows(truncation, cut):
    """The premise of sigma_low (proven for the renormalised cut, checked for the clamped
    one): certified brackets at growing sigma are disjoint and falling."""
    setting = {**SMALL, "cut": cut}
    brackets = [certified(s, setting, truncation) for s in (1.5, 2.0, 2.5, 3.0)]
    for before, after in itertools.pairwise(brackets):
        assert after.upper < before.lower


def test_a_smaller_delta_or_eps_needs_more_noise(small):
    tighter = calibrate_noise_multiplier(**{**SMALL, "delta": 1e-6})
    looser = calibrate_noise_multiplier(**{**SMALL, "epsilon": 2.0})
    assert tighter.sigma_low > small.sigma
    assert looser.sigma < small.sigma_low


def test_a_given_accuracy_certifies_the_returned_sigma(small):
    result = calibrate_noise_multiplier(**SMALL, accuracy=5e-4)
    assert result.converged
    at_sigma = [p for p in result.points if p.sigma == result.sigma]
    assert any(p.achieved_accuracy <= 5e-4 for p in at_sigma)
    assert result.delta_upper <= SMALL["delta"]
    assert (result.delta_upper - result.delta_lower) / result.delta_upper <= 5e-4


# -- bad input and unreachable targets --------------------------------------------------

BAD = [
    ({"epsilon": 0.0}, "epsilon", "0.0"),
    ({"epsilon": -1.0}, "epsilon", "-1.0"),
    ({"epsilon": math.nan}, "epsilon", "nan"),
    ({"epsilon": math.inf}, "epsilon", "inf"),
    ({"delta": 0.0}, "delta", "0.0"),
    ({"delta": 1.0}, "delta", "1.0"),
    ({"delta": 2.0}, "delta", "2.0"),
    ({"sampling_rate": 0.0}, "sampling_rate", "0.0"),
    ({"sampling_rate": 1.5}, "sampling_rate", "1.5"),
    ({"steps": 0}, "steps", "0"),
    ({"steps": 1.5}, "steps", "1.5"),
    ({"steps": True}, "steps", "True"),
    ({"cut": 0.0}, "cut", "0.0"),
    ({"cut": -2.0}, "cut", "-2.0"),
    ({"cut": math.nan}, "cut", "nan"),
    ({"truncation": "clipped"}, "truncation", "'clipped'"),
    ({"clip": 0.0}, "clip", "0.0"),
    ({"tolerance": 0.0}, "tolerance", "0.0"),
    ({"tolerance": 1.0}, "tolerance", "1.0"),
    ({"accuracy": 0.0}, "accuracy", "0.0"),
    ({"accuracy": 1.0}, "accuracy", "1.0"),
    ({"search_accuracy": 2.0}, "search_accuracy", "2.0"),
    ({"max_sigma": -1.0}, "max_sigma", "-1.0"),
    ({"max_sigma": 0.05}, "max_sigma", "0.05"),  # below 1/(2 cut) = 0.0625
    ({"max_evaluations": 1}, "max_evaluations", "1"),
]


@pytest.mark.parametrize(("change", "name", "shown"), BAD, ids=[f"{n}={s}" for _, n, s in BAD])
def test_bad_input_names_the_argument_and_value(change, name, shown):
    with pytest.raises(InvalidInputError) as info:
        calibrate_noise_multiplier(**{**SMALL, **change})
    assert name in str(info.value) and shown in str(info.value)


def test_no_sigma_up_to_the_cap_says_the_cap_and_the_bracket_there():
    with pytest.raises(InfeasibleTargetError) as info:
        calibrate_noise_multiplier(**SMALL, max_sigma=1.5)
    message = str(info.value)
    assert "max_sigma=1.5" in message and "at sigma=1.5 the certified delta is [" in message


@pytest.fixture
def no_queries(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("PrivacyBuckets was queried")

    monkeypatch.setattr(search_module, "DPSGDAccountant", refuse)


def test_a_clamped_floor_above_the_target_is_refused_before_any_query(no_queries):
    setting = {**SMALL, "cut": 3.0, "steps": 50, "sampling_rate": 0.1}
    with pytest.raises(InfeasibleTargetError, match="clamped") as info:
        calibrate_noise_multiplier(**setting, truncation="clamped")
    floor = 1.0 - (1.0 - 2.0 * 0.1 * norm.cdf(-3.0)) ** 50
    assert f"{floor:.4g}" in str(info.value)


@pytest.mark.parametrize("sigma", [0.2, 1.0, 10.0, 1e3])
def test_the_clamped_floor_is_below_the_distinguishing_mass_at_every_sigma(sigma):
    q, cut = 0.1, 3.0
    mechanism = SubsampledTruncatedGaussian(
        sigma=sigma, sampling_rate=q, cut=cut, truncation="clamped"
    )
    assert mechanism.distinguishing_mass("B/A") >= 2.0 * q * norm.cdf(-cut)


# -- results that miss the tolerance say so ----------------------------------------------


def test_a_budget_that_runs_out_returns_a_certified_sigma_with_a_note(monkeypatch):
    start = search_module.steps_.RootEstimate(x=math.log(4.0), slope=-30.0, bracket=None)
    monkeypatch.setattr(search_module.steps_, "gdp_start", lambda *args: start)
    with pytest.warns(CertificationWarning, match="max_evaluations=2"):
        result = calibrate_noise_multiplier(**SMALL, max_evaluations=2)
    assert not result.converged and result.evaluations == 2
    assert result.relative_bracket > result.tolerance
    assert "max_evaluations=2" in result.notes[0]
    assert certified(result.sigma, SMALL).upper <= SMALL["delta"]


class _WideBuckets:
    """PrivacyBuckets whose lower bounds are cut to 80 %: still certified, too wide for
    the tolerance, and saying so as the engine does."""

    def __init__(self, dimension: int, accuracy: float) -> None:
        self.inner = DPSGDAccountant(dimension=dimension, accuracy=accuracy)

    def compose(self, mechanism, times):
        self.inner = self.inner.compose(mechanism, times)
        return self

    def delta(self, epsilon):
        bounds = self.inner.delta(epsilon)
        warnings.warn("the memory budget allows no finer width", CertificationWarning, stacklevel=2)
        return attrs.evolve(bounds, lower=0.8 * bounds.lower, achieved_accuracy=0.2)


def test_brackets_too_wide_for_the_tolerance_give_the_engines_reason(monkeypatch):
    monkeypatch.setattr(search_module, "DPSGDAccountant", _WideBuckets)
    with pytest.warns(CertificationWarning, match="memory budget"):
        result = calibrate_noise_multiplier(**SMALL)
    assert not result.converged
    assert "memory budget" in result.notes[0] and "not within tolerance" in result.notes[0]
    assert result.delta_upper <= SMALL["delta"] < result.sigma_low_delta_lower
    assert certified(result.sigma, SMALL).upper <= SMALL["delta"]
    assert result.evaluations <= 8
