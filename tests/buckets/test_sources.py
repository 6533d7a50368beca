"""Direct tests of ``accountant.buckets.sources``: the loss lattice of a PLD, its loss
statistics and tail-cut range, the span estimate of a composition, and ``PLDRelease``'s
two directions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accountant import WorstCasePair, noise, privacy_loss_distribution
from accountant.buckets.sources import (
    LossStatistics,
    PLDRelease,
    estimated_span,
    lattice_spacing,
    pld_statistics,
)


@given(
    st.floats(min_value=-50.0, max_value=50.0),
    st.floats(min_value=1e-4, max_value=3.0),
    st.lists(st.integers(min_value=0, max_value=400), min_size=2, max_size=40, unique=True),
)
def test_lattice_spacing_is_the_smallest_gap_when_the_losses_lie_on_it(start, spacing, steps):
    steps = sorted({*steps, steps[0] + 1})  # some two losses one step apart
    losses = np.array([start + s * spacing for s in steps])
    assert lattice_spacing(losses) == pytest.approx(spacing, rel=1e-6)


def test_lattice_spacing_edge_cases():
    assert lattice_spacing(np.array([0.3])) == 0.0
    assert lattice_spacing(np.array([0.3, 0.3])) == 0.0
    assert lattice_spacing(np.array([0.0, 1.0, math.sqrt(2.0)])) is None
    # on the lattice of 1 but not of their smallest gap 2: no lattice is claimed (the
    # engine then buckets without following one, never on a wrong lattice)
    assert lattice_spacing(np.array([0.0, 2.0, 5.0])) is None


def _pld():
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 5.0, 0.25), sensitivity=0.5)
    return privacy_loss_distribution(pair, "A/B")


def test_statistics_are_the_normalised_moments_and_the_tail_cut_range():
    pld = _pld()
    stats = pld_statistics(pld, 0.0)
    weights = pld.mass_a / pld.mass_a.sum()
    assert stats.mean == pytest.approx(float(weights @ pld.losses), rel=1e-12)
    assert stats.variance == pytest.approx(
        float(weights @ (pld.losses - stats.mean) ** 2), rel=1e-12
    )
    assert (stats.low, stats.high) == (pld.losses[0], pld.losses[-1])
    assert stats.anchor == pld.losses[np.argmax(pld.mass_a)]
    for tail_mass in (1e-6, 1e-3):
        cut = pld_statistics(pld, tail_mass)
        below = pld.mass_a[pld.losses < cut.low].sum()
        above = pld.mass_a[pld.losses > cut.high].sum()
        assert below <= tail_mass and above <= tail_mass  # each cut tail at most tail_mass
        assert pld.losses[0] <= cut.low <= cut.high <= pld.losses[-1]
    assert pld.losses[0] < cut.low and cut.high < pld.losses[-1]  # 1e-3 does cut both


def test_span_is_at_most_the_summed_ranges_plus_one_and_covers_the_widest():
    one = LossStatistics(mean=0.1, variance=0.04, low=-1.0, high=2.0, anchor=0.0, lattice=None)
    assert estimated_span([(one, 1)]) == pytest.approx(6.0)  # min(3, 24*0.2 + 3) + 3
    many = estimated_span([(one, 10_000)])
    assert many == pytest.approx(24.0 * math.sqrt(10_000 * 0.04) + 3.0 + 3.0)
    assert many < 10_000 * 3.0


def test_pld_release_directions_and_symmetry():
    release = PLDRelease(_pld(), "test")
    ab = release.statistics("A/B", 0.0)
    ba = release.statistics("B/A", 0.0)
    assert release.same_directions()  # an additive Gaussian shift is symmetric
    assert ab.mean == pytest.approx(ba.mean, rel=1e-9)
    subsampled = WorstCasePair.subsampled(noise.truncated_gaussian(1.0, 8.0, 0.25), 0.1, 1.0)
    asymmetric = PLDRelease(privacy_loss_distribution(subsampled, "A/B"))
    assert not asymmetric.same_directions()
