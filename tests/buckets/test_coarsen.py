"""Coarsening keeps every loss inside its bucket's interval and every bound certified."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
    PrivacyBuckets,
    WorstCasePair,
    noise,
    privacy_loss_distribution,
)
from accountant.buckets.bucketed import bucket_pld
from accountant.buckets.coarsen import coarsen, coarsen_to
from tests import brute_force


@pytest.mark.parametrize("anchor", [0.0, 0.013, -0.4])
def test_coarsened_intervals_still_contain_every_loss(anchor):
    pair = WorstCasePair.from_arrays([0.1, 0.2, 0.3, 0.25, 0.15], [0.3, 0.1, 0.2, 0.15, 0.25])
    pld = privacy_loss_distribution(pair)
    fine = bucket_pld(pld, 0.05, anchor, 0.0)
    for times in range(1, 4):
        coarse = coarsen(fine) if times == 1 else coarsen_to(fine, fine.width * 2**times)
        assert coarse.width == pytest.approx(fine.width * 2**times)
        low, high = coarse.edges()
        index = np.ceil((pld.losses - anchor) / fine.width - 1e-6).astype(int)
        for loss, j in zip(pld.losses, index, strict=True):
            # the coarse bucket that received fine bucket j
            slot = -((-j) // 2**times) - coarse.first_index
            assert low[slot] <= loss <= high[slot]
        assert coarse.mass_a.sum() == pytest.approx(fine.mass_a.sum(), rel=1e-15)
        assert coarse.mass_b.sum() == pytest.approx(fine.mass_b.sum(), rel=1e-15)


@pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")
def test_forced_coarsening_stays_sound():
    # Generic (non-lattice) losses and a tiny budget: coarsening in mid-composition.
    pair = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.17, 0.31, 0.29, 0.23])
    tight = PrivacyBuckets(accuracy=1e-9, max_buckets=1024).compose(pair, times=6)
    for eps in (0.0, 0.3, 1.0, 2.0):
        exact = max(
            brute_force.composed_adp_delta([(pair.a, pair.b, 6)], eps, d) for d in ("A/B", "B/A")
        )
        bounds = tight.delta(eps)
        assert bounds.lower <= exact * (1 + 1e-12) + 1e-300
        assert exact <= bounds.upper * (1 + 1e-12)


def test_coarsening_kicks_in_under_a_small_budget():
    pair = WorstCasePair.additive(noise.truncated_gaussian(3.0, 30.0, 0.05), 0.05)
    with pytest.warns(CertificationWarning):
        coarse = PrivacyBuckets(max_buckets=2048).compose(pair, times=64).delta(0.2)
    fine = PrivacyBuckets().compose(pair, times=64).delta(0.2)
    single = privacy_loss_distribution(pair)
    assert coarse.bucket_width > (single.losses[1] - single.losses[0]) * 1.5
    # both brackets are certified, so they must overlap, and the fine one is inside
    assert coarse.lower <= fine.lower <= fine.upper <= coarse.upper * (1 + 1e-12)


def test_compose_power_coarsens_to_the_size_limit_and_stays_sound():
    from accountant.buckets.bounds import adp_interval
    from accountant.buckets.convolution import compose_power

    pair = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.17, 0.31, 0.29, 0.23])
    single = bucket_pld(privacy_loss_distribution(pair), 0.01, 0.0, 0.0)
    composed = compose_power(single, 5, 1e-30, max_size=40)
    assert composed.size <= 40 and composed.width >= 4 * single.width
    for eps in (0.0, 0.4, 1.2):
        exact = brute_force.composed_adp_delta([(pair.a, pair.b, 5)], eps, "A/B")
        lower, upper, _ = adp_interval(composed, eps)
        assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)
