"""Suffix sums answer the A-only ADP and the PDP sums of a bucketed PLD (issue 12): each
certified bound they give contains the exact sum over the buckets (``math.fsum``) and
lies within a few ulps-per-bucket of it, at eps on, between and beyond the edges."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accountant import PrivacyBuckets, mechanisms
from accountant.buckets import walks
from accountant.buckets.bucketed import BucketedPLD
from accountant.buckets.suffix_sums import SuffixSums
from accountant.numerics.directed import MassLogs


def _pld(seed: int, size: int = 400, spread: float = 0.0) -> BucketedPLD:
    rng = np.random.default_rng(seed)
    mass = rng.random(size) ** 8
    mass /= mass.sum()
    width = 0.013
    return BucketedPLD(
        width, -size // 3, mass, mass * 0.0, -spread, spread, MassLogs(), error_b=math.inf
    )


def _exact(pld: BucketedPLD, eps: float) -> tuple[float, float, float, float, float]:
    low, high = pld.edges()
    a = pld.mass_a
    above = high > eps
    surely = low >= eps
    upper = math.fsum(a[above] * -np.expm1(eps - high[above]))
    lower = math.fsum(a[surely] * -np.expm1(eps - low[surely]))
    possibly = math.fsum(a[above])
    strictly = math.fsum(a[low > eps])
    return upper, lower, possibly, strictly, float(np.count_nonzero(above))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("spread", [0.0, 0.004])
def test_suffix_sums_bracket_the_exact_bucket_sums(seed, spread):
    pld = _pld(seed, spread=spread)
    sums = SuffixSums(pld, pld.edges())
    low, high = pld.edges()
    probes = np.concatenate([high[::37], low[::41], high[::29] + 1e-4, [-5.0, 0.0, 1e3]])
    for eps in probes[probes >= 0.0]:
        upper, lower, possibly, strictly, counted = _exact(pld, float(eps))
        got_upper, got_lower, counted_a, got_counted = sums.adp_a_only(float(eps))
        slack = 1e-13 * max(possibly, 1e-300)
        assert got_upper >= upper and got_upper <= upper + slack
        assert got_lower <= lower and got_lower >= lower - slack
        assert got_counted == counted and math.isclose(counted_a, possibly, rel_tol=1e-12)
        got_possibly, got_strictly, _ = sums.pdp(float(eps))
        assert math.isclose(got_possibly, possibly, rel_tol=1e-12, abs_tol=1e-300)
        assert math.isclose(got_strictly, strictly, rel_tol=1e-12, abs_tol=1e-300)


@pytest.mark.parametrize("offset", [650.0, 800.0, 5400.0])
def test_suffix_sums_beyond_the_float_range_of_e_to_the_eps(offset):
    """Losses near eps = 800 or 5400 (a Gaussian composed a million times): e^eps
    overflows, and the shifted sums still bracket the exact ones (before the fix the lower
    A-only sum was 0 beyond eps = 709)."""
    rng = np.random.default_rng(7)
    size, width = 2000, 0.01
    mass = rng.random(size) ** 4
    mass /= mass.sum()
    first = round(offset / width) - size // 2
    pld = BucketedPLD(width, first, mass, mass * 0.0, 0.0, 0.0, MassLogs(), error_b=math.inf)
    sums = SuffixSums(pld, pld.edges())
    for eps in (offset - 3.0, offset, offset + 0.5, offset + 2.0):
        upper, lower, _, _, _ = _exact(pld, eps)
        found_upper, found_lower, _, _ = sums.adp_a_only(eps)
        assert found_lower <= lower <= upper <= found_upper
        assert lower > 0.0 and found_lower >= lower * (1.0 - 1e-9), (eps, found_lower, lower)


def test_a_gaussian_composed_a_million_times_has_a_narrow_eps_bracket():
    """sigma 10, a million releases (mu = 100): eps(1e-5) = 5425.51 by the closed form
    (mpmath, 60 digits); it used to be certified as [0, 5426.6]."""
    bounds = PrivacyBuckets().compose(mechanisms.GaussianMechanism(10.0), 10**6).epsilon(1e-5)
    assert bounds.lower <= 5425.509846147429564 <= bounds.upper
    assert (bounds.upper - bounds.lower) / bounds.upper <= 1e-4


def test_the_buckets_alone_give_a_narrow_eps_bracket_a_million_times(monkeypatch):
    """The same composition without its closed form (the Gaussian pair's,
    :mod:`accountant.buckets.gaussian_dominance`, patched out): the buckets themselves."""
    monkeypatch.setattr(walks, "composed_gaussian", lambda components: None)
    bounds = PrivacyBuckets().compose(mechanisms.GaussianMechanism(10.0), 10**6).epsilon(1e-5)
    assert bounds.lower <= 5425.509846147429564 <= bounds.upper
    assert (bounds.upper - bounds.lower) / bounds.upper <= 1e-4
    assert bounds.bucket_width > 0.0
