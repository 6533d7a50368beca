"""Tilted compositions of rounded releases (issue 12): every entry within its own certified
error of the exact convolution, deltas far below the FFT's round-off floor bracketed
against exact trinomial sums, and eps at such deltas.

References: long-double convolutions of the stored rounded masses (entry by entry), and the
float64 log-space trinomial sums of :mod:`tests.buckets.test_rounding` (accurate to ~1e-11
relative at n = 5000, whatever the size of the delta).
"""

from __future__ import annotations

import math
import warnings

import attrs
import numpy as np
import pytest
from scipy.optimize import brentq

import accountant.buckets.engine as engine_module
from accountant import PrivacyBuckets
from accountant.buckets import merged_lattice, release_summary
from accountant.buckets.bounds import adp_interval, adp_upper
from accountant.buckets.release_summary import ReleaseSummary
from accountant.buckets.rounded_plan import RoundedPlan, compose_releases
from accountant.buckets.rounding import round_to_lattice
from accountant.errors import CertificationWarning
from accountant.pairs.pld import privacy_loss_distribution
from tests.buckets.test_rounding import PAIR, _log_space_delta


def _exact_composition(masses: np.ndarray, times: int) -> np.ndarray:
    """``times``-fold linear convolution in long double, by repeated squaring."""
    result = np.ones(1, dtype=np.longdouble)
    power = masses.astype(np.longdouble)
    while times:
        if times & 1:
            result = np.convolve(result, power)
        times >>= 1
        if times:
            power = np.convolve(power, power)
    return result


@pytest.mark.parametrize("tilt", [0.0, 5.0, 40.0, 200.0])
def test_every_tilted_entry_is_within_its_certified_error(tilt):
    single = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 2e-3, 0.0, 0.0)
    times = 120
    plan = RoundedPlan.build(lambda index: single, [times], 0.0, 1 << 22)
    composed = plan.compose(lambda index: (single.mass_a, single.entry_errors), tilt)
    exact = _exact_composition(single.mass_a, times)
    offset = composed.first_index - times * single.first_index
    window = exact[offset : offset + composed.size]
    errors = composed.entry_errors if tilt else np.full(composed.size, composed.entry_error)
    gap = np.abs(composed.mass_a.astype(np.longdouble) - window)
    allowed = composed.relative_error * window + errors.astype(np.longdouble)
    assert (gap <= allowed).all(), float(np.max(gap - allowed))
    if tilt >= 40.0:
        # where the tilted law peaks the masses are tiny: the untilted certified error says
        # nothing there, the tilted one is a small fraction of the entry
        untilted = plan.compose(lambda index: (single.mass_a, single.entry_errors), 0.0)
        logs = np.log(np.maximum(window, 1e-300).astype(float))
        peak = int(np.argmax(logs + tilt * single.width * np.arange(composed.size)))
        assert float(window[peak]) < 1e-20 < untilted.entry_error * 1e5
        assert errors[peak] < 1e-9 * float(window[peak])


def _with_entry_errors(single, errors):
    return attrs.evolve(
        single,
        entry_errors=errors,
        entry_error=float(np.max(errors)),
        error_a=float(np.linalg.norm(errors)) * (1.0 + 1e-12),
    )


@pytest.mark.parametrize("tilt", [0.0, 40.0])
def test_entry_errors_small_beside_their_masses_compose_as_a_relative_error(monkeypatch, tilt):
    """Entry errors of 3e-13 of their masses (one entry with an absolute error 1e3 times its
    mass): every composed entry is within its certified error of the exact composition of
    true masses anywhere inside those errors, and the composition's absolute errors are
    those of error-free releases (the FFT's), where carried as absolute they are several
    times larger."""
    single = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 2e-3, 0.0, 0.0)
    errors = 3e-13 * single.mass_a
    odd = int(np.argmin(single.mass_a))
    errors[odd] = 1e3 * single.mass_a[odd]
    noisy = _with_entry_errors(single, errors)
    signs = np.random.default_rng(7).choice([-1.0, 1.0], size=single.size)
    true = np.maximum(single.mass_a + signs * errors, 0.0)
    summary = ReleaseSummary.of(noisy)
    assert 3e-13 <= summary.share < 3.1e-13
    assert summary.relative_error >= single.relative_error + 3e-13
    assert summary.input_error == pytest.approx(errors[odd], rel=1e-9)

    times = 120
    plan = RoundedPlan.build(lambda index: noisy, [times], 0.0, 1 << 22)
    composed = plan.compose(lambda index: (noisy.mass_a, noisy.entry_errors), tilt)
    exact = _exact_composition(true, times)
    offset = composed.first_index - times * single.first_index
    window = exact[offset : offset + composed.size]
    recast = composed.entry_errors if tilt else np.full(composed.size, composed.entry_error)
    gap = np.abs(composed.mass_a.astype(np.longdouble) - window)
    allowed = composed.relative_error * window + recast.astype(np.longdouble)
    assert (gap <= allowed).all(), float(np.max(gap - allowed))

    monkeypatch.setattr(release_summary, "RELATIVE_SHARE", 0.0)  # nothing recast
    kept = RoundedPlan.build(lambda index: noisy, [times], 0.0, 1 << 22)
    assert ReleaseSummary.of(noisy).share == 0.0
    absolute = kept.compose(lambda index: (noisy.mass_a, noisy.entry_errors), tilt)
    clean_plan = RoundedPlan.build(lambda index: single, [times], 0.0, 1 << 22)
    clean = clean_plan.compose(lambda index: (single.mass_a, single.entry_errors), tilt)
    if tilt:  # compared where the tilted law peaks (the errors at the far ends are capped)
        logs = np.log(np.maximum(window, 1e-300).astype(float))
        peak = int(np.argmax(logs + tilt * single.width * np.arange(composed.size)))
        errors_of = [c.entry_errors[peak] for c in (composed, absolute, clean)]
    else:
        errors_of = [c.entry_error for c in (composed, absolute, clean)]
    assert errors_of[0] <= 1.5 * errors_of[2]
    assert errors_of[1] >= 5.0 * errors_of[2]


