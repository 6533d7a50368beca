"""An eps query over both directions settles a direction whose eps is certified below the
other's lower end by one evaluation (``walks._epsilon_walk``): its bracket must still
agree with the two single-direction queries (each alone a full search), for a mechanism
whose directions differ (DP-SGD add/remove) and for grid pairs."""

from __future__ import annotations

import warnings

import pytest

import accountant.buckets.walks as walks
from accountant import CertificationWarning, PrivacyBuckets, WorstCasePair, mechanisms, noise


def _accountants():
    step = mechanisms.SubsampledTruncatedGaussian(sigma=0.9, sampling_rate=0.02, cut=8.0)
    pair = WorstCasePair.subsampled(noise.truncated_gaussian(2.0, 24.0, 0.05), q=0.1, clip=1.0)
    return [
        lambda: PrivacyBuckets(accuracy=1e-3).compose(step, 300),
        lambda: PrivacyBuckets(accuracy=1e-3).compose(pair, 100),
    ]


@pytest.mark.parametrize("make", _accountants())
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("order", ["estimated", "reversed"])
def test_the_max_bracket_agrees_with_each_direction_alone(make, delta, order, monkeypatch):
    if order == "reversed":  # the smaller direction first: the shortcut must not fire wrongly
        estimated = walks._likely_largest_first
        monkeypatch.setattr(walks, "_likely_largest_first", lambda *args: estimated(*args)[::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        both = make().epsilon(delta)
        ab = make().epsilon(delta, direction="A/B")
        ba = make().epsilon(delta, direction="B/A")
    # the true max(eps_AB, eps_BA) lies in both brackets of max and in [max lower, max upper]
    assert both.lower <= max(ab.upper, ba.upper)
    assert both.upper >= max(ab.lower, ba.lower)
    assert both.lower <= both.upper


def test_an_infinite_upper_end_is_refined_and_said(monkeypatch):
    """A rung whose search leaves eps unbounded above (upper ``inf``) is a bracket of 1: the
    walk goes on refining and, if no rung bounds it, says so in a CertificationWarning (an
    ``inf / inf`` bracket compared false and stopped silently)."""
    searched = []

    def unbounded(pld, target, kind, within, tolerance):
        searched.append(pld.width)
        return 0.5, float("inf")

    monkeypatch.setattr(walks, "epsilon_interval", unbounded)
    step = mechanisms.SubsampledTruncatedGaussian(sigma=0.9, sampling_rate=0.02, cut=8.0)
    with pytest.warns(CertificationWarning, match="relative eps bracket of 1 "):
        bounds = PrivacyBuckets(accuracy=1e-3).compose(step, 300).epsilon(1e-6, "A/B")
    assert bounds.upper == float("inf") and bounds.lower == 0.5
    assert len(set(searched)) > 1  # refined past rung 0
