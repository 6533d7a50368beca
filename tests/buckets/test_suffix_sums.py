"""Suffix sums answer the A-only ADP and the PDP sums of a bucketed PLD (issue 12): each
certified bound they give contains the exact sum over the buckets (``math.fsum``) and
lies within a few ulps-per-bucket of it, at eps on, between and beyond the edges."""

from __future__ import annotations

import math

import numpy as np
import pytest

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
