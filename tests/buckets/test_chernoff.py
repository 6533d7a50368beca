"""Chernoff estimates before any rendering (``accountant.buckets.chernoff``, issue 26): a
subsampled Gaussian's estimated log-moment-generating function agrees with the moments of its
rendered release, and the engine chooses its first width from it without rendering a release
at a coarse width first."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accountant import PrivacyBuckets, mechanisms
from accountant.buckets import chernoff
from accountant.buckets.tails import LAMBDA_GRID
from accountant.mechanisms import subsampled_gaussian_release


@pytest.mark.parametrize("direction", ["A/B", "B/A"])
@pytest.mark.parametrize(
    ("sigma", "q", "cut"), [(1.0, 0.01, 8.0), (0.6, 0.2, math.inf), (2.0, 1.0, 4.0)]
)
def test_estimated_log_mgf_agrees_with_the_rendered_moments(sigma, q, cut, direction):
    """Up to ``lambda = 3.5`` the estimate lies within a few percent of the upper tail moments
    of the release rendered on a fine lattice (which add the rounding, at most ``lambda^2
    w^2 / 8`` per release, and leave out the tails beyond the release's range, which the
    estimate keeps: at larger ``lambda`` they decide it)."""
    release = mechanisms.SubsampledTruncatedGaussian(
        sigma=sigma, sampling_rate=q, cut=cut
    ).bucket_release()
    estimate = release.estimated_log_mgf(direction)
    rendered = release.lattice(direction, 1e-4, 0.0, 1e-15).tail_moments[0][0].log_mgf_high
    small = LAMBDA_GRID <= 3.5
    rounding = LAMBDA_GRID[small] ** 2 * 1e-8 / 8.0 + 1e-9
    scale = np.maximum(np.abs(rendered[small]), 1e-6)
    assert (np.abs(estimate[small] - rendered[small]) <= 0.03 * scale + rounding).all()


def test_chernoff_eps_of_a_gaussian_moment_function():
    """For ``H(lambda) = lambda^2 s^2 / 2 + lambda m`` (a normal loss) the Chernoff eps at
    delta is ``m + s sqrt(2 ln(1/delta))`` and its slope ``sqrt(2 ln(1/delta)) / s``, to the
    grid's resolution."""
    m, s, delta = 3.0, 2.0, 1e-6
    high = 0.5 * LAMBDA_GRID**2 * s * s + LAMBDA_GRID * m
    root = math.sqrt(2.0 * math.log(1.0 / delta))
    assert chernoff.chernoff_eps(high, delta) == pytest.approx(m + s * root, rel=2e-3)
    assert chernoff.chernoff_slope(high, delta) == pytest.approx(root / s, rel=0.11)
    assert chernoff.eps_slope(high, m + s * root) == pytest.approx(root / s, rel=0.11)
    assert chernoff.eps_slope(high, 0.5 * m) == 0.0  # below the mean: no bound below 1


def test_the_first_width_is_chosen_without_rendering_a_coarse_release(monkeypatch):
    """An eps query of releases that estimate their moments renders every release only at
    widths it composes (no coarse estimate pass), and still reaches its accuracy."""
    rendered = []
    original = subsampled_gaussian_release.lattice_release

    def counting(part, atoms, direction, width, *args, **kwargs):
        rendered.append((direction, width))
        return original(part, atoms, direction, width, *args, **kwargs)

    monkeypatch.setattr(subsampled_gaussian_release, "lattice_release", counting)
    steps = [
        mechanisms.SubsampledTruncatedGaussian(sigma=s, sampling_rate=0.01, cut=8.0)
        for s in (0.9, 1.1, 1.3)
    ]
    accountant = PrivacyBuckets(accuracy=1e-3)
    for step in steps:
        accountant = accountant.compose(step, 100)
    bounds = accountant.epsilon(1e-5)
    assert (bounds.upper - bounds.lower) / bounds.upper <= 1e-3
    composed = {(d, w) for d, w in rendered}
    # each (direction, width) rendered is one the query composed at: every release at it
    assert all(rendered.count(key) == len(steps) for key in composed)
    assert len(composed) <= 2 * 2  # at most two rungs per direction


def test_no_slope_above_every_loss_the_moments_allow():
    """A Gaussian moment function has a slope at every eps; a bounded one (losses at most 2)
    has none above its top: the bound still falls at the grid's end there."""
    gaussian = 0.5 * LAMBDA_GRID * (LAMBDA_GRID + 1.0) * 0.04
    assert chernoff.eps_slope(gaussian, 1.0) > 0.0
    bounded = LAMBDA_GRID * 2.0  # ln E e^{lambda L} <= 2 lambda: every loss at most 2
    assert chernoff.eps_slope(bounded, 3.0) == 0.0


def test_a_delta_query_above_one_directions_losses_renders_no_finer_width():
    """Sigma 1.44, q 0.25, 8 releases, accuracy 0.05: the A/B losses end below 2.31, so at
    eps 3 its delta is 0. The aim read the grid's end as that direction's slope and rendered
    its releases 300 times finer than the starting width (6 s, 2 million entries); no width
    of the query is now finer than the starting one's."""
    step = mechanisms.SubsampledTruncatedGaussian(sigma=1.44, sampling_rate=0.25, cut=math.inf)
    accountant = PrivacyBuckets(accuracy=0.05).compose(step, 8)
    bounds = accountant.delta(3.0)
    assert 0.0 < bounds.lower <= bounds.upper <= bounds.lower * 1.05
    starts = min(accountant._start(d).width for d in ("A/B", "B/A"))
    widths = {width for _, width, _ in accountant._memo.composed}
    assert widths and min(widths) >= starts / 2, (widths, starts)
