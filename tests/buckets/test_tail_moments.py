"""Chernoff moments of a single release with millions of buckets are taken over groups of
consecutive buckets: still upper bounds on the exact sums, and only slightly larger."""

from __future__ import annotations

import math

import numpy as np

from accountant.buckets._kernels import log_moment_generating
from accountant.buckets.analytic import analytic_release
from accountant.buckets.tails import LAMBDA_GRID, MOMENT_GROUPS, TailMoments
from accountant.mechanisms import GaussianMechanism


def test_grouped_moments_bound_the_exact_ones_closely():
    release = analytic_release(GaussianMechanism(1.0))
    anchor = release.statistics("A/B", 1e-24).anchor
    pld = release.bucket("A/B", 5e-5, anchor, 1e-24)
    assert pld.size > 4 * MOMENT_GROUPS  # grouping happens
    grouped = TailMoments.of(pld)
    keep = pld.mass_a > 0.0
    low, high = pld.edges()
    log_mass = np.log(pld.mass_a[keep])
    exact_high = log_moment_generating(log_mass, high[keep], LAMBDA_GRID)
    exact_low = log_moment_generating(log_mass, -low[keep], LAMBDA_GRID)
    # the group edges are at most `per` buckets away from each bucket's own edge
    per = math.ceil(pld.size / MOMENT_GROUPS)
    shift = LAMBDA_GRID * per * pld.width + 1e-9
    finite = np.isfinite(exact_high) & np.isfinite(grouped.log_mgf_high)
    assert (grouped.log_mgf_high[finite] >= exact_high[finite]).all()
    assert (grouped.log_mgf_high[finite] <= exact_high[finite] + shift[finite]).all()
    finite = np.isfinite(exact_low) & np.isfinite(grouped.log_mgf_low)
    assert (grouped.log_mgf_low[finite] >= exact_low[finite]).all()
    assert (grouped.log_mgf_low[finite] <= exact_low[finite] + shift[finite]).all()