def test_the_tilt_follows_the_eps_queried():
    single = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 2e-3, 0.0, 0.0)
    plan = RoundedPlan.build(lambda index: single, [1000], 1e-30, 1 << 22)
    tilts = [plan.tilt_for_eps(eps) for eps in (-5.0, 1.0, 6.0, 10.0)]
    assert tilts[0] == 0.0  # below the bulk: no tilt
    assert tilts == sorted(tilts) and tilts[-1] > tilts[1] > 0.0
    assert plan.tilt_for_eps(1e6) == 0.0  # above every composed loss: nothing to resolve
    assert plan.tilt_for_delta(1e-30) > plan.tilt_for_delta(1e-5) > 0.0


@pytest.mark.slow
@pytest.mark.parametrize(("eps", "tail_mass"), [(10.0, 1e-24), (14.0, 1e-24), (20.0, 1e-45)])
def test_deltas_far_below_the_round_off_floor_bracket_the_exact_sums(monkeypatch, eps, tail_mass):
    """5,000 rounded releases: delta 6e-9, 2e-16 and 4e-32 (the untilted FFT's certified
    round-off is ~1e-13 per entry), each bracketed and to well under 1% of itself."""
    monkeypatch.setattr(engine_module, "ROUNDING_RELEASES", 64)
    times = 5000
    accountant = PrivacyBuckets(accuracy=1e-3, tail_mass=tail_mass).compose(PAIR, times)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        bounds = accountant.delta(eps, direction="A/B")
    exact = _log_space_delta(times, eps)
    assert bounds.lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= bounds.upper
    assert (bounds.upper - bounds.lower) / bounds.upper < 5e-3


@pytest.mark.slow
def test_eps_at_delta_1e_15_brackets_the_exact_eps(monkeypatch):
    monkeypatch.setattr(engine_module, "ROUNDING_RELEASES", 64)
    times = 5000
    exact = brentq(lambda e: math.log(_log_space_delta(times, e)) - math.log(1e-15), 8.0, 20.0)
    accountant = PrivacyBuckets(accuracy=1e-3).compose(PAIR, times)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        bounds = accountant.epsilon(1e-15, direction="A/B")
    assert bounds.lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= bounds.upper
    assert (bounds.upper - bounds.lower) / bounds.upper < 1e-3


def test_the_upper_end_alone_does_not_sum_the_merged_counterpart(monkeypatch):
    """``adp_upper`` is ``adp_interval``'s upper end, without reading the merged (lower-bound)
    composition at all."""
    single = round_to_lattice(privacy_loss_distribution(PAIR, "A/B"), 2e-3, 0.0, 0.0)
    plan = RoundedPlan.build(lambda index: single, [200], 1e-30, 1 << 22)
    composed = compose_releases(plan, lambda index: single, 0.0)
    assert composed.dominated is not None
    uppers = [adp_interval(composed, eps)[1] for eps in (0.5, 2.0, 4.0)]

    def refuse(*args, **kwargs):
        raise AssertionError("the merged counterpart was summed")

    monkeypatch.setattr(merged_lattice.MergedLattice, "lower", refuse)
    assert [adp_upper(composed, eps) for eps in (0.5, 2.0, 4.0)] == uppers
    assert min(uppers) > 0.0
