"""One FFT per release, powers, one inverse FFT: values and the certified entry error."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft

from accountant.buckets.fft_power import FFT_CONSTANT, power_spectrum


def _exact_power(parts: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Linear convolution of the copies in long double (the reference)."""
    result = np.ones(1, dtype=np.longdouble)
    for values, times in parts:
        for _ in range(times):
            result = np.convolve(result, values.astype(np.longdouble))
    return result


@pytest.mark.parametrize("seed", range(6))
def test_powers_match_long_double_convolutions_within_the_certified_error(seed):
    rng = np.random.default_rng(seed)
    parts = [(rng.random(rng.integers(3, 9)) ** 6, int(rng.integers(1, 40))) for _ in range(2)]
    parts = [(v / v.sum(), n) for v, n in parts]
    exact = _exact_power(parts)
    size = scipy.fft.next_fast_len(exact.size, real=True)
    powered = power_spectrum(parts, size)
    error = np.abs(powered.masses[: exact.size].astype(np.longdouble) - exact)
    assert float(error.max()) <= powered.entry_error
    assert (powered.masses[exact.size :] <= powered.entry_error).all()  # nothing wraps
    # the bound is honest but not absurd: within a few orders of the observed error
    assert powered.entry_error < 1e-11


def test_the_fft_constant_covers_long_double_references():
    """The componentwise bound c u (log2 N + 1) |x|_1 against long-double FFTs."""
    rng = np.random.default_rng(1)
    u = 2.0**-53
    for size in (4096, 65536, 1 << 20, 3 * (1 << 18), 1000003):
        x = rng.random(size) ** 8
        x /= x.sum()
        observed = np.max(np.abs(scipy.fft.rfft(x) - scipy.fft.rfft(x.astype(np.longdouble))))
        assert float(observed) <= 0.1 * FFT_CONSTANT * u * (math.log2(size) + 1) * x.sum()


def test_a_composition_by_powers_bounds_every_entry_and_coarsening_keeps_it():
    from accountant import WorstCasePair
    from accountant.buckets.coarsen import coarsen
    from accountant.buckets.rounded_plan import RoundedPlan, compose_releases
    from accountant.buckets.rounding import round_to_lattice
    from accountant.pairs.pld import privacy_loss_distribution

    pair = WorstCasePair.from_arrays([0.30, 0.35, 0.35], [0.29, 0.357, 0.353])
    single = round_to_lattice(privacy_loss_distribution(pair, "A/B"), 1e-3, 0.0, 1e-30)
    plan = RoundedPlan.build(lambda index: single, [500], 1e-30, 1 << 22)
    composed = compose_releases(plan, lambda index: single)
    assert composed is not None and math.isfinite(composed.entry_error)
    assert composed.error_a >= composed.entry_error  # the norm bound covers one entry
    counted = 10
    assert composed.absolute_error(counted) == counted * composed.entry_error
    assert composed.absolute_error(counted) < math.sqrt(counted) * composed.error_a
    assert coarsen(composed).entry_error == 2.0 * composed.entry_error
    assert math.isclose(float(composed.mass_a.sum()), 1.0, rel_tol=1e-9)


def test_a_release_with_no_finite_outcome_composes_to_nothing_without_a_warning():
    # disjoint supports: every A-mass is distinguishing, the rounded release is all zeros
    powered = power_spectrum([(np.zeros(5), 200)], 1024)
    assert not powered.masses.any() and powered.entry_error == 0.0
