"""Compositions in two stages (issue 26): blocks composed at the first width, rounded onto a
coarser lattice by the dominating split (their merged counterparts merged onto it), composed
again. Both keep the A- and B-masses, so the brackets stay certified: checked against
exact trinomial compositions (``tests/buckets/test_rounding.py``), with the staging forced
on compositions small enough to enumerate."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

import accountant.buckets.engine as engine_module
import accountant.buckets.staged_plan as staged_module
from accountant import PrivacyBuckets
from accountant.buckets import release_cache
from accountant.buckets.rounding import round_coarser, round_to_lattice
from accountant.buckets.tails import LAMBDA_GRID, TailMoments
from accountant.errors import CertificationWarning
from accountant.mechanisms import SubsampledTruncatedGaussian
from accountant.pairs.pld import privacy_loss_distribution
from tests.buckets.test_rounding import PAIR, _exact, _log_space_delta


def _points(pld) -> np.ndarray:
    centre = 0.5 * (pld.offset_low + pld.offset_high)
    return centre + (pld.first_index + np.arange(pld.size)) * pld.width


@pytest.mark.parametrize("factor", [2, 4, 16])
@pytest.mark.parametrize("anchor", [0.0, 0.0013])
def test_a_coarser_lattice_keeps_both_masses_and_adds_its_width_squared(factor, anchor):
    """The dominating split onto the coarser lattice keeps the A-mass and the B-mass of every
    point (so the coarse pair dominates the fine one); the mean rises by at most ``W^2/8``;
    the merged counterpart keeps its A- and B-mass too."""
    fine = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 0.001, anchor, 0.0)
    coarse = round_coarser(fine, factor)
    assert coarse.width == fine.width * factor
    assert math.isclose(coarse.mass_a.sum(), fine.mass_a.sum(), rel_tol=1e-15)
    b_fine = math.fsum(fine.mass_a * np.exp(-_points(fine)))
    assert math.isclose(math.fsum(coarse.mass_a * np.exp(-_points(coarse))), b_fine, rel_tol=1e-13)
    mean_fine = float(np.dot(fine.mass_a, _points(fine)))
    mean_coarse = float(np.dot(coarse.mass_a, _points(coarse)))
    assert mean_fine - 1e-16 <= mean_coarse <= mean_fine + coarse.width**2 / 8 + 1e-16
    # every coarse point is a fine point: the lattice is a sub-lattice of the fine one
    offsets = (_points(coarse) - _points(fine)[0]) / fine.width
    np.testing.assert_allclose(offsets, np.round(offsets), atol=1e-9)
    assert coarse.hoeffding_variance >= fine.hoeffding_variance + coarse.width**2
    assert coarse.hoeffding_drift >= fine.hoeffding_drift + coarse.width**2 / 8
    assert coarse.relative_error > fine.relative_error
    np.testing.assert_allclose(
        np.log(coarse.mass_a[coarse.mass_a > 0] / coarse.mass_b[coarse.mass_a > 0]),
        _points(coarse)[coarse.mass_a > 0],
        atol=1e-12,
    )
    merged_fine, merged_coarse = fine.dominated, coarse.dominated
    assert math.isclose(merged_coarse.a.mass_a.sum(), merged_fine.a.mass_a.sum(), rel_tol=1e-15)
    b_merged = math.fsum(merged_fine.c.mass_a * np.exp(-_points(merged_fine.c)))
    b_coarse = math.fsum(merged_coarse.c.mass_a * np.exp(-_points(merged_coarse.c)))
    assert math.isclose(b_coarse, b_merged, rel_tol=1e-13)
    assert math.isclose(b_merged, math.fsum(PAIR.b), rel_tol=1e-13)


def test_a_coarser_lattice_raises_the_tail_moments_by_hoeffdings_lemma():
    fine = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 0.001, 0.0, 0.0)
    coarse = round_coarser(fine, 8)
    ((moments, count),) = coarse.tail_moments
    assert count == 1
    direct = TailMoments.of(coarse)
    # the moments given bound the coarse masses' own (both are upper bounds on ln E e^lL)
    finite = np.isfinite(direct.log_mgf_high) & (LAMBDA_GRID < 1e3)
    assert (moments.log_mgf_high[finite] >= direct.log_mgf_high[finite] - 1e-9).all()
    assert (moments.log_mgf_low[finite] >= direct.log_mgf_low[finite] - 1e-9).all()


def test_only_powers_of_two_are_factors():
    fine = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 0.001, 0.0, 0.0)
    with pytest.raises(ValueError, match="power of two"):
        round_coarser(fine, 3)
    assert round_coarser(fine, 1) is fine


def _forced(monkeypatch, target: int) -> None:
    """Stage every composition whose window exceeds ``target`` points."""
    monkeypatch.setattr(staged_module, "FFT_TARGET", target)


def _staged_plan(accountant: PrivacyBuckets, direction: str):
    plan = accountant._plan(direction, accountant._rung_width(direction, 0))
    assert plan is not None
    return plan


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["A/B", "B/A"])
def test_staged_brackets_contain_exact_trinomial_compositions(monkeypatch, direction):
    _forced(monkeypatch, 64)
    times = 150
    accountant = PrivacyBuckets(accuracy=1e-3).compose(PAIR, times)
    assert _staged_plan(accountant, direction).staged
    mpmath.mp.prec = 80
    for eps in (0.3, 0.8, 1.5):
        for kind, query in (("ADP", accountant.delta), ("PDP", accountant.delta_pdp)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificationWarning)
                bounds = query(eps, direction=direction)
            exact = _exact(times, eps, direction, kind)
            assert bounds.lower <= exact <= bounds.upper, (kind, eps, bounds, exact)


@pytest.mark.slow
def test_staged_brackets_of_five_thousand_releases_contain_the_exact_delta(monkeypatch):
    monkeypatch.setattr(engine_module, "ROUNDING_RELEASES", 4096)
    _forced(monkeypatch, 256)
    times = 5000
    accountant = PrivacyBuckets(accuracy=1e-3).compose(PAIR, times)
    plan = _staged_plan(accountant, "A/B")
    assert plan.staged and plan.factor > 1
    for eps in (3.0, 6.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificationWarning)
            bounds = accountant.delta(eps, direction="A/B")
        exact = _log_space_delta(times, eps)
        assert bounds.lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= bounds.upper
        assert (bounds.upper - bounds.lower) / bounds.upper < 5e-3


def test_staged_and_unstaged_dpsgd_brackets_overlap(monkeypatch):
    """Both are certified, so both contain the truth: they must intersect, and staging
    must not lose much (its variance share is bounded)."""
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.01, cut=math.inf)
    unstaged = PrivacyBuckets(accuracy=1e-3).compose(step, 3000).epsilon(1e-5)
    _forced(monkeypatch, 512)
    accountant = PrivacyBuckets(accuracy=1e-3).compose(step, 3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        staged = accountant.epsilon(1e-5)
    ran = accountant._for_target(1e-5)  # the accountant the eps query ran on
    assert any(plan.staged for plan in ran._memo.plans.values() if plan is not None)
    assert max(staged.lower, unstaged.lower) <= min(staged.upper, unstaged.upper)
    assert (staged.upper - staged.lower) / staged.upper < 2e-3


def test_of_the_plans_near_the_cheapest_the_largest_blocks_are_taken(monkeypatch):
    """The policy of the module note: every feasible block size is priced, and the largest
    one costing at most COST_SLACK times the cheapest wins."""
    monkeypatch.setattr(engine_module, "ROUNDING_RELEASES", 4096)
    _forced(monkeypatch, 256)
    accountant = PrivacyBuckets(accuracy=1e-3).compose(PAIR, 5000)
    plan = _staged_plan(accountant, "A/B")
    assert plan.staged
    whole = plan.whole
    choices = {
        size: staged_module._staged_choice(
            whole, list(plan.counts), size, plan.tail_mass, plan.max_buckets // 2
        )
        for size in staged_module._block_sizes(sum(plan.counts))
    }
    feasible = {size: choice for size, choice in choices.items() if choice is not None}
    assert len(feasible) >= 2
    cheapest = min(cost for cost, _, _ in feasible.values())
    affordable = [s for s, c in feasible.items() if c[0] <= staged_module.COST_SLACK * cheapest]
    assert plan.blocks == feasible[max(affordable)][1]
    assert max(affordable) > min(feasible)  # (the test would not tell sizes apart otherwise)


@pytest.mark.slow
def test_larger_blocks_carry_less_round_off_into_the_second_stage(monkeypatch):
    """Sigma 0.7, q 1e-4, 10^6 steps: in blocks of 64 the stages' round-off leaves the eps
    bracket at rel 7e-3; the blocks the plan takes give a bracket more than ten times
    narrower (rel 5e-4), and the two brackets, both certified, overlap."""
    step = SubsampledTruncatedGaussian(sigma=0.7, sampling_rate=1e-4, cut=math.inf)
    brackets = {}
    for name, sizes in (("small", lambda releases: [64]), ("chosen", staged_module._block_sizes)):
        monkeypatch.setattr(staged_module, "_block_sizes", sizes)
        release_cache.clear()  # (compositions are shared by key, which the plan is not part of)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificationWarning)
            brackets[name] = PrivacyBuckets().compose(step, 10**6).epsilon(1e-5)
    small, chosen = brackets["small"], brackets["chosen"]
    assert max(small.lower, chosen.lower) <= min(small.upper, chosen.upper)
    assert chosen.upper - chosen.lower < 0.1 * (small.upper - small.lower)
